//! Get Log Page: the admin command and the InstCSD statistics log page
//! ([`LID_STATS`], 512 bytes).
//!
//! Get Log Page encoding: cdw10 LID bits 0-7, LSP 8-14, RAE 15, NUMDL 16-31;
//! cdw11 NUMDU 0-15 (NUMD = dwords − 1, 0-based); cdw12/cdw13 the byte
//! offset into the page (dword-aligned). The firmware answers
//! INVALID_LOG_PAGE for a LID it does not serve.

use bytemuck::{Pod, Zeroable};

use crate::identify::check_admin;
use crate::wire::{check_len, get_u64, put_u64};
use crate::{Opcode, ProtoError, Sqe};

/// Log identifier of the InstCSD statistics page (vendor-specific range).
pub const LID_STATS: u8 = 0xC0;

/// A Get Log Page command reading `bytes` (rounded up to whole dwords, at
/// least one) of log page `lid` from offset 0.
pub fn get_log_page(lid: u8, bytes: u32) -> Sqe {
    GetLogPage {
        lid,
        numd: bytes.div_ceil(4).max(1) - 1,
        offset: 0,
    }
    .to_sqe()
}

/// A parsed Get Log Page command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GetLogPage {
    /// Log page identifier.
    pub lid: u8,
    /// Number of dwords minus one.
    pub numd: u32,
    /// Byte offset into the log page (dword-aligned).
    pub offset: u64,
}

impl GetLogPage {
    /// Bytes to transfer: `(numd + 1) · 4`.
    pub const fn bytes(&self) -> u64 {
        (self.numd as u64 + 1) * 4
    }

    /// Encodes (cid, nsid and PRPs zero).
    pub fn to_sqe(&self) -> Sqe {
        Sqe {
            cdw10: self.lid as u32 | (self.numd & 0xFFFF) << 16,
            cdw11: self.numd >> 16,
            cdw12: self.offset as u32,
            cdw13: (self.offset >> 32) as u32,
            ..Sqe::new(Opcode::GET_LOG_PAGE)
        }
    }

    /// Decodes: opcode, fuse/PSDT zero, LSP zero (RAE ignored), cdw11
    /// bits 16-31 zero, offset dword-aligned.
    pub fn parse(sqe: &Sqe) -> Result<Self, ProtoError> {
        check_admin(sqe, Opcode::GET_LOG_PAGE)?;
        if sqe.cdw10 & 0x7F00 != 0 {
            return Err(ProtoError::InvalidField {
                field: "lsp",
                value: ((sqe.cdw10 >> 8) & 0x7F) as u64,
            });
        }
        if sqe.cdw11 & 0xFFFF_0000 != 0 {
            return Err(ProtoError::Reserved {
                field: "cdw11[31:16]",
                value: sqe.cdw11 as u64,
            });
        }
        let offset = sqe.cdw12 as u64 | (sqe.cdw13 as u64) << 32;
        if offset & 3 != 0 {
            return Err(ProtoError::InvalidField {
                field: "offset",
                value: offset,
            });
        }
        Ok(GetLogPage {
            lid: sqe.cdw10 as u8,
            numd: sqe.cdw10 >> 16 | (sqe.cdw11 & 0xFFFF) << 16,
            offset,
        })
    }
}

