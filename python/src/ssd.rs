//! `open_ssd()`: the SSD block-sparse backend (SolidAttention's KV store
//! on a plain drive or in a directory) as a `Device` with the same calls.

use offload::{AnyBackend, ModelShape, SsdOptions, SsdWorker};
use pyo3::prelude::*;

use crate::device::Device;
use crate::errors::IntoPy;

/// Opens a KV store at `location` (an existing directory, `/dev/nvmeXnY`,
/// or `dram`) for sequences of this shape, `capacity` tokens each, at most
/// `slots` open at once; attention runs on the host (`dense`, or `block`:
/// block-sparse), on the store's own thread as soon as a batch is
/// submitted.
#[pyfunction]
#[pyo3(signature = (location, layers, q_heads, kv_heads, head_dim, capacity, *, slots = 1, block = 32, prefetch = 1, name = "instinfer"))]
#[allow(clippy::too_many_arguments)]
pub fn open_ssd(
    py: Python<'_>,
    location: &str,
    layers: usize,
    q_heads: usize,
    kv_heads: usize,
    head_dim: usize,
    capacity: usize,
    slots: usize,
    block: usize,
    prefetch: usize,
    name: &str,
) -> PyResult<Device> {
    let shape = ModelShape {
        layers,
        q_heads,
        kv_heads,
        head_dim,
    };
    let opts = SsdOptions {
        location: location.to_string(),
        name: name.to_string(),
        capacity,
        slots,
        block,
        prefetch,
    };
    let w = py.detach(|| SsdWorker::open(shape, opts)).py(py)?;
    let path = w.path().map(|p| p.display().to_string());
    Ok(Device::new(AnyBackend::Ssd(w), path))
}
