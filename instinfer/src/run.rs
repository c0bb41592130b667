//! The CLI's jobs as library functions, so tests and benches call exactly
//! what `instinfer` runs:
//!
//! | module | job |
//! | --- | --- |
//! | [`attend`] | one decode step on `.npy` inputs, with the step's device counters |
//! | [`demo`] | a multi-layer, multi-sequence decode loop checked against the host reference |
//! | [`bench`](mod@bench) | host dense vs in-storage dense vs in-storage SparF |
//! | `bench_solid` | SolidAttention with the real model: KV in DRAM vs on the SSD with and without prefetch vs dense SSD offload, and a random-read probe (Linux) |
//! | [`bench_model`] | prefill and decode tokens/s of the real model, host vs simulated CSD (and against llama.cpp) |
//! | [`bench_llama`] | llama.cpp as `bench model`'s yardstick: its venv, the embedded script, request and reply |
//! | [`bench_gc`] | garbage collection under a serving mix: greedy vs cost-benefit victims, and a drive that never collects |
//! | [`bench_soak`] | days of virtual service: Poisson arrivals on a drive filled to 90 %, NAND faults and power cuts, every output checked |
//! | [`bench_journal`] | the power-loss journal's virtual-time cost per command, journal on against off |
//! | [`bench_nand`] | the simulated NAND schedule against each die's queue depth, cache read off and on |
//! | [`eval`] | perplexity of the model per attention method and compression |
//! | [`passkey`] | passkey retrieval: whether each method finds a key hidden deep in a long prompt |
//! | [`flexgen_probe`] | FlexGen's disk → host rate on this machine, for `bench paper` |
//! | [`generate`] | `instinfer run`: text generation with attention in the drive |
//! | [`bench_seqs`] | `bench paper --figure seqs`: sequences in flight per CSD, where the time per sequence stops falling |
//! | [`csd_points`] | `bench paper`'s table of simulated CSD points: busy fractions, bound, SparF against dense |
//! | [`plot`] | the evaluation's perplexity-vs-compression chart |
//! | [`ssd`] | the SSD KV backend (SolidAttention) for `run`, `eval` and `bench solid` |
//! | [`sim`] | building arrays of simulated drives (or of any device a spec names) |
//!
//! Every job reports **wall** time (host clock) and **virtual** time (the
//! simulator's modelled device time) separately, labelled as such.

pub mod attend;
pub mod bench;
pub mod bench_fabric;
pub mod bench_gc;
pub mod bench_host;
pub mod bench_journal;
pub mod bench_llama;
pub mod bench_model;
pub mod bench_nand;
pub mod bench_p2p;
pub mod bench_paper;
pub mod bench_seqs;
pub mod bench_soak;
#[cfg(target_os = "linux")]
pub mod bench_solid;
pub mod cancel;
pub mod csd_points;
pub mod demo;
pub mod eval;
pub mod flexgen_probe;
pub mod generate;
pub mod passkey;
pub mod plot;
pub(crate) mod serving_mix;
pub mod sim;
pub mod ssd;

use host_driver::csd::CsdError;

use crate::error::{RunError, input};

/// A SEQ_OPEN refusal is about the user's shape (too many heads, a head
/// dimension the page layout cannot filter, ...): bad input, not a device
/// failure.
pub(crate) fn open_error(e: CsdError) -> RunError {
    match e {
        CsdError::Status {
            command: "SEQ_OPEN",
            ..
        } => input(format!("the drive refuses this sequence shape ({e})")),
        other => other.into(),
    }
}

/// Checks a shape against the drive's advertised limits; `kv_per_device`
/// is the most KV heads one drive of the array holds.
pub(crate) fn check_caps(
    caps: &proto::CapabilityBlock,
    kv_per_device: usize,
    group: usize,
    d: usize,
    dim_group: u8,
) -> Result<(), RunError> {
    let limits = [
        (
            "KV heads per drive",
            kv_per_device,
            usize::from(caps.max_kv_heads),
        ),
        (
            "query heads per KV head",
            group,
            usize::from(caps.max_group),
        ),
        ("head dimension", d, usize::from(caps.max_head_dim)),
        (
            "dim group",
            usize::from(dim_group),
            usize::from(caps.max_dim_group),
        ),
    ];
    for (what, got, max) in limits {
        if got > max {
            return Err(input(format!(
                "{what} {got} exceeds the drive's limit of {max}"
            )));
        }
    }
    Ok(())
}

/// Checks a flash page size the simulator supports.
pub fn check_page_size(page_size: u32) -> Result<(), RunError> {
    match page_size {
        4096 | 16384 => Ok(()),
        other => Err(input(format!(
            "page size {other} not supported (use 4096 or 16384)"
        ))),
    }
}

#[cfg(test)]
mod tests;
