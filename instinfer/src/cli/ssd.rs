//! The options of the SSD KV path shared by `run` and `eval`:
//! `--kv-dir`, `--budget`, `--block`, `--prefetch`.

use std::path::PathBuf;

use instinfer::RunError;
use solid_attention::setup::{parse_budget, parse_prefetch};
use solid_attention::{Budget, KvLocation, Prefetch, SsdSetup};

/// SSD KV store options.
#[derive(Debug, clap::Args)]
pub struct SsdArgs {
    /// Directory of the SSD KV store (one file per model; `--backend ssd`).
    /// Default: `instinfer/kv` in the user's cache directory. Must be on a
    /// file system that does O_DIRECT (not tmpfs).
    #[arg(long)]
    kv_dir: Option<PathBuf>,
    /// Tokens the block-sparse method attends per step: `auto` (1024 from
    /// 4096 tokens on, a quarter of the context below; in `eval`, the
    /// compression's budget) or a count.
    #[arg(long, value_parser = parse_budget)]
    budget: Option<Budget>,
    /// Tokens per block of the block-sparse method and the store.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=4096))]
    block: u16,
    /// Speculative prefetch: `off`, or how many layers ahead (1–4).
    #[arg(long, default_value = "1", value_parser = parse_prefetch)]
    prefetch: Prefetch,
    /// Unneeded blocks read through between two needed ones to make one
    /// read of two (0–8; pays on drives limited by IOPS).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=8))]
    merge_gap: u8,
}

impl SsdArgs {
    /// The setup; `auto` budget means `auto_budget`.
    pub fn setup(&self, auto_budget: Budget) -> Result<SsdSetup, RunError> {
        let dir = match &self.kv_dir {
            Some(d) => d.clone(),
            None => model::fetch::cache_dir()?
                .parent()
                .map(|p| p.join("kv"))
                .ok_or_else(|| RunError::Input("no cache directory for the KV store".into()))?,
        };
        Ok(SsdSetup {
            location: KvLocation::Dir(dir),
            block: self.block as usize,
            budget: self.budget.unwrap_or(auto_budget),
            prefetch: self.prefetch,
            merge_gap: self.merge_gap as usize,
        })
    }
}
