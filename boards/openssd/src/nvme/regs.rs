//! The register map of the OpenSSD NVMe host controller and the encoding
//! of its command, completion and DMA FIFOs, for both generations.
//!
//! # Sources (read, not copied; the firmware that describes them is GPL)
//!
//! * Cosmos+ (`NVMeHostController`, 7-bit command slots): the low-level
//!   driver `host_lld.h` / `host_lld.c` of the Cosmos+ firmware, e.g.
//!   `SKKJH/DaisyPlus_Trim: hil/nvme/host_lld.h` (a copy of the Cosmos+
//!   GreedyFTL driver), and the block design's address segments in
//!   `josephly88/GreedyOpenSSD:
//!   OpenSSD2-8C8W-Prebuild-3.0.0_hw_platform_0/OpenSSD2_bd.tcl`
//!   (`s0_axi` at 0x83C0_0000, 64 KiB; the DMA master on S_AXI_HP3).
//! * Daisyplus (`crztech:user:nvme_ctrl`, 10-bit slots, "slot_modified"):
//!   `CRZ-Technology/OpenSSD-OpenChannelSSD:
//!   DaisyPlus/2025.1/Micron_New_NAND/PS_LPDDR4_A/ws/run-gr3ftl/nvme/host_lld.c`
//!   (five-word DMA command, 4-byte host alignment) and a public
//!   `lld_nvme.h` of the same controller found by code search (repository
//!   not identified): the command-FIFO slot field at bit 5, the
//!   completion slot field 10 bits wide, command SRAM at +0x1_0000, queue
//!   base high words of 16 bits. The window (0xB002_0000, 128 KiB) is in
//!   `.../ws/daisyplus/psu_cortexa53_0/.../bsp/include/xparameters.h`.
//!
//! What neither source states and we assume (marked ASSUMED below): that a
//! direct DMA's length must be a whole number of host-alignment granules
//! (we always round the window out, see [`super::dma`]), and the width of
//! the Daisyplus host address (we allow the full 64 bits the two address
//! words carry).

use proto::Status;

/// Register byte offsets (both generations).
pub mod off {
    /// Device interrupt mask (polling firmware leaves it alone).
    pub const IRQ_MASK: usize = 0x004;
    /// Device interrupt clear.
    pub const IRQ_CLEAR: usize = 0x008;
    /// Device interrupt status.
    pub const IRQ_STATUS: usize = 0x00C;
    /// PCIe link status: `[5:0]` LTSSM, `[8]` link up.
    pub const PCIE_STATUS: usize = 0x100;
    /// PCIe function status (bus master, MSI/MSI-X enables).
    pub const PCIE_FUNC: usize = 0x104;
    /// NVMe controller status: CC.EN, CC.SHN in; CSTS.RDY, CSTS.SHST out.
    pub const NVME_STATUS: usize = 0x200;
    /// Completed-DMA counters (one byte per kind).
    pub const DMA_FIFO_CNT: usize = 0x204;
    /// Admin queue pair valid bits.
    pub const ADMIN_QUEUE: usize = 0x21C;
    /// I/O submission queue `i` (two words at `IO_SQ + 8·i`).
    pub const IO_SQ: usize = 0x220;
    /// I/O completion queue `i` (two words at `IO_CQ + 8·i`).
    pub const IO_CQ: usize = 0x260;
    /// Command FIFO: reading pops the next fetched command.
    pub const CMD_FIFO: usize = 0x300;
    /// Completion FIFO: three words, the last one written commits.
    pub const CPL_FIFO: usize = 0x304;
    /// Host DMA command FIFO: four or five words, the last commits.
    pub const DMA_CMD_FIFO: usize = 0x310;
}

/// NVME_STATUS bits.
pub mod status {
    /// CC.EN as the host wrote it.
    pub const CC_EN: u32 = 1 << 0;
    /// CC.SHN `[2:1]`.
    pub const CC_SHN_SHIFT: u32 = 1;
    /// CSTS.RDY (firmware writes).
    pub const CSTS_RDY: u32 = 1 << 4;
    /// CSTS.SHST `[6:5]` (firmware writes).
    pub const CSTS_SHST_SHIFT: u32 = 5;
    /// CSTS.SHST = 2: shutdown processing complete.
    pub const SHST_COMPLETE: u32 = 2;
}