/// The statistics log page: 24 little-endian u64 counters at offsets
/// 0, 8, ..., 184, then zeroed reserved bytes to 512.
///
/// Counters accumulate from device power-on. Time fields are virtual
/// (simulated) nanoseconds of the device model, not host wall time; the
/// `*_busy` times overlap each other (flash, bus, engine and DMA work
/// concurrently) so they do not sum to `virtual_ns_total`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct StatsLog {
    /// Commands completed (admin and I/O).
    pub commands: u64,
    /// Commands completed with a non-success status.
    pub errors: u64,
    /// Flash pages read (KV data and metadata).
    pub flash_pages_read: u64,
    /// Flash pages a sparse decode did not need to read.
    pub flash_pages_skipped: u64,
    /// Flash pages programmed.
    pub flash_pages_programmed: u64,
    /// Pages programmed before they were full (tail flushes).
    pub partial_pages_written: u64,
    /// Pages made invalid by a newer copy or a closed sequence.
    pub pages_superseded: u64,
    /// Erase blocks erased.
    pub blocks_erased: u64,
    /// Bytes moved over the flash channel buses.
    pub channel_bus_bytes: u64,
    /// Bytes streamed through the attention engine.
    pub engine_bytes: u64,
    /// Elements dropped by the sparf filter.
    pub elements_filtered: u64,
    /// Bytes of KV tails currently held in device DRAM.
    pub dram_tail_bytes: u64,
    /// Bytes the device read from host memory.
    pub pcie_bytes_in: u64,
    /// Bytes the device wrote to host memory.
    pub pcie_bytes_out: u64,
    /// Tokens appended (KV_APPEND and DECODE_SUBMIT with APPEND_KV), per
    /// (layer, token).
    pub tokens_appended: u64,
    /// DECODE_SUBMIT commands completed.
    pub decodes: u64,
    /// Sequences currently open.
    pub open_sequences: u64,
    /// Free erase blocks.
    pub free_blocks: u64,
    /// Blocks retired as bad.
    pub bad_blocks: u64,
    /// Virtual ns since power-on.
    pub virtual_ns_total: u64,
    /// Virtual ns at least one flash die was busy.
    pub virtual_ns_flash_busy: u64,
    /// Virtual ns at least one channel bus was busy.
    pub virtual_ns_bus_busy: u64,
    /// Virtual ns the attention engine was busy.
    pub virtual_ns_engine_busy: u64,
    /// Virtual ns the host DMA engine was busy.
    pub virtual_ns_dma_busy: u64,
    /// Pages re-placed out of blocks retired as bad.
    pub pages_relocated: u64,
    /// Blocks garbage collection collected (wear-levelling moves included).
    pub gc_blocks: u64,
    /// Live pages garbage collection re-placed (with `pages_relocated`,
    /// the flash writes that were not host data: write amplification is
    /// `flash_pages_programmed` over `flash_pages_programmed` less both).
    pub gc_pages_moved: u64,
    /// Cold blocks moved for static wear levelling.
    pub wear_moves: u64,
    /// Fewest erases of a usable block.
    pub erase_count_min: u64,
    /// Most erases of a usable block.
    pub erase_count_max: u64,
    /// Erases of all usable blocks (the mean is this over `usable_blocks`).
    pub erase_count_total: u64,
    /// Blocks not retired.
    pub usable_blocks: u64,
    /// Virtual ns spent running garbage collection's copies and erases.
    pub virtual_ns_gc: u64,
    /// Zero.
    pub reserved: [u64; 31],
}

const _: () = assert!(core::mem::size_of::<StatsLog>() == StatsLog::SIZE);

impl Default for StatsLog {
    fn default() -> Self {
        Zeroable::zeroed()
    }
}

impl StatsLog {
    /// Wire size in bytes.
    pub const SIZE: usize = 512;
    /// Number of counters.
    pub const COUNTERS: usize = 33;
    /// Indices (in wire order) of the counters that are virtual times: a
    /// board's own, not comparable across boards.
    pub const TIMES: [usize; 6] = [19, 20, 21, 22, 23, 32];

    /// The counters' names in wire order (the fields' names).
    pub const NAMES: [&'static str; 33] = [
        "commands",
        "errors",
        "flash_pages_read",
        "flash_pages_skipped",
        "flash_pages_programmed",
        "partial_pages_written",
        "pages_superseded",
        "blocks_erased",
        "channel_bus_bytes",
        "engine_bytes",
        "elements_filtered",
        "dram_tail_bytes",
        "pcie_bytes_in",
        "pcie_bytes_out",
        "tokens_appended",
        "decodes",
        "open_sequences",
        "free_blocks",
        "bad_blocks",
        "virtual_ns_total",
        "virtual_ns_flash_busy",
        "virtual_ns_bus_busy",
        "virtual_ns_engine_busy",
        "virtual_ns_dma_busy",
        "pages_relocated",
        "gc_blocks",
        "gc_pages_moved",
        "wear_moves",
        "erase_count_min",
        "erase_count_max",
        "erase_count_total",
        "usable_blocks",
        "virtual_ns_gc",
    ];

