//! The AXI4-Lite register map of the in-storage attention engine: the one
//! place both sides read it from. `hdl` builds the slave that decodes
//! these addresses (the full table, with access rules and reset values, is
//! in the module docs of `hdl::engine`); the board drivers
//! (`board-openssd`) program the engine through them.
//!
//! Addresses are byte offsets from the engine's AXI base; every register is
//! 32 bits wide and must be written whole (WSTRB = 0xF).
//!
//! | module | owns |
//! | --- | --- |
//! | [`reg`] | register byte addresses |
//! | [`bit`] | CTRL and STATUS bits |
//! | [`config`] | the fields of the read-only CONFIG register |
//! | [`limit`] | what the slave accepts (writes outside answer SLVERR and change nothing) |
#![no_std]
#![forbid(unsafe_code)]

/// Value of the read-only ID register: "ICSD".
pub const ID: u32 = 0x4943_5344;
/// Value of the read-only VERSION register: 1.1 (1.1 added the top-k
/// key and result registers; a 1.0 driver still works).
pub const VERSION: u32 = 0x0001_0001;
/// Byte-address bits of the slave (a 4 KiB window).
pub const ADDR_BITS: usize = 12;

/// Register byte addresses.
pub mod reg {
    /// ID.
    pub const ID: u32 = 0x000;
    /// VERSION.
    pub const VERSION: u32 = 0x004;
    /// CONFIG.
    pub const CONFIG: u32 = 0x008;
    /// CTRL.
    pub const CTRL: u32 = 0x010;
    /// STATUS.
    pub const STATUS: u32 = 0x014;
    /// ARGTOPK_K.
    pub const ARGTOPK_K: u32 = 0x040;
    /// TOPK_KEY_LO: bits 31..0 of the next key (staged).
    pub const TOPK_KEY_LO: u32 = 0x044;
    /// TOPK_KEY_HI: bits 63..32 of the next key; the write hands the key
    /// to the top-k unit.
    pub const TOPK_KEY_HI: u32 = 0x048;
    /// TOPK_RESULT: the selected index at TOPK_RPTR; the read advances
    /// TOPK_RPTR.
    pub const TOPK_RESULT: u32 = 0x04C;
    /// TOPK_COUNT: indices the last selection took.
    pub const TOPK_COUNT: u32 = 0x050;
    /// TOPK_RPTR: the result position TOPK_RESULT reads (TOPK_START
    /// zeroes it).
    pub const TOPK_RPTR: u32 = 0x054;
    /// Kernel k's D.
    pub const fn k_d(k: u32) -> u32 {
        0x020 + 0x10 * k
    }
    /// Kernel k's S.
    pub const fn k_s(k: u32) -> u32 {
        0x024 + 0x10 * k
    }
    /// Kernel k's SCALE.
    pub const fn k_scale(k: u32) -> u32 {
        0x028 + 0x10 * k
    }
    /// Channel c's ROWS.
    pub const fn rows(c: u32) -> u32 {
        0x400 + 0x40 * c
    }
    /// Channel c's ROW_LEN.
    pub const fn row_len(c: u32) -> u32 {
        0x404 + 0x40 * c
    }
    /// Channel c's KEEP.
    pub const fn keep(c: u32) -> u32 {
        0x408 + 0x40 * c
    }
    /// Channel c's ROUTE.
    pub const fn route(c: u32) -> u32 {
        0x40C + 0x40 * c
    }
    /// Channel c's mask word w, low half.
    pub const fn mask_lo(c: u32, w: u32) -> u32 {
        0x420 + 0x40 * c + 8 * w
    }
    /// Channel c's mask word w, high half (commits the word).
    pub const fn mask_hi(c: u32, w: u32) -> u32 {
        0x424 + 0x40 * c + 8 * w
    }
}

/// CTRL and STATUS bits.
pub mod bit {
    /// CTRL: start kernel k.
    pub const fn k_start(k: u32) -> u32 {
        1 << k
    }
    /// CTRL: start the argtopk unit.
    pub const TOPK_START: u32 = 1 << 4;
    /// CTRL: no more keys; the top-k unit selects (after the keys given
    /// through TOPK_KEY_HI or the key stream).
    pub const TOPK_FLUSH: u32 = 1 << 5;
    /// CTRL: route channel c to the started kernel.
    pub const fn channel(c: u32) -> u32 {
        1 << (8 + c)
    }
    /// CTRL: soft reset.
    pub const SOFT_RESET: u32 = 1 << 31;
    /// STATUS: kernel k busy.
    pub const fn k_busy(k: u32) -> u32 {
        1 << k
    }
    /// STATUS: kernel k done (sticky).
    pub const fn k_done(k: u32) -> u32 {
        1 << (2 + k)
    }
    /// STATUS: kernel k takes value rows.
    pub const fn k_vready(k: u32) -> u32 {
        1 << (4 + k)
    }
    /// STATUS: argtopk busy.
    pub const TOPK_BUSY: u32 = 1 << 8;
    /// STATUS: argtopk done (sticky).
    pub const TOPK_DONE: u32 = 1 << 9;
    /// STATUS: a key arrived with the top-k unit full (until the next
    /// TOPK_START).
    pub const TOPK_OVERFLOW: u32 = 1 << 10;
    /// STATUS: some kernel is idle.
    pub const IDLE_VALID: u32 = 1 << 12;
    /// STATUS: the lowest idle kernel.
    pub const IDLE_KERNEL: u32 = 1 << 13;
    /// STATUS: a START hit a busy kernel, or a kernel was fed a short beat
    /// (sticky).
    pub const ERR: u32 = 1 << 16;
}