/// ADMIN_QUEUE bits.
pub mod admin_queue {
    /// The admin completion queue is valid.
    pub const CQ_VALID: u32 = 1 << 0;
    /// The admin submission queue is valid.
    pub const SQ_VALID: u32 = 1 << 1;
    /// Interrupt the host on admin completions.
    pub const CQ_IRQ_EN: u32 = 1 << 2;
}

/// Which generation of the controller, and what differs between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostLayout {
    /// Board name, for messages.
    pub name: &'static str,
    /// Size of the AXI4-Lite window.
    pub window: usize,
    /// Command slot bits (7: 128 slots; 10: 1024).
    pub slot_bits: u32,
    /// Position of the slot tag in a CMD_FIFO entry.
    pub cmd_slot_shift: u32,
    /// Command SRAM: slot `s`'s SQE at `cmd_sram + 64·s`.
    pub cmd_sram: usize,
    /// Words of a DMA command (the last one written starts it).
    pub dma_cmd_words: usize,
    /// Host addresses of direct DMA must be multiples of this.
    pub host_align: u64,
    /// Bits of host (PCIe) address the DMA engine carries. ASSUMED 64 for
    /// Daisyplus; 36 for Cosmos+ (its driver asserts `pcieAddrH < 0x10`).
    pub host_addr_bits: u32,
    /// Bits of a queue's base address high word in IO_SQ / IO_CQ.
    pub queue_hi_bits: u32,
    /// I/O queue pairs the controller holds (`IO_SQ`/`IO_CQ` have 8 each).
    pub io_queues: u16,
    /// Largest queue, in entries (QSIZE is an 8-bit 0-based field).
    pub max_queue_entries: u32,
}

/// Cosmos+ OpenSSD (`NVMeHostController`, Zynq-7000).
pub const COSMOS_PLUS: HostLayout = HostLayout {
    name: "cosmos-plus",
    window: 0x1_0000,
    slot_bits: 7,
    cmd_slot_shift: 8,
    cmd_sram: 0x2000,
    dma_cmd_words: 4,
    host_align: 16,
    host_addr_bits: 36,
    queue_hi_bits: 4,
    io_queues: 8,
    max_queue_entries: 256,
};

/// Daisyplus OpenSSD (`crztech nvme_ctrl`, ZynqMP).
pub const DAISYPLUS: HostLayout = HostLayout {
    name: "daisyplus",
    window: 0x2_0000,
    slot_bits: 10,
    cmd_slot_shift: 5,
    cmd_sram: 0x1_0000,
    dma_cmd_words: 5,
    host_align: 4,
    host_addr_bits: 64,
    queue_hi_bits: 16,
    io_queues: 8,
    max_queue_entries: 256,
};

impl HostLayout {
    /// Offset of slot `slot`'s 64-byte SQE in the command SRAM.
    pub const fn sqe_offset(&self, slot: u16) -> usize {
        self.cmd_sram + 64 * slot as usize
    }

    /// Whether `addr` is a host address the DMA engine can carry.
    pub const fn host_addr_ok(&self, addr: u64) -> bool {
        self.host_addr_bits >= 64 || addr >> self.host_addr_bits == 0
    }
}

/// One entry of the command FIFO: a command the controller fetched from a
/// submission queue into slot `slot` of its SRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchedCmd {
    /// Submission queue (0 = admin).
    pub queue: u16,
    /// Command SRAM slot.
    pub slot: u16,
    /// The controller's sequence number.
    pub seq: u8,
}

impl FetchedCmd {
    /// Decodes a CMD_FIFO word: `[3:0]` queue, slot at `cmd_slot_shift`,
    /// `[23:16]` sequence, `[31]` valid. `None` when the FIFO is empty.
    pub const fn decode(layout: &HostLayout, word: u32) -> Option<Self> {
        if word >> 31 == 0 {
            return None;
        }
        let slot_mask = (1u32 << layout.slot_bits) - 1;
        Some(Self {
            queue: (word & 0xF) as u16,
            slot: ((word >> layout.cmd_slot_shift) & slot_mask) as u16,
            seq: (word >> 16) as u8,
        })
    }

