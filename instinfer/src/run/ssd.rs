//! Building the SSD KV backend for the jobs (`run`, `eval`, `bench solid`),
//! and its report lines.

#[cfg(target_os = "linux")]
use host_driver::backend::{AttentionBackend, ModelShape};

use super::RunError;

#[cfg(target_os = "linux")]
use solid_attention::SolidBackend;
pub use solid_attention::SsdSetup;

/// Name of the KV store file of the model at `path` (its file stem), or
/// of the cached SmolLM2.
pub fn kv_name(path: Option<&std::path::Path>) -> String {
    path.and_then(|p| p.file_stem())
        .and_then(|s| s.to_str())
        .map_or_else(|| "smollm2-135m-instruct".to_string(), str::to_string)
}

/// A [`SolidBackend`] for `setup` (see [`SsdSetup::backend`]).
#[cfg(target_os = "linux")]
pub fn ssd_backend(
    setup: &SsdSetup,
    name: &str,
    shape: ModelShape,
    capacity: usize,
    step_tokens: usize,
) -> Result<SolidBackend, RunError> {
    Ok(setup.backend(name, shape, capacity, step_tokens, 1)?)
}

/// Human-readable lines about what the SSD path did over `steps` decode
/// steps (wall time; the drive is real, nothing is simulated).
#[cfg(target_os = "linux")]
pub fn report(b: &SolidBackend, steps: usize) -> Vec<String> {
    let t = b.stats.total();
    let st = b.store();
    let per = steps.max(1) as f64;
    let mut out = vec![format!(
        "KV store: {} ({}), {:.1} MiB of KV at most, DRAM used by the KV path {:.2} MiB at most ({:.1}% of the KV)",
        st.path().map_or("DRAM".into(), |p| p.display().to_string()),
        b.name(),
        st.stats.peak_kv_bytes as f64 / (1 << 20) as f64,
        st.stats.peak_dram_bytes as f64 / (1 << 20) as f64,
        100.0 * st.stats.peak_dram_bytes as f64 / st.stats.peak_kv_bytes.max(1) as f64,
    )];
    if !st.is_dram() {
        out.push(format!(
            "SSD: {:.2} MiB read per token in {:.0} reads; prefetch hit rate {:.1}% ({:.1}% of the scored blocks); blocked on the drive {:.2} ms per token (wall)",
            st.stats.bytes_read as f64 / (1 << 20) as f64 / per,
            st.stats.reads as f64 / per,
            100.0 * t.hit_rate(),
            100.0 * t.dynamic_hit_rate(),
            t.blocking_ns as f64 / 1e6 / per,
        ));
    }
    out
}

/// Off Linux there is no `O_DIRECT` io_uring path.
#[cfg(not(target_os = "linux"))]
pub fn unsupported() -> RunError {
    super::input("--backend ssd needs Linux (O_DIRECT through io_uring)")
}
