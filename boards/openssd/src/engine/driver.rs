//! [`HwEngine`]: a register-level driver of the attention engine's
//! AXI4-Lite slave (map: `engine-regs`; behaviour: `hdl::engine`).
//!
//! It identifies the engine (ID, VERSION, CONFIG), programs a kernel's D,
//! S and SCALE, loads a channel's NFC filter (geometry and the
//! [`RowFilter`] mask words, low half then the committing high half),
//! starts kernels with their channel routes and the argtopk unit, and
//! polls STATUS. Every value is checked against what the slave accepts
//! before it is written, so a driver error never becomes a silent SLVERR.

use alloc::vec::Vec;

use engine_regs::{bit, config, limit, reg};
use firmware::hal::{FILTER_BEAT_BYTES, RowFilter};

use super::error::EngineError;
use crate::mmio::Regs;

/// What CONFIG says about the instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// NFC channels wired to the engine.
    pub channels: u32,
    /// Attention kernels.
    pub kernels: u32,
    /// GeMV lanes per kernel.
    pub lanes: u32,
    /// Keys the top-k unit holds (any k), 0 for a 1.0 engine, whose
    /// `ArgTopK<64>` had no register path for keys.
    pub topk_keys: u32,
}

/// One kernel job's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelJob {
    /// Head dimension (8..=256, a multiple of 8).
    pub d: u32,
    /// Tokens the job keeps (1..=8192).
    pub s: u32,
    /// Logit scale (Q16), `attention::engine::dense_scale(d)` for dense
    /// attention.
    pub scale: u32,
}

/// The first VERSION with the top-k key and result registers.
pub const TOPK_REGS_VERSION: u32 = 0x0001_0001;

/// The largest k ARGTOPK_K holds.
pub const MAX_K: u32 = 0xFFFF;

/// Default spin budget of [`HwEngine::wait`] (STATUS reads).
pub const DEFAULT_SPINS: u32 = 10_000_000;

/// The engine behind a register window; see the module docs.
#[derive(Debug)]
pub struct HwEngine<R> {
    regs: R,
    config: EngineConfig,
    spins: u32,
}

/// The two 32-bit halves of each mask word of `filter`, in the order the
/// slave takes them: word w's LO holds rows 64w..64w+31, its HI rows
/// 64w+32..64w+63 and commits the word.
pub fn mask_halves(filter: &RowFilter) -> [(u32, u32); limit::MASK_WORDS as usize] {
    core::array::from_fn(|w| {
        let m = filter.mask[w];
        (m as u32, (m >> 32) as u32)
    })
}

impl<R: Regs> HwEngine<R> {
    /// Identifies the engine behind `regs`: ID must read "ICSD" and
    /// VERSION's major number must be this driver's.
    pub fn probe(mut regs: R) -> Result<Self, EngineError> {
        let id = regs.read32(reg::ID as usize);
        if id != engine_regs::ID {
            return Err(EngineError::NotAnEngine { id });
        }
        let version = regs.read32(reg::VERSION as usize);
        if version >> 16 != engine_regs::VERSION >> 16 {
            return Err(EngineError::Version { version });
        }
        let c = regs.read32(reg::CONFIG as usize);
        let config = EngineConfig {
            channels: config::channels(c),
            kernels: config::kernels(c),
            lanes: config::lanes(c),
            topk_keys: if version >= TOPK_REGS_VERSION {
                config::topk_keys(c)
            } else {
                0
            },
        };
        if config.channels == 0
            || config.channels > limit::MAX_CHANNELS
            || config.kernels == 0
            || config.kernels > limit::KERNELS
        {
            return Err(EngineError::Config { config: c });
        }
        Ok(Self {
            regs,
            config,
            spins: DEFAULT_SPINS,
        })
    }

    /// Sets the spin budget of [`Self::wait`].
    pub fn with_spins(mut self, spins: u32) -> Self {
        self.spins = spins.max(1);
        self
    }

    /// The instance.
    pub fn config(&self) -> EngineConfig {
        self.config
    }

    /// The registers (tests inspect the model behind them).
    pub fn regs_mut(&mut self) -> &mut R {
        &mut self.regs
    }

    /// STATUS.
    pub fn status(&mut self) -> u32 {
        self.regs.read32(reg::STATUS as usize)
    }

    /// The lowest idle kernel, if any.
    pub fn idle_kernel(&mut self) -> Option<u32> {
        let s = self.status();
        (s & bit::IDLE_VALID != 0).then_some(u32::from(s & bit::IDLE_KERNEL != 0))
    }

    fn check_kernel(&self, k: u32) -> Result<(), EngineError> {
        if k < self.config.kernels {
            Ok(())
        } else {
            Err(EngineError::NoSuchKernel(k))
        }
    }

    fn check_channel(&self, c: u32) -> Result<(), EngineError> {
        if c < self.config.channels {
            Ok(())
        } else {
            Err(EngineError::NoSuchChannel(c))
        }
    }

    /// Writes kernel `k`'s D, S and SCALE.
    pub fn program_kernel(&mut self, k: u32, job: KernelJob) -> Result<(), EngineError> {
        self.check_kernel(k)?;
        if !limit::d_ok(job.d) {
            return Err(EngineError::BadD(job.d));
        }
        if !limit::s_ok(job.s) {
            return Err(EngineError::BadS(job.s));
        }
        self.regs.write32(reg::k_d(k) as usize, job.d);
        self.regs.write32(reg::k_s(k) as usize, job.s);
        self.regs.write32(reg::k_scale(k) as usize, job.scale);
        Ok(())
    }

