//! Controller register offsets (BAR0) and doorbell addressing, for the parts
//! of the NVMe register file InstCSD implements.

/// Controller capabilities (u64).
pub const CAP: usize = 0x00;
/// Version (u32).
pub const VS: usize = 0x08;
/// Interrupt mask set (u32).
pub const INTMS: usize = 0x0C;
/// Interrupt mask clear (u32).
pub const INTMC: usize = 0x10;
/// Controller configuration (u32).
pub const CC: usize = 0x14;
/// Controller status (u32).
pub const CSTS: usize = 0x1C;
/// Admin queue attributes (u32): ASQS bits 0-11, ACQS bits 16-27 (0-based).
pub const AQA: usize = 0x24;
/// Admin submission queue base address (u64).
pub const ASQ: usize = 0x28;
/// Admin completion queue base address (u64).
pub const ACQ: usize = 0x30;
/// First doorbell.
pub const DOORBELL_BASE: usize = 0x1000;

/// CC.EN: enable.
pub const CC_EN: u32 = 1;
/// CSTS.RDY: ready.
pub const CSTS_RDY: u32 = 1;
/// CSTS.CFS: controller fatal status.
pub const CSTS_CFS: u32 = 1 << 1;

/// NVMe version 1.4 as encoded in VS.
pub const VERSION_1_4: u32 = 1 << 16 | 4 << 8;

/// Offset of submission queue `qid`'s tail doorbell (stride `4 << dstrd`).
pub const fn sq_tail_doorbell(qid: u16, dstrd: u8) -> usize {
    DOORBELL_BASE + (2 * qid as usize) * (4 << dstrd)
}

/// Offset of completion queue `qid`'s head doorbell (stride `4 << dstrd`).
pub const fn cq_head_doorbell(qid: u16, dstrd: u8) -> usize {
    DOORBELL_BASE + (2 * qid as usize + 1) * (4 << dstrd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doorbells() {
        assert_eq!(sq_tail_doorbell(0, 0), 0x1000);
        assert_eq!(cq_head_doorbell(0, 0), 0x1004);
        assert_eq!(sq_tail_doorbell(1, 0), 0x1008);
        assert_eq!(cq_head_doorbell(1, 1), 0x1000 + 3 * 8);
    }
}