    /// The counters in wire order.
    pub const fn counters(&self) -> [u64; 33] {
        [
            self.commands,
            self.errors,
            self.flash_pages_read,
            self.flash_pages_skipped,
            self.flash_pages_programmed,
            self.partial_pages_written,
            self.pages_superseded,
            self.blocks_erased,
            self.channel_bus_bytes,
            self.engine_bytes,
            self.elements_filtered,
            self.dram_tail_bytes,
            self.pcie_bytes_in,
            self.pcie_bytes_out,
            self.tokens_appended,
            self.decodes,
            self.open_sequences,
            self.free_blocks,
            self.bad_blocks,
            self.virtual_ns_total,
            self.virtual_ns_flash_busy,
            self.virtual_ns_bus_busy,
            self.virtual_ns_engine_busy,
            self.virtual_ns_dma_busy,
            self.pages_relocated,
            self.gc_blocks,
            self.gc_pages_moved,
            self.wear_moves,
            self.erase_count_min,
            self.erase_count_max,
            self.erase_count_total,
            self.usable_blocks,
            self.virtual_ns_gc,
        ]
    }

    /// From counters in wire order (reserved zero).
    pub const fn from_counters(c: [u64; 33]) -> Self {
        StatsLog {
            commands: c[0],
            errors: c[1],
            flash_pages_read: c[2],
            flash_pages_skipped: c[3],
            flash_pages_programmed: c[4],
            partial_pages_written: c[5],
            pages_superseded: c[6],
            blocks_erased: c[7],
            channel_bus_bytes: c[8],
            engine_bytes: c[9],
            elements_filtered: c[10],
            dram_tail_bytes: c[11],
            pcie_bytes_in: c[12],
            pcie_bytes_out: c[13],
            tokens_appended: c[14],
            decodes: c[15],
            open_sequences: c[16],
            free_blocks: c[17],
            bad_blocks: c[18],
            virtual_ns_total: c[19],
            virtual_ns_flash_busy: c[20],
            virtual_ns_bus_busy: c[21],
            virtual_ns_engine_busy: c[22],
            virtual_ns_dma_busy: c[23],
            pages_relocated: c[24],
            gc_blocks: c[25],
            gc_pages_moved: c[26],
            wear_moves: c[27],
            erase_count_min: c[28],
            erase_count_max: c[29],
            erase_count_total: c[30],
            usable_blocks: c[31],
            virtual_ns_gc: c[32],
            reserved: [0; 31],
        }
    }

    /// Little-endian wire encoding.
    pub fn to_bytes(&self) -> [u8; 512] {
        let mut b = [0u8; 512];
        let words = self.counters().into_iter().chain(self.reserved);
        for (i, w) in words.enumerate() {
            put_u64(&mut b, 8 * i, w);
        }
        b
    }

