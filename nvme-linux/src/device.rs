//! [`Device`]: one NVMe controller and one of its namespaces, reached
//! through the kernel's passthrough ioctls.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use proto::Sqe;

use crate::NvmeError;
use crate::cmd::{NVME_IOCTL_ADMIN_CMD, NVME_IOCTL_IO_CMD, PassthruCmd};
use crate::sys;

/// The kernel's largest passthrough transfer from any user buffer: it maps
/// the buffer's pages as segments, at most 127 of them on QEMU's controller
/// (508 KiB), and a buffer that does not start on a page boundary spans one
/// page more than its length, so 126 pages (504 KiB) always fit. (Found in
/// the guest test: a 508 KiB chunk of a buffer off a page boundary gets
/// EINVAL.)
pub const KERNEL_MAX_TRANSFER: usize = 504 << 10;

/// The data phase of a command.
#[derive(Debug)]
pub enum Data<'a> {
    /// None.
    None,
    /// Host to device.
    Out(&'a [u8]),
    /// Device to host.
    In(&'a mut [u8]),
}

impl Data<'_> {
    /// Bytes the data phase moves.
    pub fn len(&self) -> usize {
        match self {
            Data::None => 0,
            Data::Out(b) => b.len(),
            Data::In(b) => b.len(),
        }
    }

    /// No data phase (or an empty one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What came back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The NVMe status field (SCT, SC, DNR…; 0 = success).
    pub status: u16,
    /// Completion dword 0.
    pub dw0: u32,
}

/// What moves one passthrough command: the kernel's ioctls ([`Device`]),
/// or anything else that takes the same command and buffer (a simulated
/// device in tests). `cmd.addr` and `cmd.data_len` are set from `data` by
/// the implementation; it returns the completion.
pub trait Passthru {
    /// Runs `cmd` (admin or I/O) with `data`.
    fn passthru(
        &mut self,
        admin: bool,
        cmd: &mut PassthruCmd,
        data: Data<'_>,
    ) -> Result<Completion, NvmeError>;
    /// Bytes one command may move.
    fn max_transfer(&self) -> usize;
    /// The namespace id of I/O commands that carry none.
    fn nsid(&self) -> u32;
    /// The timeout every command carries, ms (see [`COMMAND_TIMEOUT_MS`]).
    fn timeout_ms(&self) -> u32 {
        COMMAND_TIMEOUT_MS
    }
}

/// The timeout every passthrough command carries (`timeout_ms` of the
/// kernel's command structure), ms. The kernel's NVMe driver aborts a
/// command that has not completed by then, resets the controller if the
/// abort fails, and the call returns with an error status: a stuck drive
/// does not hang its host. 30 s is the driver's default for I/O; admin
/// commands get the same bound here instead of its 60 s.
pub const COMMAND_TIMEOUT_MS: u32 = 30_000;

/// A controller (`/dev/nvmeX`) and a namespace of it.
#[derive(Debug)]
pub struct Device {
    ctrl: File,
    ns: File,
    nsid: u32,
    path: PathBuf,
    max_transfer: usize,
    timeout_ms: u32,
}

fn io_err(what: impl Into<String>, source: std::io::Error) -> NvmeError {
    NvmeError::Io {
        what: what.into(),
        source,
    }
}

/// `/dev/nvme0n1` or `/dev/ng0n1` → `/dev/nvme0`.
pub fn controller_of(ns: &Path) -> Option<PathBuf> {
    let name = ns.file_name()?.to_str()?;
    let rest = name
        .strip_prefix("nvme")
        .or_else(|| name.strip_prefix("ng"))?;
    let (ctrl, nsn) = rest.split_once('n')?;
    if ctrl.is_empty() || !ctrl.bytes().all(|b| b.is_ascii_digit()) || nsn.is_empty() {
        return None;
    }
    Some(ns.with_file_name(format!("nvme{ctrl}")))
}

impl Device {
    /// Opens namespace `ns` (`/dev/nvmeXnY` or the char device
    /// `/dev/ngXnY`) and its controller.
    pub fn open(ns: &Path) -> Result<Self, NvmeError> {
        let ctrl_path =
            controller_of(ns).ok_or_else(|| NvmeError::BadPath(ns.display().to_string()))?;
        let open = |p: &Path| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .open(p)
                .map_err(|e| io_err(format!("open {}", p.display()), e))
        };
        let ctrl = open(&ctrl_path)?;
        let ns_file = open(ns)?;
        let nsid = sys::namespace_id(&ns_file)
            .map_err(|e| io_err(format!("NVME_IOCTL_ID on {}", ns.display()), e))?;
        Ok(Self {
            ctrl,
            ns: ns_file,
            nsid,
            path: ns.to_path_buf(),
            max_transfer: KERNEL_MAX_TRANSFER,
            timeout_ms: COMMAND_TIMEOUT_MS,
        })
    }

    /// Opens a controller without a namespace (`/dev/nvmeX`), such as a
    /// discovery controller: for admin commands (the namespace id is 0).
    pub fn open_controller(ctrl_path: &Path) -> Result<Self, NvmeError> {
        let name = ctrl_path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let digits = name.strip_prefix("nvme").unwrap_or("");
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(NvmeError::BadPath(ctrl_path.display().to_string()));
        }
        let ctrl = OpenOptions::new()
            .read(true)
            .write(true)
            .open(ctrl_path)
            .map_err(|e| io_err(format!("open {}", ctrl_path.display()), e))?;
        let ns = ctrl
            .try_clone()
            .map_err(|e| io_err(format!("dup {}", ctrl_path.display()), e))?;
        Ok(Self {
            ctrl,
            ns,
            nsid: 0,
            path: ctrl_path.to_path_buf(),
            max_transfer: KERNEL_MAX_TRANSFER,
            timeout_ms: COMMAND_TIMEOUT_MS,
        })
    }

    /// The namespace id.
    pub fn nsid(&self) -> u32 {
        self.nsid
    }

    /// The namespace's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes one command may move: the controller's MDTS (set with
    /// [`Self::limit_transfer`] after Identify) and the kernel's limit.
    pub fn max_transfer(&self) -> usize {
        self.max_transfer
    }

    /// Lowers the transfer limit to the controller's MDTS in bytes.
    pub fn limit_transfer(&mut self, mdts_bytes: usize) {
        if mdts_bytes > 0 {
            self.max_transfer = self.max_transfer.min(mdts_bytes);
        }
    }

    /// Sets the timeout of every later command, ms (at least 1).
    pub fn set_timeout_ms(&mut self, ms: u32) {
        self.timeout_ms = ms.max(1);
    }

    /// Runs `sqe` as an admin (`admin`) or I/O command with `data`; an I/O
    /// command without a namespace id gets this namespace's.
    pub fn exec(
        &mut self,
        admin: bool,
        sqe: &Sqe,
        data: Data<'_>,
    ) -> Result<Completion, NvmeError> {
        exec(self, admin, sqe, data)
    }
}

