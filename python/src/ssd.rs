//! `SsdStore`: the SSD block-sparse backend (SolidAttention's KV store on
//! a plain drive or in a directory), the same calls as `Device`.

use offload::{ModelShape, SsdOptions, SsdWorker};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::batch::{Pending, Shared, method_spec};

/// A KV store on a plain SSD; attention runs on the host, block-sparse
/// (`block`) or `dense`.
#[derive(Debug)]
#[pyclass(module = "instinfer", frozen)]
pub struct SsdStore {
    shared: Shared<SsdWorker>,
    path: Option<String>,
}

#[pymethods]
impl SsdStore {
    /// A store at `location` (an existing directory, `/dev/nvmeXnY`, or
    /// `dram`) for sequences of this shape, `capacity` tokens each, at
    /// most `slots` open at once.
    #[new]
    #[pyo3(signature = (location, layers, q_heads, kv_heads, head_dim, capacity, *, slots = 1, block = 32, prefetch = 1, name = "instinfer"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
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
    ) -> PyResult<Self> {
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
        let w = py.detach(|| SsdWorker::open(shape, opts));
        let w = crate::errors::IntoPy::py(w, py)?;
        let path = w.path().map(|p| p.display().to_string());
        Ok(Self {
            shared: Shared::new(w),
            path,
        })
    }

    /// The store file (None in DRAM).
    #[getter]
    fn path(&self) -> Option<String> {
        self.path.clone()
    }

    /// Bytes read from and written to the drive so far.
    fn io_bytes(&self, py: Python<'_>) -> PyResult<(u64, u64)> {
        self.shared.with(py, |w| w.io_bytes())
    }

    /// Opens a sequence (every sequence has the store's shape).
    fn open_sequence(&self, py: Python<'_>, seq: u32) -> PyResult<()> {
        self.shared.with(py, |w| w.open_sequence(seq))
    }

    /// Closes a sequence.
    fn close_sequence(&self, py: Python<'_>, seq: u32) -> PyResult<()> {
        self.shared.with(py, |w| offload::KvBackend::close(w, seq))
    }

    /// Tokens stored in a layer of a sequence.
    fn length(&self, py: Python<'_>, seq: u32, layer: usize) -> PyResult<usize> {
        self.shared
            .with(py, |w| offload::KvBackend::tokens(w, seq, layer))
    }

    /// Appends a layer's K and V, `[kv_heads, tokens, d]`.
    fn append(
        &self,
        py: Python<'_>,
        seq: u32,
        layer: usize,
        k: &Bound<'_, PyAny>,
        v: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        self.shared.append(py, seq, layer, k, v)
    }

    /// As `Device.submit`; methods `dense` and `block`. The store starts
    /// on the batch at once, on its own thread.
    #[pyo3(signature = (layer, seqs, q, k_new = None, v_new = None, *, method = "block", compression = 0.125))]
    #[allow(clippy::too_many_arguments)]
    fn submit(
        &self,
        py: Python<'_>,
        layer: usize,
        seqs: &Bound<'_, PyAny>,
        q: &Bound<'_, PyAny>,
        k_new: Option<&Bound<'_, PyAny>>,
        v_new: Option<&Bound<'_, PyAny>>,
        method: &str,
        compression: f64,
    ) -> PyResult<Pending> {
        let m = crate::errors::IntoPy::py(method_spec(method, compression, None), py)?;
        let inputs = self.shared.inputs(py, seqs, q, k_new, v_new)?;
        self.shared.submit(py, layer, inputs, m)
    }

    /// As `Device.fetch`.
    fn fetch<'py>(
        &self,
        py: Python<'py>,
        pending: &Pending,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
        self.shared.fetch(py, pending)
    }

    /// `submit` then `fetch`.
    #[pyo3(signature = (layer, seqs, q, k_new = None, v_new = None, *, method = "block", compression = 0.125))]
    #[allow(clippy::too_many_arguments)]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        layer: usize,
        seqs: &Bound<'_, PyAny>,
        q: &Bound<'_, PyAny>,
        k_new: Option<&Bound<'_, PyAny>>,
        v_new: Option<&Bound<'_, PyAny>>,
        method: &str,
        compression: f64,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
        let p = self.submit(py, layer, seqs, q, k_new, v_new, method, compression)?;
        self.shared.fetch(py, &p)
    }

    fn __repr__(&self) -> String {
        format!(
            "<instinfer.SsdStore {:?}>",
            self.path.as_deref().unwrap_or("dram")
        )
    }
}