    /// Decodes exactly 512 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProtoError> {
        check_len(bytes, Self::SIZE)?;
        let mut c = [0u64; Self::COUNTERS];
        for (i, w) in c.iter_mut().enumerate() {
            *w = get_u64(bytes, 8 * i);
        }
        let mut log = Self::from_counters(c);
        for (i, w) in log.reserved.iter_mut().enumerate() {
            *w = get_u64(bytes, 8 * (Self::COUNTERS + i));
        }
        Ok(log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;
    use proptest::prelude::*;

    /// `NAMES` are the fields' names, in the order `counters` reads them.
    #[test]
    fn names_are_the_fields_in_wire_order() {
        let c: [u64; StatsLog::COUNTERS] = core::array::from_fn(|i| 1000 + i as u64);
        let text = std::format!("{:?}", StatsLog::from_counters(c));
        let mut at = 0;
        for (name, v) in StatsLog::NAMES.iter().zip(c) {
            let field = std::format!("{name}: {v},");
            let i = text[at..]
                .find(&field)
                .unwrap_or_else(|| panic!("{field} in {text}"));
            at += i + field.len();
        }
    }

    #[test]
    fn command_encoding() {
        let s = get_log_page(LID_STATS, 512);
        assert_eq!(s.opcode(), Opcode::GET_LOG_PAGE);
        assert_eq!(s.cdw10, 0xC0 | 127 << 16);
        assert_eq!(s.cdw11, 0);
        let p = GetLogPage::parse(&s).unwrap();
        assert_eq!((p.lid, p.bytes(), p.offset), (0xC0, 512, 0));
        // Rounded up to dwords, at least one; NUMDU used above 256 KiB.
        assert_eq!(GetLogPage::parse(&get_log_page(2, 5)).unwrap().bytes(), 8);
        assert_eq!(GetLogPage::parse(&get_log_page(2, 0)).unwrap().bytes(), 4);
        let big = get_log_page(2, 1 << 20);
        assert_eq!((big.cdw10 >> 16, big.cdw11), (0xFFFF, 3));
        assert_eq!(GetLogPage::parse(&big).unwrap().bytes(), 1 << 20);
    }

    #[test]
    fn command_rejects() {
        let s = get_log_page(LID_STATS, 512);
        let mut b = s;
        b.cdw10 |= 1 << 8;
        assert!(matches!(
            GetLogPage::parse(&b),
            Err(ProtoError::InvalidField { field: "lsp", .. })
        ));
        let mut b = s;
        b.cdw10 |= 1 << 15; // RAE is fine.
        assert!(GetLogPage::parse(&b).is_ok());
        let mut b = s;
        b.cdw11 = 1 << 16;
        assert!(matches!(
            GetLogPage::parse(&b),
            Err(ProtoError::Reserved { .. })
        ));
        let mut b = s;
        b.cdw12 = 2;
        assert!(matches!(
            GetLogPage::parse(&b),
            Err(ProtoError::InvalidField {
                field: "offset",
                ..
            })
        ));
        let mut b = s;
        b.cdw0 |= 1 << 14;
        assert!(matches!(
            GetLogPage::parse(&b),
            Err(ProtoError::InvalidField { field: "psdt", .. })
        ));
        assert!(matches!(
            GetLogPage::parse(&Sqe::new(Opcode::IDENTIFY)),
            Err(ProtoError::WrongOpcode { .. })
        ));
    }

    #[test]
    fn stats_layout() {
        assert_eq!(offset_of!(StatsLog, commands), 0);
        assert_eq!(offset_of!(StatsLog, errors), 8);
        assert_eq!(offset_of!(StatsLog, engine_bytes), 72);
        assert_eq!(offset_of!(StatsLog, tokens_appended), 112);
        assert_eq!(offset_of!(StatsLog, virtual_ns_total), 152);
        assert_eq!(offset_of!(StatsLog, virtual_ns_dma_busy), 184);
        // Appended in space that was reserved: the fields above keep their
        // offsets.
        assert_eq!(offset_of!(StatsLog, pages_relocated), 192);
        assert_eq!(offset_of!(StatsLog, virtual_ns_gc), 256);
        assert_eq!(offset_of!(StatsLog, reserved), 264);
        let log = StatsLog {
            errors: 0x0102,
            virtual_ns_dma_busy: 7,
            ..StatsLog::default()
        };
        let b = log.to_bytes();
        assert_eq!(b[8..10], [2, 1]);
        assert_eq!(b[184], 7);
        assert!(b[192..].iter().all(|&x| x == 0));
        assert!(StatsLog::from_bytes(&b[..511]).is_err());
    }

    proptest! {
        #[test]
        fn stats_round_trip(raw in proptest::collection::vec(any::<u8>(), 512)) {
            let log = StatsLog::from_bytes(&raw).unwrap();
            prop_assert_eq!(&log.to_bytes()[..], &raw[..]);
            prop_assert_eq!(StatsLog::from_counters(log.counters()).counters(), log.counters());
        }

        #[test]
        fn get_log_page_round_trip(lid: u8, numd: u32, offset_dw in 0u64..(1 << 62)) {
            let c = GetLogPage { lid, numd, offset: offset_dw * 4 };
            prop_assert_eq!(GetLogPage::parse(&c.to_sqe()), Ok(c));
        }
    }
}