/// The fields of the read-only CONFIG register.
pub mod config {
    /// `[7:0]`: channels of the instance.
    pub const fn channels(config: u32) -> u32 {
        config & 0xFF
    }
    /// `[11:8]`: attention kernels.
    pub const fn kernels(config: u32) -> u32 {
        (config >> 8) & 0xF
    }
    /// `[15:12]`: GeMV lanes per kernel.
    pub const fn lanes(config: u32) -> u32 {
        (config >> 12) & 0xF
    }
    /// `[31:16]`: keys the top-k unit holds (any k; k ≥ n takes them
    /// all). A 1.0 engine (`ArgTopK<64>`) put its largest k here.
    pub const fn topk_keys(config: u32) -> u32 {
        config >> 16
    }
}

/// What the slave accepts (writes outside these answer SLVERR and change
/// nothing), as the register table of `hdl::engine` states it.
pub mod limit {
    /// Kernels (k ∈ 0..KERNELS).
    pub const KERNELS: u32 = 2;
    /// Channels an instance may have (c ∈ 0..MAX_CHANNELS).
    pub const MAX_CHANNELS: u32 = 16;
    /// 64-bit mask words per channel (w ∈ 0..MASK_WORDS): 256 rows.
    pub const MASK_WORDS: u32 = 4;
    /// Rows a channel's filter addresses.
    pub const MAX_ROWS: u32 = 256;
    /// Head dimension D: a multiple of [`GRANULE`] in `8..=MAX_D`.
    pub const MAX_D: u32 = 256;
    /// Tokens S of one job: `1..=MAX_S`.
    pub const MAX_S: u32 = 8192;
    /// Elements per ROW_LEN / KEEP field (14 bits).
    pub const MAX_ROW_LEN: u32 = (1 << 14) - 1;
    /// D and ROW_LEN are whole 8-element (16-byte) beats.
    pub const GRANULE: u32 = 8;

    /// Whether `d` is a D the slave takes.
    pub const fn d_ok(d: u32) -> bool {
        d >= GRANULE && d <= MAX_D && d.is_multiple_of(GRANULE)
    }
    /// Whether `s` is an S the slave takes.
    pub const fn s_ok(s: u32) -> bool {
        s >= 1 && s <= MAX_S
    }
    /// Whether `len` is a ROW_LEN the slave takes.
    pub const fn row_len_ok(len: u32) -> bool {
        len <= MAX_ROW_LEN && len.is_multiple_of(GRANULE)
    }
}

#[cfg(test)]
extern crate std;

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn id_spells_icsd() {
        assert_eq!(&ID.to_be_bytes(), b"ICSD");
    }

    #[test]
    fn every_register_fits_the_window_and_none_overlap() {
        let mut addrs: Vec<u32> = [
            reg::ID,
            reg::VERSION,
            reg::CONFIG,
            reg::CTRL,
            reg::STATUS,
            reg::ARGTOPK_K,
            reg::TOPK_KEY_LO,
            reg::TOPK_KEY_HI,
            reg::TOPK_RESULT,
            reg::TOPK_COUNT,
            reg::TOPK_RPTR,
        ]
        .into();
        for k in 0..limit::KERNELS {
            addrs.extend([reg::k_d(k), reg::k_s(k), reg::k_scale(k)]);
        }
        for c in 0..limit::MAX_CHANNELS {
            addrs.extend([reg::rows(c), reg::row_len(c), reg::keep(c), reg::route(c)]);
            for w in 0..limit::MASK_WORDS {
                addrs.extend([reg::mask_lo(c, w), reg::mask_hi(c, w)]);
            }
        }
        for &a in &addrs {
            assert_eq!(a % 4, 0, "{a:#x} is word aligned");
            assert!(a < 1 << ADDR_BITS, "{a:#x} fits {ADDR_BITS} bits");
        }
        let n = addrs.len();
        addrs.sort_unstable();
        addrs.dedup();
        assert_eq!(addrs.len(), n, "no two registers share an address");
    }

    #[test]
    fn config_fields_decode() {
        let config = (32768 << 16) | (8 << 12) | (2 << 8) | 4;
        assert_eq!(config::channels(config), 4);
        assert_eq!(config::kernels(config), 2);
        assert_eq!(config::lanes(config), 8);
        assert_eq!(config::topk_keys(config), 32768);
    }

    #[test]
    fn limits_match_the_table() {
        assert!(limit::d_ok(8) && limit::d_ok(256) && limit::d_ok(64));
        assert!(!limit::d_ok(0) && !limit::d_ok(12) && !limit::d_ok(264));
        assert!(limit::s_ok(1) && limit::s_ok(8192));
        assert!(!limit::s_ok(0) && !limit::s_ok(8193));
        assert!(limit::row_len_ok(0) && limit::row_len_ok(16376));
        assert!(!limit::row_len_ok(20) && !limit::row_len_ok(16384));
    }

    #[test]
    fn ctrl_bits_are_distinct_single_bits() {
        let ctrl = [
            bit::k_start(0),
            bit::k_start(1),
            bit::TOPK_START,
            bit::TOPK_FLUSH,
            bit::SOFT_RESET,
        ]
        .into_iter()
        .chain((0..limit::MAX_CHANNELS).map(bit::channel));
        let mut seen = 0u32;
        for b in ctrl {
            assert_eq!(b.count_ones(), 1);
            assert_eq!(seen & b, 0, "{b:#x} used twice");
            seen |= b;
        }
    }
}