    /// The CMD_FIFO word of this entry (what a fake controller returns).
    pub const fn encode(&self, layout: &HostLayout) -> u32 {
        1 << 31
            | (self.seq as u32) << 16
            | (self.slot as u32) << layout.cmd_slot_shift
            | (self.queue as u32 & 0xF)
    }
}

/// How a completion FIFO entry ends a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CplKind {
    /// Post the CQE for slot `slot` and free the slot (`AUTO_CPL`).
    Auto {
        /// Command slot.
        slot: u16,
    },
    /// Free the slot without posting anything (asynchronous event
    /// requests stay outstanding at the host).
    SlotRelease {
        /// Command slot.
        slot: u16,
    },
}

/// The status half-word of a completion entry: the NVMe status field
/// (SC `[8:1]`, SCT `[11:9]`, DNR `[15]`) with the phase bit 0 clear (the
/// controller owns the phase).
pub const fn status_word(status: Status) -> u32 {
    (status.to_field() as u32) << 1
}

/// The completion FIFO words to write for `kind` with command-specific
/// dword 0 `dw0` and `status`, as (word index, value) in write order; the
/// last write commits the entry.
pub fn cpl_words(
    layout: &HostLayout,
    kind: CplKind,
    dw0: u32,
    status: Status,
) -> ([(usize, u32); 2], usize) {
    let slot_mask = (1u32 << layout.slot_bits) - 1;
    match kind {
        CplKind::Auto { slot } => {
            let w2 = u32::from(slot) & slot_mask | 1 << 14 | status_word(status) << 16;
            ([(1, dw0), (2, w2)], 2)
        }
        CplKind::SlotRelease { slot } => {
            let w2 = u32::from(slot) & slot_mask | 2 << 14;
            ([(2, w2), (0, 0)], 1)
        }
    }
}

/// Direction of a host DMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Host memory → device DRAM (the controller's "RX").
    FromHost,
    /// Device DRAM → host memory ("TX").
    ToHost,
}

/// A direct (firmware-addressed) host DMA of one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaCmd {
    /// Device DRAM address (as the controller's AXI master sees it).
    pub dev_addr: u32,
    /// Host bus address.
    pub host_addr: u64,
    /// Bytes, 1..=4096.
    pub len: u16,
    /// Direction.
    pub dir: Direction,
}

/// Largest direct DMA.
pub const MAX_DMA: usize = 4096;

impl DmaCmd {
    /// The DMA command words in write order: device address, host address
    /// high, host address low, then `[12:0]` length, `[30]` direction (1 =
    /// to host), `[31]` direct (1); Daisyplus appends a slot word (0 for a
    /// direct DMA).
    pub fn words(&self, layout: &HostLayout) -> ([u32; 5], usize) {
        let dir = match self.dir {
            Direction::ToHost => 1u32,
            Direction::FromHost => 0,
        };
        let ctrl = u32::from(self.len) & 0x1FFF | dir << 30 | 1 << 31;
        (
            [
                self.dev_addr,
                (self.host_addr >> 32) as u32,
                self.host_addr as u32,
                ctrl,
                0,
            ],
            layout.dma_cmd_words,
        )
    }
}

/// DMA_FIFO_CNT: how many DMAs of each kind the controller has finished,
/// each a wrapping byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaCounts {
    /// Direct host → device DMAs done (`[7:0]`).
    pub direct_rx: u8,
    /// Direct device → host DMAs done (`[15:8]`).
    pub direct_tx: u8,
    /// Automatic (PRP-walking) RX done (`[23:16]`).
    pub auto_rx: u8,
    /// Automatic TX done (`[31:24]`).
    pub auto_tx: u8,
}

impl DmaCounts {
    /// Decodes the register.
    pub const fn decode(word: u32) -> Self {
        Self {
            direct_rx: word as u8,
            direct_tx: (word >> 8) as u8,
            auto_rx: (word >> 16) as u8,
            auto_tx: (word >> 24) as u8,
        }
    }

