//! The llama architecture (SmolLM2): config, weights, the forward pass and
//! the `Attention` seam through which decode attention leaves the host.

mod attention;
mod config;
mod dense;
mod forward;
mod model;
mod ops;
mod weights;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tiny;

pub use attention::{Attention, AttentionFailure, Logits};
pub use config::Config;
pub use dense::DenseCache;
pub use model::Model;