    /// Loads channel `c`'s filter for the next page: ROWS, ROW_LEN and
    /// KEEP (in fp16 elements), then the four mask words.
    pub fn load_filter(&mut self, c: u32, filter: &RowFilter) -> Result<(), EngineError> {
        self.check_channel(c)?;
        let rows = u32::from(filter.rows);
        let row_bytes = u32::from(filter.row_bytes);
        let keep_bytes = u32::from(filter.keep_bytes);
        let row_len = row_bytes / 2;
        let ok = rows <= limit::MAX_ROWS
            && row_bytes % FILTER_BEAT_BYTES as u32 == 0
            && limit::row_len_ok(row_len)
            && keep_bytes <= row_bytes
            && keep_bytes % 2 == 0;
        if !ok {
            return Err(EngineError::BadFilter {
                rows: filter.rows,
                row_bytes: filter.row_bytes,
                keep_bytes: filter.keep_bytes,
            });
        }
        self.regs.write32(reg::rows(c) as usize, rows);
        self.regs.write32(reg::row_len(c) as usize, row_len);
        self.regs.write32(reg::keep(c) as usize, keep_bytes / 2);
        for (w, (lo, hi)) in mask_halves(filter).into_iter().enumerate() {
            self.regs.write32(reg::mask_lo(c, w as u32) as usize, lo);
            self.regs.write32(reg::mask_hi(c, w as u32) as usize, hi);
        }
        Ok(())
    }

    /// Starts kernel `k` with the channels of `channels` (bit c = channel
    /// c) routed to it. Refused while `k` is busy (the slave would set
    /// STATUS.ERR).
    pub fn start(&mut self, k: u32, channels: u32) -> Result<(), EngineError> {
        self.check_kernel(k)?;
        let all = if self.config.channels >= 32 {
            u32::MAX
        } else {
            (1 << self.config.channels) - 1
        };
        if channels & !all != 0 {
            return Err(EngineError::NoSuchChannel(
                31 - (channels & !all).leading_zeros(),
            ));
        }
        if self.status() & bit::k_busy(k) != 0 {
            return Err(EngineError::Busy(k));
        }
        let mut ctrl = bit::k_start(k);
        for c in 0..self.config.channels {
            if channels & 1 << c != 0 {
                ctrl |= bit::channel(c);
            }
        }
        self.regs.write32(reg::CTRL as usize, ctrl);
        Ok(())
    }

    /// Starts the top-k unit for the top `k` keys (1..=0xFFFF, the
    /// ARGTOPK_K field; keys then come from the stream port or
    /// [`Self::push_key`]).
    pub fn start_topk(&mut self, k: u32) -> Result<(), EngineError> {
        if k == 0 || k > MAX_K {
            return Err(EngineError::TopKTooLarge { k, max: MAX_K });
        }
        self.regs.write32(reg::ARGTOPK_K as usize, k);
        self.regs.write32(reg::CTRL as usize, bit::TOPK_START);
        Ok(())
    }

    /// Hands one key to the top-k unit through TOPK_KEY_LO/HI.
    pub fn push_key(&mut self, key: u64) {
        self.regs.write32(reg::TOPK_KEY_LO as usize, key as u32);
        self.regs
            .write32(reg::TOPK_KEY_HI as usize, (key >> 32) as u32);
    }

    /// The indices of the `k` largest `keys`, ascending, ties to the lower
    /// index (`attention::engine::argtopk`), selected by the engine's top-k
    /// unit: the keys go in through the key registers, the result comes
    /// back through TOPK_COUNT and TOPK_RESULT. Refused without changing
    /// `out` when the unit cannot hold the keys; a unit that overflows or
    /// takes another count than min(k, n) is a hardware error.
    pub fn top_k(&mut self, keys: &[u64], k: usize, out: &mut Vec<u32>) -> Result<(), EngineError> {
        let max = self.config.topk_keys;
        let n = u32::try_from(keys.len())
            .ok()
            .filter(|&n| n <= max)
            .ok_or(EngineError::TooManyKeys { n: keys.len(), max })?;
        out.clear();
        if k == 0 {
            return Ok(());
        }
        // k ≥ n takes every key; n ≤ the capacity fits ARGTOPK_K's 16 bits.
        let k = u32::try_from(k)
            .unwrap_or(u32::MAX)
            .min(n.max(1))
            .min(MAX_K);
        self.start_topk(k)?;
        for &key in keys {
            self.push_key(key);
        }
        self.regs.write32(reg::CTRL as usize, bit::TOPK_FLUSH);
        let status = self.wait(bit::TOPK_DONE)?;
        if status & bit::TOPK_OVERFLOW != 0 {
            return Err(EngineError::Hardware { status });
        }
        let count = self.regs.read32(reg::TOPK_COUNT as usize);
        if count != k.min(n) {
            return Err(EngineError::TopKCount {
                count,
                want: k.min(n),
            });
        }
        self.regs.write32(reg::TOPK_RPTR as usize, 0);
        out.reserve(count as usize);
        for _ in 0..count {
            out.push(self.regs.read32(reg::TOPK_RESULT as usize));
        }
        Ok(())
    }

    /// Polls STATUS until any bit of `bits` is set; returns STATUS.
    /// STATUS.ERR (sticky) is an error.
    pub fn wait(&mut self, bits: u32) -> Result<u32, EngineError> {
        for _ in 0..self.spins {
            let s = self.status();
            if s & bit::ERR != 0 {
                return Err(EngineError::Hardware { status: s });
            }
            if s & bits != 0 {
                return Ok(s);
            }
        }
        Err(EngineError::Timeout { bits })
    }

    /// SOFT_RESET: every RW register, route and sticky bit back to reset
    /// (a running kernel is not aborted; see `hdl::engine`).
    pub fn soft_reset(&mut self) {
        self.regs.write32(reg::CTRL as usize, bit::SOFT_RESET);
    }
}