    /// Encodes the register (for fakes).
    pub const fn encode(&self) -> u32 {
        self.direct_rx as u32
            | (self.direct_tx as u32) << 8
            | (self.auto_rx as u32) << 16
            | (self.auto_tx as u32) << 24
    }

    /// The direct counter of `dir`.
    pub const fn direct(&self, dir: Direction) -> u8 {
        match dir {
            Direction::FromHost => self.direct_rx,
            Direction::ToHost => self.direct_tx,
        }
    }
}

/// An I/O queue as the controller's IO_SQ / IO_CQ registers hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueRegs {
    /// Host bus address of the queue (page aligned).
    pub base: u64,
    /// QSIZE: entries − 1.
    pub qsize: u8,
    /// SQ: its completion queue id; CQ: its interrupt vector.
    pub vector: u8,
    /// CQ only: interrupt the host.
    pub irq_en: bool,
    /// The queue exists.
    pub valid: bool,
}

impl QueueRegs {
    /// The two IO_SQ words: base low; base high (`queue_hi_bits`), valid,
    /// CQ vector (4 bits), QSIZE `[31:24]`.
    pub const fn sq_words(&self, layout: &HostLayout) -> [u32; 2] {
        let hi = layout.queue_hi_bits;
        let hi_mask = (1u64 << hi) - 1;
        let w1 = ((self.base >> 32) & hi_mask) as u32
            | (self.valid as u32) << (if hi == 4 { 15 } else { hi })
            | (self.vector as u32 & 0xF) << (if hi == 4 { 16 } else { hi + 1 })
            | (self.qsize as u32) << 24;
        [self.base as u32, w1]
    }

