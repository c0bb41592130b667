//! `--guard-alpha`, `--guard-cap`, `--guard-share`: the knobs of SparF+'s
//! guardrail (the `sparf-guard` and `sparf-pca-guard` methods).

use clap::Args;

use host_driver::policy::GuardSetting;
use instinfer::RunError;

/// The guardrail's command-line knobs.
#[derive(Args, Debug, Clone)]
pub struct GuardArgs {
    /// Guarded methods: widen k while some query head's approximate mass
    /// on its chosen tokens (α) is below this, 0..=1.
    #[arg(long, default_value_t = GuardSetting::DEFAULT.alpha_min)]
    guard_alpha: f64,
    /// Guarded methods: the most bytes a step may read, as a multiple of
    /// the compression's budget (≥ 1).
    #[arg(long, default_value_t = GuardSetting::DEFAULT.cap)]
    guard_cap: f64,
    /// Guarded methods: the nominal k as a share of SparF's, (0, 1].
    #[arg(long, default_value_t = GuardSetting::DEFAULT.k_share)]
    guard_share: f64,
    /// SparF, SparF+ and pages: move tokens (pages) between layers by how
    /// much each layer's selection misses on the prompt (same bytes per
    /// step).
    #[arg(long)]
    pub per_layer: bool,
}

impl GuardArgs {
    /// The checked setting.
    pub fn setting(&self) -> Result<GuardSetting, RunError> {
        let s = GuardSetting {
            alpha_min: self.guard_alpha,
            cap: self.guard_cap,
            k_share: self.guard_share,
        };
        s.validate().map_err(RunError::Input)?;
        Ok(s)
    }
}
