//! [`SsdSetup`]: the command line's view of the SSD KV path — where the
//! store goes (a directory, a raw namespace, or DRAM for comparison), the
//! block size, the budget and the prefetch — turned into a
//! [`SolidBackend`].

use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
use attention::shape::BlockParams;

#[cfg(target_os = "linux")]
use super::{KvStore, Layout, SolidBackend, SolidOptions};
#[cfg(target_os = "linux")]
use host_driver::backend::{BackendError, ModelShape};

/// When reads are issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefetch {
    /// Only after the selection: every read blocks the layer.
    Off,
    /// Speculatively, this many layers ahead (1 is enough to hide the I/O
    /// when the drive is fast enough).
    Ahead(usize),
}

/// How many tokens a block-sparse step attends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// What the step's method says (the policy's compression).
    Method,
    /// SolidAttention's default: 1024 tokens from 4096 on, 25% below.
    Default,
    /// A fixed number of tokens.
    Tokens(usize),
}

/// Where the KV store lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvLocation {
    /// `DIR/<model>.kv`, one file per model.
    Dir(PathBuf),
    /// A raw namespace's block device (`/dev/nvmeXnY`), overwritten.
    Raw(PathBuf),
    /// DRAM (the in-memory baseline).
    Dram,
}

/// Settings of the SSD KV path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsdSetup {
    /// Where.
    pub location: KvLocation,
    /// Tokens per block.
    pub block: usize,
    /// Tokens attended per step.
    pub budget: Budget,
    /// Speculative prefetch.
    pub prefetch: Prefetch,
    /// Unneeded blocks read through to merge two reads (see
    /// [`SolidOptions::merge_gap`]).
    pub merge_gap: usize,
}

impl SsdSetup {
    /// SolidAttention's defaults in `dir`: blocks of 32, its budget rule,
    /// prefetch one layer ahead.
    pub fn in_dir(dir: PathBuf) -> Self {
        Self {
            location: KvLocation::Dir(dir),
            block: 32,
            budget: Budget::Default,
            prefetch: Prefetch::Ahead(1),
            merge_gap: 2,
        }
    }

    /// The store file (none in DRAM).
    pub fn path(&self, model: &str) -> Option<PathBuf> {
        match &self.location {
            KvLocation::Dir(d) => Some(d.join(format!("{model}.kv"))),
            KvLocation::Raw(p) => Some(p.clone()),
            KvLocation::Dram => None,
        }
    }

    /// A backend for `model` of `shape`: room for `capacity` tokens per
    /// sequence in `seq_slots` sequences; one step reads at most
    /// `step_tokens` tokens per KV head (sizes the read buffers; the
    /// dense method needs `capacity`).
    #[cfg(target_os = "linux")]
    pub fn backend(
        &self,
        model: &str,
        shape: ModelShape,
        capacity: usize,
        step_tokens: usize,
        seq_slots: usize,
    ) -> Result<SolidBackend, BackendError> {
        let layout = Layout::new(shape, self.block, capacity, seq_slots)?;
        let step = match self.budget {
            Budget::Tokens(t) => t.min(capacity),
            Budget::Default => BlockParams::default_for(capacity).budget.max(1023),
            Budget::Method => step_tokens,
        }
        .max(step_tokens)
        .min(layout.capacity_tokens())
        .div_ceil(self.block)
            + 1;
        // Room for the gaps read through (at most one gap run per needed
        // block), never more than the whole sequence.
        let max_blocks = (step * (1 + self.merge_gap.min(1))).min(layout.capacity + 1);
        let opts = SolidOptions {
            prefetch: self.prefetch,
            budget: self.budget,
            max_blocks,
            merge_gap: self.merge_gap,
        };
        let store = match self.path(model) {
            None => KvStore::dram(layout),
            Some(p) => {
                if let KvLocation::Dir(d) = &self.location {
                    std::fs::create_dir_all(d).map_err(|e| {
                        BackendError::Storage(format!("creating {}: {e}", d.display()))
                    })?;
                }
                let slots = SolidBackend::read_slots_for(opts, shape.kv_heads);
                KvStore::create(&p, layout, slots)?
            }
        };
        SolidBackend::new(store, opts)
    }
}

/// `--budget`: `auto` (SolidAttention's rule) or a token count.
pub fn parse_budget(s: &str) -> Result<Budget, String> {
    match s.trim() {
        "auto" => Ok(Budget::Default),
        n => n
            .parse::<usize>()
            .ok()
            .filter(|&n| n >= 2)
            .map(Budget::Tokens)
            .ok_or_else(|| format!("--budget {s:?}: `auto` or a token count ≥ 2 blocks")),
    }
}

/// `--prefetch`: `off` or how many layers ahead (1–4).
pub fn parse_prefetch(s: &str) -> Result<Prefetch, String> {
    match s.trim() {
        "off" | "0" => Ok(Prefetch::Off),
        n => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=4).contains(n))
            .map(Prefetch::Ahead)
            .ok_or_else(|| format!("--prefetch {s:?}: `off` or 1..4 layers ahead")),
    }
}

/// The block device of a namespace path: `/dev/ngXnY` → `/dev/nvmeXnY`
/// (the char device cannot do `O_DIRECT` reads); other paths unchanged.
pub fn block_device_of(ns: &Path) -> PathBuf {
    match ns.file_name().and_then(|n| n.to_str()) {
        Some(n) if n.starts_with("ng") => ns.with_file_name(format!("nvme{}", &n[2..])),
        _ => ns.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        assert_eq!(parse_budget("auto"), Ok(Budget::Default));
        assert_eq!(parse_budget("512"), Ok(Budget::Tokens(512)));
        assert!(parse_budget("x").is_err());
        assert_eq!(parse_prefetch("off"), Ok(Prefetch::Off));
        assert_eq!(parse_prefetch("2"), Ok(Prefetch::Ahead(2)));
        assert!(parse_prefetch("9").is_err());
        assert_eq!(
            block_device_of(Path::new("/dev/ng0n1")),
            PathBuf::from("/dev/nvme0n1")
        );
        assert_eq!(
            block_device_of(Path::new("/dev/nvme1n2")),
            PathBuf::from("/dev/nvme1n2")
        );
    }
}
