//! VFIO's ioctls, the BAR mapping, and DMA memory: the `unsafe` of the
//! VFIO driver, each block with its reason.
#![allow(unsafe_code)] // VFIO ioctls, the BAR mapping and DMA memory

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};

/// `_IO(VFIO_TYPE, VFIO_BASE + n)` with `VFIO_TYPE` = ';'.
const fn vio(n: u32) -> u32 {
    (b';' as u32) << 8 | (100 + n)
}

pub(crate) const GET_API_VERSION: u32 = vio(0);
pub(crate) const CHECK_EXTENSION: u32 = vio(1);
pub(crate) const SET_IOMMU: u32 = vio(2);
pub(crate) const GROUP_GET_STATUS: u32 = vio(3);
pub(crate) const GROUP_SET_CONTAINER: u32 = vio(4);
pub(crate) const GROUP_GET_DEVICE_FD: u32 = vio(6);
pub(crate) const DEVICE_GET_REGION_INFO: u32 = vio(8);
pub(crate) const IOMMU_MAP_DMA: u32 = vio(13);
/// `VFIO_TYPE1v2_IOMMU`.
pub(crate) const TYPE1V2: u64 = 3;
/// `VFIO_PCI_CONFIG_REGION_INDEX`.
pub(crate) const CONFIG_REGION: u32 = 7;

/// `struct vfio_group_status`.
#[repr(C)]
#[derive(Default)]
pub(crate) struct GroupStatus {
    pub argsz: u32,
    pub flags: u32,
}

/// `struct vfio_region_info`.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct RegionInfo {
    pub argsz: u32,
    pub flags: u32,
    pub index: u32,
    pub cap_offset: u32,
    pub size: u64,
    pub offset: u64,
}

/// `struct vfio_iommu_type1_dma_map`.
#[repr(C)]
pub(crate) struct DmaMap {
    pub argsz: u32,
    pub flags: u32,
    pub vaddr: u64,
    pub iova: u64,
    pub size: u64,
}

const _: () = assert!(core::mem::size_of::<RegionInfo>() == 32);
const _: () = assert!(core::mem::size_of::<DmaMap>() == 32);

/// `ioctl(fd, req, arg)` with an integer argument.
pub(crate) fn ioctl_val(fd: &impl AsRawFd, req: u32, arg: u64) -> std::io::Result<i32> {
    // SAFETY: these VFIO requests take an integer (or nothing) and touch
    // no memory of ours.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), req as libc::Ioctl, arg as libc::c_ulong) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `ioctl(fd, req, &mut T)`.
pub(crate) fn ioctl_ptr<T>(fd: &impl AsRawFd, req: u32, arg: &mut T) -> std::io::Result<i32> {
    // SAFETY: `arg` is the request's kernel structure (layouts asserted
    // above), exclusively borrowed for the call.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), req as libc::Ioctl, core::ptr::from_mut(arg)) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `VFIO_GROUP_SET_CONTAINER`: takes a pointer to the container's fd.
pub(crate) fn set_container(group: &File, container: &File) -> std::io::Result<()> {
    let mut fd: i32 = container.as_raw_fd();
    ioctl_ptr(group, GROUP_SET_CONTAINER, &mut fd).map(|_| ())
}

/// `VFIO_GROUP_GET_DEVICE_FD`: the device named `bdf` (a C string).
pub(crate) fn device_fd(group: &File, bdf: &std::ffi::CStr) -> std::io::Result<File> {
    // SAFETY: the request reads the NUL-terminated name and returns a new
    // fd, which we own from here on.
    let r = unsafe {
        libc::ioctl(
            group.as_raw_fd(),
            GROUP_GET_DEVICE_FD as libc::Ioctl,
            bdf.as_ptr(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `r` is a fresh fd returned by the kernel for us alone.
    Ok(unsafe { File::from_raw_fd(r) })
}

/// A shared mapping of `len` bytes of `fd` at `offset` (a BAR), or of
/// anonymous memory when `fd` is `None` (DMA buffers).
pub(crate) struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory (or MMIO) owned by one `Mapping`;
// moving it between threads moves that ownership.
unsafe impl Send for Mapping {}

impl Mapping {
    pub(crate) fn new(fd: Option<&File>, offset: u64, len: usize) -> std::io::Result<Self> {
        let (flags, raw) = match fd {
            Some(f) => (libc::MAP_SHARED, f.as_raw_fd()),
            None => (libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1),
        };
        // SAFETY: a fresh mapping chosen by the kernel (no fixed address),
        // of a file we hold open or of anonymous memory.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                raw,
                offset as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self {
            ptr: ptr.cast(),
            len,
        })
    }

    pub(crate) fn addr(&self) -> u64 {
        self.ptr as u64
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// A 32-bit register at `off` (MMIO: volatile).
    pub(crate) fn read32(&self, off: usize) -> u32 {
        assert!(off + 4 <= self.len, "register {off:#x} past the mapping");
        // SAFETY: inside the mapping (checked), 4-byte aligned register.
        unsafe { core::ptr::read_volatile(self.ptr.add(off).cast::<u32>()) }
    }

    pub(crate) fn write32(&self, off: usize, v: u32) {
        assert!(off + 4 <= self.len, "register {off:#x} past the mapping");
        // SAFETY: as in `read32`.
        unsafe { core::ptr::write_volatile(self.ptr.add(off).cast::<u32>(), v) }
    }

    /// Copies `data` into the mapping at `off`.
    pub(crate) fn put(&self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.len, "copy past the mapping");
        // SAFETY: in bounds (checked); the device only reads this memory
        // while a command we issued is outstanding, and we write it before.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(off), data.len()) }
    }

    /// Copies from the mapping at `off` into `out` (volatile: the device
    /// writes this memory).
    pub(crate) fn get(&self, off: usize, out: &mut [u8]) {
        assert!(off + out.len() <= self.len, "copy past the mapping");
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: in bounds (checked).
            *b = unsafe { core::ptr::read_volatile(self.ptr.add(off + i)) };
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `new` mapped, once.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}