    /// The two IO_CQ words: base low; base high, valid, interrupt vector (3
    /// bits), interrupt enable, QSIZE `[31:24]`.
    pub const fn cq_words(&self, layout: &HostLayout) -> [u32; 2] {
        let hi = layout.queue_hi_bits;
        let hi_mask = (1u64 << hi) - 1;
        let valid_bit = if hi == 4 { 15 } else { hi };
        let w1 = ((self.base >> 32) & hi_mask) as u32
            | (self.valid as u32) << valid_bit
            | (self.vector as u32 & 0x7) << (valid_bit + 1)
            | (self.irq_en as u32) << (valid_bit + 4)
            | (self.qsize as u32) << 24;
        [self.base as u32, w1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmd_fifo_entries_decode_per_generation() {
        // Cosmos+: queue 3, slot 0x45 at bit 8, seq 0x9A, valid.
        let w = 1 << 31 | 0x9A << 16 | 0x45 << 8 | 3;
        assert_eq!(
            FetchedCmd::decode(&COSMOS_PLUS, w),
            Some(FetchedCmd {
                queue: 3,
                slot: 0x45,
                seq: 0x9A
            })
        );
        // Daisyplus: slot 0x2F1 (10 bits) at bit 5.
        let w = 1 << 31 | 7 << 16 | 0x2F1 << 5 | 1;
        assert_eq!(
            FetchedCmd::decode(&DAISYPLUS, w).map(|c| c.slot),
            Some(0x2F1)
        );
        assert_eq!(FetchedCmd::decode(&DAISYPLUS, 0x7FFF_FFFF), None);
        for layout in [&COSMOS_PLUS, &DAISYPLUS] {
            let c = FetchedCmd {
                queue: 2,
                slot: 100,
                seq: 5,
            };
            assert_eq!(FetchedCmd::decode(layout, c.encode(layout)), Some(c));
        }
    }

    #[test]
    fn auto_completion_carries_slot_type_and_shifted_status() {
        let status = Status::INVALID_FIELD; // SCT 0, SC 2, DNR
        let (words, n) = cpl_words(&COSMOS_PLUS, CplKind::Auto { slot: 0x7F }, 0xABCD, status);
        assert_eq!(n, 2);
        assert_eq!(words[0], (1, 0xABCD));
        let (idx, w2) = words[1];
        assert_eq!(idx, 2, "the third word commits");
        assert_eq!(w2 & 0x3FFF, 0x7F);
        assert_eq!((w2 >> 14) & 3, 1, "AUTO_CPL");
        let field = (w2 >> 16) as u16;
        assert_eq!(field & 1, 0, "phase left to the controller");
        assert_eq!((field >> 1) & 0xFF, 0x02, "SC");
        assert_eq!((field >> 9) & 0x7, 0, "SCT");
        assert_eq!(field >> 15, 1, "DNR");
    }

    #[test]
    fn slot_release_writes_only_the_committing_word() {
        let (words, n) = cpl_words(
            &DAISYPLUS,
            CplKind::SlotRelease { slot: 0x3FF },
            7,
            Status::SUCCESS,
        );
        assert_eq!(n, 1);
        assert_eq!(words[0], (2, 0x3FF | 2 << 14));
    }

    #[test]
    fn dma_words_follow_each_generation() {
        let cmd = DmaCmd {
            dev_addr: 0x4000_1000,
            host_addr: 0x0000_000A_1234_5670,
            len: 4096,
            dir: Direction::ToHost,
        };
        let (w, n) = cmd.words(&COSMOS_PLUS);
        assert_eq!(n, 4);
        assert_eq!(
            &w[..4],
            &[0x4000_1000, 0xA, 0x1234_5670, 4096 | 1 << 30 | 1 << 31]
        );
        let (w, n) = DmaCmd {
            dir: Direction::FromHost,
            len: 16,
            ..cmd
        }
        .words(&DAISYPLUS);
        assert_eq!(n, 5);
        assert_eq!(w[3], 16 | 1 << 31);
        assert_eq!(w[4], 0, "no slot for a direct DMA");
    }

    #[test]
    fn dma_counts_round_trip() {
        let c = DmaCounts {
            direct_rx: 1,
            direct_tx: 2,
            auto_rx: 3,
            auto_tx: 255,
        };
        assert_eq!(c.encode(), 0xFF03_0201);
        assert_eq!(DmaCounts::decode(c.encode()), c);
        assert_eq!(c.direct(Direction::ToHost), 2);
    }

    #[test]
    fn queue_words_place_fields_per_generation() {
        let q = QueueRegs {
            base: 0x0000_0003_8000_0000,
            qsize: 63,
            vector: 5,
            irq_en: true,
            valid: true,
        };
        // Cosmos+ SQ: hi[3:0]=3, valid[15], cq[19:16]=5, size[31:24].
        assert_eq!(
            q.sq_words(&COSMOS_PLUS),
            [0x8000_0000, 3 | 1 << 15 | 5 << 16 | 63 << 24]
        );
        // Cosmos+ CQ: valid[15], iv[18:16]=5, ien[19].
        assert_eq!(
            q.cq_words(&COSMOS_PLUS),
            [0x8000_0000, 3 | 1 << 15 | 5 << 16 | 1 << 19 | 63 << 24]
        );
        // Daisyplus SQ: hi[15:0], valid[16], cq[20:17], size[31:24].
        assert_eq!(q.sq_words(&DAISYPLUS)[1], 3 | 1 << 16 | 5 << 17 | 63 << 24);
        // Daisyplus CQ: valid[16], iv[19:17], ien[20].
        assert_eq!(
            q.cq_words(&DAISYPLUS)[1],
            3 | 1 << 16 | 5 << 17 | 1 << 20 | 63 << 24
        );
    }

    #[test]
    fn host_address_width_is_checked_for_cosmos_only() {
        assert!(COSMOS_PLUS.host_addr_ok(0xF_FFFF_FFFF));
        assert!(!COSMOS_PLUS.host_addr_ok(0x10_0000_0000));
        assert!(DAISYPLUS.host_addr_ok(u64::MAX));
    }

    #[test]
    fn sqe_slots_fit_the_window() {
        for l in [&COSMOS_PLUS, &DAISYPLUS] {
            let last = l.sqe_offset(((1u32 << l.slot_bits) - 1) as u16);
            assert!(last + 64 <= l.window, "{}: last slot at {last:#x}", l.name);
        }
    }
}
