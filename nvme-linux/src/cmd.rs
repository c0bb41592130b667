//! `struct nvme_passthru_cmd` of `<linux/nvme_ioctl.h>` (72 bytes) and the
//! ioctl numbers, built from the kernel's `_IOWR`/`_IO` encoding.

use proto::Sqe;

/// `struct nvme_passthru_cmd` (the kernel's layout, field for field).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassthruCmd {
    /// Opcode.
    pub opcode: u8,
    /// Flags (0).
    pub flags: u8,
    /// Reserved.
    pub rsvd1: u16,
    /// Namespace id.
    pub nsid: u32,
    /// Command dword 2.
    pub cdw2: u32,
    /// Command dword 3.
    pub cdw3: u32,
    /// Metadata buffer address (0: none).
    pub metadata: u64,
    /// Data buffer address (user space).
    pub addr: u64,
    /// Metadata length.
    pub metadata_len: u32,
    /// Data length.
    pub data_len: u32,
    /// Command dword 10.
    pub cdw10: u32,
    /// Command dword 11.
    pub cdw11: u32,
    /// Command dword 12.
    pub cdw12: u32,
    /// Command dword 13.
    pub cdw13: u32,
    /// Command dword 14.
    pub cdw14: u32,
    /// Command dword 15.
    pub cdw15: u32,
    /// Timeout in ms (0: the driver's default).
    pub timeout_ms: u32,
    /// Completion dword 0, written by the kernel.
    pub result: u32,
}

const _: () = assert!(core::mem::size_of::<PassthruCmd>() == 72);
const _: () = assert!(core::mem::offset_of!(PassthruCmd, addr) == 24);
const _: () = assert!(core::mem::offset_of!(PassthruCmd, cdw10) == 40);
const _: () = assert!(core::mem::offset_of!(PassthruCmd, result) == 68);

/// `_IOC(dir, 'N', nr, size)` of the kernel's generic ioctl encoding.
const fn ioc(dir: u32, nr: u32, size: u32) -> u32 {
    dir << 30 | size << 16 | (b'N' as u32) << 8 | nr
}

/// `NVME_IOCTL_ID`: `_IO('N', 0x40)`, the namespace id of a namespace fd.
pub const NVME_IOCTL_ID: u32 = ioc(0, 0x40, 0);
/// `NVME_IOCTL_ADMIN_CMD`: `_IOWR('N', 0x41, struct nvme_admin_cmd)`.
pub const NVME_IOCTL_ADMIN_CMD: u32 = ioc(3, 0x41, 72);
/// `NVME_IOCTL_IO_CMD`: `_IOWR('N', 0x43, struct nvme_passthru_cmd)`.
pub const NVME_IOCTL_IO_CMD: u32 = ioc(3, 0x43, 72);

impl PassthruCmd {
    /// The command of `sqe` (opcode, nsid, dwords 2, 3, 10–15); the data
    /// pointer and length are set by the caller. The SQE's command id and
    /// PRPs are the kernel's to fill.
    pub fn from_sqe(sqe: &Sqe) -> Self {
        Self {
            opcode: sqe.opcode().0,
            nsid: sqe.nsid,
            cdw2: sqe.cdw2,
            cdw3: sqe.cdw3,
            cdw10: sqe.cdw10,
            cdw11: sqe.cdw11,
            cdw12: sqe.cdw12,
            cdw13: sqe.cdw13,
            cdw14: sqe.cdw14,
            cdw15: sqe.cdw15,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::Opcode;

    #[test]
    fn ioctl_numbers_match_the_kernel_headers() {
        // Values of <linux/nvme_ioctl.h> on x86_64 and arm64.
        assert_eq!(NVME_IOCTL_ID, 0x4E40);
        assert_eq!(NVME_IOCTL_ADMIN_CMD, 0xC048_4E41);
        assert_eq!(NVME_IOCTL_IO_CMD, 0xC048_4E43);
    }

    #[test]
    fn sqe_fields_carry_over() {
        let mut sqe = Sqe::new(Opcode(0x86));
        sqe.nsid = 1;
        sqe.cdw10 = 7;
        sqe.cdw15 = 9;
        sqe.prp1 = 0xdead_0000;
        let c = PassthruCmd::from_sqe(&sqe);
        assert_eq!((c.opcode, c.nsid, c.cdw10, c.cdw15), (0x86, 1, 7, 9));
        assert_eq!(c.addr, 0, "PRPs are the kernel's");
    }
}
