//! The real-valued accuracy reference: what the attention *means*, against
//! which the integer engine's error is measured. One KV group at a time:
//! `q` is `[g][d]` row-major, `K` and `V` are `[S][d]`, the output `[g][d]`.
//!
//! Inputs and outputs are f32; internally everything is computed in f64
//! (softmax is max-subtracted), so the reference's own rounding is far below
//! the engine's. Degenerate cases follow the engine's conventions: a query
//! with no |q| mass on the chosen dims gets approximate scale 0 (uniform
//! approximate scores), and the approximate scale is capped at 16.

mod basis;
mod block;
mod common;
mod dense;
mod heads;
mod sparse;
mod trace;
mod window;

pub use basis::Basis;
pub use block::{
    REPS, block_score, block_select, block_sparse, block_sparse_traced, fixed_blocks,
    representative_keys, representatives, select_blocks,
};
pub use dense::dense;
pub use heads::attend_heads;
pub use sparse::{
    SparqTrace, SparseSelection, SparseTrace, oracle, oracle_traced, sparf, sparf_finish,
    sparf_plus, sparf_select, sparf_select_guarded, sparf_traced, sparq, sparq_traced,
};
pub use trace::TokenTrace;
pub use window::{H2o, local, local_traced};
