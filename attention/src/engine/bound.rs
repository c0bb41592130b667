//! The engine's practical error bound against the f32/f64 reference on the
//! same fp16 inputs (derivation and measurements in the module docs of
//! [`crate::engine`]). Device tests assert outputs with these numbers.

/// ε of the dense bound.
pub const DENSE_EPS: f64 = 1e-4;
/// ε of the SparF bound (same token selection as the reference).
pub const SPARF_EPS: f64 = 2e-4;
/// |α_engine − α_reference| ≤ this.
pub const ALPHA_EPS: f64 = 1e-4;
/// Rounding of fp16 values and outputs to Q14: 2^−13 (with margin).
pub const ROUNDING: f64 = 1.0 / 8192.0;

/// The bound on |engine − reference| per output element:
/// `eps · max|V| + 2^−13`.
pub fn error_bound(eps: f64, max_abs_v: f64) -> f64 {
    eps * max_abs_v + ROUNDING
}
