//! Where a command's data lives and how the device reaches it.
//!
//! - [`Placement`]: host memory, or GPU memory reached **peer to peer**
//!   (the device's PRPs point into the GPU's BAR behind a PCIe switch) or
//!   through a **bounce** buffer in host memory (a copy on the GPU's link
//!   before the device reads, or after it writes).
//! - [`HostBuf`]: page-aligned host memory for the transport whose data
//!   the kernel maps through the passthrough ioctls: a buffer that starts
//!   on a page boundary spans the fewest pages, which is what the kernel's
//!   per-command page limit counts.
//! - [`DmaStats`]: the bytes each path moved, so that a run says how much
//!   went through host DRAM and how much did not.
//!
//! Which transport offers which path:
//!
//! | transport | host memory | GPU memory |
//! | --- | --- | --- |
//! | [`crate::transport::SimTransport`] | modelled host DRAM | modelled GPU window: peer to peer, or bounce (both timed) |
//! | `LinuxNvme` (ioctls) | [`HostBuf`] (the kernel pins the pages) | bounce only: the kernel's passthrough maps user pages with `get_user_pages`, which GPU memory is not; see `instinfer_gpu::report` |
//! | `UringNvme` | its own buffers, held while in flight (the kernel pins the pages) | bounce only, as above |
//! | `VfioNvme` | its IOMMU-mapped DMA block | bounce only: `VFIO_IOMMU_MAP_DMA` pins user pages too; importing a dma-buf needs iommufd's file mapping, not in the kernels this was run on |
//! | `NvmeTcp`, `LinkTransport`, `QemuTransport` | bytes on a stream | not applicable (no DMA across the fabric or link) |

use bytemuck::{Pod, Zeroable};

/// Where a command's data lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// Host memory.
    #[default]
    Host,
    /// GPU memory, reached as `GpuPath` says.
    Gpu(GpuPath),
}

/// How the device reaches GPU memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuPath {
    /// Peer-to-peer DMA through the PCIe switch: no host DRAM traffic.
    PeerToPeer,
    /// A copy through a host buffer on the GPU's link.
    Bounce,
}

impl Placement {
    /// `host`, `gpu-p2p` or `gpu-bounce`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "host" => Ok(Self::Host),
            "gpu-p2p" => Ok(Self::Gpu(GpuPath::PeerToPeer)),
            "gpu-bounce" => Ok(Self::Gpu(GpuPath::Bounce)),
            _ => Err(format!("{s:?}: host, gpu-p2p or gpu-bounce")),
        }
    }

    /// The name [`Placement::parse`] takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Gpu(GpuPath::PeerToPeer) => "gpu-p2p",
            Self::Gpu(GpuPath::Bounce) => "gpu-bounce",
        }
    }
}

/// Bytes moved per path (device DMA and host-side copies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaStats {
    /// Bytes the device moved to or from host DRAM (data, and the SQEs,
    /// CQEs and PRP lists that always live there).
    pub device_host_dram_bytes: u64,
    /// Bytes the device moved to or from GPU memory, peer to peer.
    pub p2p_bytes: u64,
    /// Bytes copied between GPU memory and host DRAM for bounces.
    pub bounce_bytes: u64,
    /// Bounce copies made.
    pub bounce_copies: u64,
    /// Virtual time the bounce copy engine was busy, ns (simulated only).
    pub bounce_busy_ns: u64,
}

impl std::ops::Add for DmaStats {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            device_host_dram_bytes: self.device_host_dram_bytes + o.device_host_dram_bytes,
            p2p_bytes: self.p2p_bytes + o.p2p_bytes,
            bounce_bytes: self.bounce_bytes + o.bounce_bytes,
            bounce_copies: self.bounce_copies + o.bounce_copies,
            bounce_busy_ns: self.bounce_busy_ns + o.bounce_busy_ns,
        }
    }
}

impl std::ops::Sub for DmaStats {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self {
            device_host_dram_bytes: self.device_host_dram_bytes - o.device_host_dram_bytes,
            p2p_bytes: self.p2p_bytes - o.p2p_bytes,
            bounce_bytes: self.bounce_bytes - o.bounce_bytes,
            bounce_copies: self.bounce_copies - o.bounce_copies,
            bounce_busy_ns: self.bounce_busy_ns - o.bounce_busy_ns,
        }
    }
}

/// One page of a [`HostBuf`].
#[repr(C, align(4096))]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Page([u8; 4096]);

/// Page-aligned host memory of a given length (zeroed).
#[derive(Clone)]
pub struct HostBuf {
    pages: Vec<Page>,
    len: usize,
}

impl std::fmt::Debug for HostBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostBuf({} B in {} pages)", self.len, self.pages.len())
    }
}

impl HostBuf {
    /// `len` zeroed bytes starting on a page boundary.
    pub fn zeroed(len: usize) -> Self {
        Self {
            pages: vec![Page([0; 4096]); len.div_ceil(4096)],
            len,
        }
    }

    /// A page-aligned copy of `data`.
    pub fn from_slice(data: &[u8]) -> Self {
        let mut b = Self::zeroed(data.len());
        b.as_mut_slice().copy_from_slice(data);
        b
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &bytemuck::cast_slice::<Page, u8>(&self.pages)[..self.len]
    }

    /// The bytes, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut::<Page, u8>(&mut self.pages)[..self.len]
    }

    /// Pages spanned (what the kernel's per-command page limit counts).
    pub fn pages(&self) -> usize {
        self.pages.len()
    }

    /// Into a `Vec` (a copy).
    pub fn to_vec(&self) -> Vec<u8> {
        self.as_slice().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_buffers_are_page_aligned_and_exact() {
        for len in [0usize, 1, 4095, 4096, 4097, 1 << 20] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let b = HostBuf::from_slice(&data);
            assert_eq!(b.as_slice(), &data[..]);
            assert_eq!(b.pages(), len.div_ceil(4096));
            assert_eq!(b.as_slice().as_ptr() as usize % 4096, 0, "{len}");
        }
    }

    #[test]
    fn placements_parse() {
        for p in [
            Placement::Host,
            Placement::Gpu(GpuPath::PeerToPeer),
            Placement::Gpu(GpuPath::Bounce),
        ] {
            assert_eq!(Placement::parse(p.name()), Ok(p));
        }
        assert!(Placement::parse("gpu").is_err());
    }
}
