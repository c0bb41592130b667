//! Running the model with its decode attention on an [`AttentionBackend`](crate::backend::AttentionBackend):
//! the adapter between `model::Attention` and a backend, a recorder that
//! keeps a prompt's KV to replay it into several backends, and the greedy
//! choice of the next token.

mod adapter;
mod layer_plan;
mod recorder;
#[cfg(test)]
mod window_tests;

pub use adapter::BackendAttention;
pub use layer_plan::LayerPlan;
pub use recorder::KvRecorder;

/// Index of the largest logit (ties → lower index).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &x) in logits.iter().enumerate() {
        if x > logits[best] {
            best = i;
        }
    }
    best as u32
}