/// Runs `sqe` through `p` (see [`Device::exec`]).
pub fn exec<P: Passthru + ?Sized>(
    p: &mut P,
    admin: bool,
    sqe: &Sqe,
    data: Data<'_>,
) -> Result<Completion, NvmeError> {
    let mut cmd = PassthruCmd::from_sqe(sqe);
    if !admin && cmd.nsid == 0 {
        cmd.nsid = p.nsid();
    }
    cmd.timeout_ms = p.timeout_ms();
    let len = data.len();
    if len > p.max_transfer() {
        return Err(NvmeError::TooLarge {
            len,
            limit: p.max_transfer(),
        });
    }
    p.passthru(admin, &mut cmd, data)
}

impl Passthru for Device {
    fn max_transfer(&self) -> usize {
        self.max_transfer
    }

    fn nsid(&self) -> u32 {
        self.nsid
    }

    fn timeout_ms(&self) -> u32 {
        self.timeout_ms
    }

    fn passthru(
        &mut self,
        admin: bool,
        cmd: &mut PassthruCmd,
        data: Data<'_>,
    ) -> Result<Completion, NvmeError> {
        let len = data.len();
        if len > self.max_transfer {
            return Err(NvmeError::TooLarge {
                len,
                limit: self.max_transfer,
            });
        }
        cmd.data_len = len as u32;
        cmd.addr = match data {
            Data::None => 0,
            Data::Out(b) => b.as_ptr() as u64,
            Data::In(b) => b.as_mut_ptr() as u64,
        };
        let (fd, req) = if admin {
            (&self.ctrl, NVME_IOCTL_ADMIN_CMD)
        } else {
            (&self.ns, NVME_IOCTL_IO_CMD)
        };
        let status = sys::passthru(fd, req, cmd)
            .map_err(|e| io_err(format!("passthrough opcode {:#04x}", cmd.opcode), e))?;
        Ok(Completion {
            status: status as u16,
            dw0: cmd.result,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controllers_of_namespaces() {
        assert_eq!(
            controller_of(Path::new("/dev/nvme0n1")),
            Some(PathBuf::from("/dev/nvme0"))
        );
        assert_eq!(
            controller_of(Path::new("/dev/ng12n3")),
            Some(PathBuf::from("/dev/nvme12"))
        );
        for bad in ["/dev/sda", "/dev/nvme0", "/dev/ngn1", "/dev/nvmeXn1"] {
            assert_eq!(controller_of(Path::new(bad)), None, "{bad}");
        }
        for bad in ["/dev/nvme0n1", "/dev/sda", "/dev/nvme"] {
            assert!(matches!(
                Device::open_controller(Path::new(bad)),
                Err(NvmeError::BadPath(_))
            ));
        }
    }

    /// Records the command it is given.
    struct Recorder(Option<PassthruCmd>);

    impl Passthru for Recorder {
        fn passthru(
            &mut self,
            _: bool,
            cmd: &mut PassthruCmd,
            _: Data<'_>,
        ) -> Result<Completion, NvmeError> {
            self.0 = Some(*cmd);
            Ok(Completion { status: 0, dw0: 0 })
        }
        fn max_transfer(&self) -> usize {
            4096
        }
        fn nsid(&self) -> u32 {
            7
        }
    }

    #[test]
    fn every_command_carries_the_timeout_and_a_namespace() {
        let mut r = Recorder(None);
        let sqe = Sqe::new(proto::Opcode(0xC1));
        exec(&mut r, false, &sqe, Data::None).unwrap();
        let c = r.0.take().unwrap();
        assert_eq!((c.timeout_ms, c.nsid), (COMMAND_TIMEOUT_MS, 7));
        exec(&mut r, true, &sqe, Data::None).unwrap();
        assert_eq!(r.0.unwrap().timeout_ms, COMMAND_TIMEOUT_MS);
        let big = [0u8; 8192];
        assert!(matches!(
            exec(&mut r, false, &sqe, Data::Out(&big)),
            Err(NvmeError::TooLarge { .. })
        ));
    }

    #[test]
    fn opening_a_missing_device_is_an_error() {
        assert!(matches!(
            Device::open(Path::new("/dev/sda")),
            Err(NvmeError::BadPath(_))
        ));
        assert!(matches!(
            Device::open(Path::new("/nonexistent/nvme9n1")),
            Err(NvmeError::Io { .. })
        ));
    }
}
