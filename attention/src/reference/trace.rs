//! [`TokenTrace`]: an output together with the tokens it attended, so a
//! store can count what a method reads (which pages hold those tokens).

use alloc::vec::Vec;

/// A method's `[g][d]` output and the tokens of the KV group it attended.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenTrace {
    /// `[g][d]` output.
    pub out: Vec<f32>,
    /// The attended tokens, ascending.
    pub tokens: Vec<u32>,
}
