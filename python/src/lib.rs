//! `instinfer._native`: the Python package's native module. Each class
//! wraps one type of the `offload` crate and adds only what Python needs:
//! NumPy arrays in and out, exceptions, and the GIL released while a drive
//! works. The pure-Python package (`python/instinfer/`) re-exports it.
//!
//! | module | owns |
//! | --- | --- |
//! | [`errors`] | the exception classes and the mapping of `OffloadError` onto them |
//! | [`arrays`] | float16/float32 arrays in, shapes checked; float32 arrays out |
//! | [`batch`] | a decode batch from arrays, its outputs and reports back |
//! | [`device`] | `Device`: drives from spec strings, or the SSD backend, behind the same calls |
//! | [`ssd`] | `open_ssd()`: the SSD block-sparse backend as a `Device` |
#![forbid(unsafe_code)]

mod arrays;
mod batch;
mod device;
mod errors;
mod ssd;

use pyo3::prelude::*;

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<device::Device>()?;
    m.add_class::<batch::Pending>()?;
    m.add_function(wrap_pyfunction!(device::open, m)?)?;
    m.add_function(wrap_pyfunction!(ssd::open_ssd, m)?)?;
    m.add_function(wrap_pyfunction!(methods, m)?)?;
    m.add_function(wrap_pyfunction!(error_bound, m)?)?;
    m.add("DENSE_EPS", attention::engine::DENSE_EPS)?;
    m.add("SPARF_EPS", attention::engine::SPARF_EPS)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// Every method name with one line on what it does and reads.
#[pyfunction]
fn methods() -> Vec<(&'static str, &'static str)> {
    host_driver::policy::Selection::ALL
        .iter()
        .map(|s| (s.name(), s.describe()))
        .collect()
}

/// The engine's bound on |drive − reference| per output element against
/// a float64 reference on the same fp16 inputs: `eps · max|V| + 2^−13`
/// (`eps` is `DENSE_EPS` for dense, `SPARF_EPS` for SparF on the same
/// selection).
#[pyfunction]
fn error_bound(eps: f64, max_abs_v: f64) -> f64 {
    attention::engine::error_bound(eps, max_abs_v)
}
