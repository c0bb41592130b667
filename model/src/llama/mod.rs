//! The llama family: `llama` (SmolLM2), `qwen2`, `qwen3` and `gemma3`: config,
//! weights, the forward pass and the `Attention` seam through which decode
//! attention leaves the host.

mod arch;
mod attention;
mod causal;
mod config;
mod dense;
mod forward;
mod model;
mod ops;
mod weights;

#[cfg(test)]
mod arch_tests;
#[cfg(test)]
mod gemma_tests;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tiny;

pub use arch::{Arch, RopeStyle};
pub use attention::{Attention, AttentionFailure, Logits};
pub use config::Config;
pub use dense::{DenseCache, attend_group, attend_one};
pub use model::Model;
