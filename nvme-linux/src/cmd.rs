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
/// `NVME_URING_CMD_IO`: `_IOWR('N', 0x80, struct nvme_uring_cmd)`, the
/// `cmd_op` of an I/O passthrough through io_uring.
pub const NVME_URING_CMD_IO: u32 = ioc(3, 0x80, 72);

impl PassthruCmd {
    /// The 72 bytes of `struct nvme_uring_cmd` (the same fields as
    /// `nvme_passthru_cmd`, its last dword reserved), zero-padded to the
    /// 80 bytes of a 128-byte SQE's command area.
    pub fn uring_bytes(&self) -> [u8; 80] {
        let mut b = [0u8; 80];
        b[0] = self.opcode;
        b[1] = self.flags;
        b[4..8].copy_from_slice(&self.nsid.to_ne_bytes());
        b[8..12].copy_from_slice(&self.cdw2.to_ne_bytes());
        b[12..16].copy_from_slice(&self.cdw3.to_ne_bytes());
        b[16..24].copy_from_slice(&self.metadata.to_ne_bytes());
        b[24..32].copy_from_slice(&self.addr.to_ne_bytes());
        b[32..36].copy_from_slice(&self.metadata_len.to_ne_bytes());
        b[36..40].copy_from_slice(&self.data_len.to_ne_bytes());
        for (i, w) in [
            self.cdw10, self.cdw11, self.cdw12, self.cdw13, self.cdw14, self.cdw15,
        ]
        .iter()
        .enumerate()
        {
            b[40 + 4 * i..44 + 4 * i].copy_from_slice(&w.to_ne_bytes());
        }
        b[64..68].copy_from_slice(&self.timeout_ms.to_ne_bytes());
        b
    }
}

impl PassthruCmd {
    /// The SQE of this command (opcode, nsid, dwords 2, 3, 10–15; no
    /// command id or PRPs): what a device behind something other than the
    /// kernel receives.
    pub fn to_sqe(&self) -> Sqe {
        let mut sqe = Sqe::new(proto::Opcode(self.opcode));
        sqe.nsid = self.nsid;
        sqe.cdw2 = self.cdw2;
        sqe.cdw3 = self.cdw3;
        sqe.cdw10 = self.cdw10;
        sqe.cdw11 = self.cdw11;
        sqe.cdw12 = self.cdw12;
        sqe.cdw13 = self.cdw13;
        sqe.cdw14 = self.cdw14;
        sqe.cdw15 = self.cdw15;
        sqe
    }

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
        assert_eq!(NVME_URING_CMD_IO, 0xC048_4E80);
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
        let mut back = sqe;
        back.prp1 = 0;
        assert_eq!(c.to_sqe(), back, "round trip without the PRPs");
        assert_eq!(c.addr, 0, "PRPs are the kernel's");
        let b = c.uring_bytes();
        assert_eq!(b[0], 0x86);
        assert_eq!(&b[40..44], &7u32.to_ne_bytes(), "cdw10 at 40");
        assert_eq!(&b[60..64], &9u32.to_ne_bytes(), "cdw15 at 60");
    }
}
