//! `Device`: one drive or an array of drives opened from the CLI's spec
//! strings (`open()`), or the SSD block-sparse backend (`open_ssd()`),
//! behind the same calls.

use attention::shape::BasisKind;
use offload::{AnyBackend, Drives, KvBackend, Layout, ModelShape, OffloadError, SeqOptions};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::batch::{Pending, Shared, method_spec};
use crate::errors::IntoPy;

/// Drives holding sequences' KV caches and running their decode
/// attention, or the SSD backend (a KV store on a plain drive, attention on
/// the host).
#[derive(Debug)]
#[pyclass(module = "instinfer", frozen)]
pub struct Device {
    shared: Shared<AnyBackend>,
    specs: Vec<String>,
    path: Option<String>,
}

impl Device {
    /// A handle on `backend`.
    pub fn new(backend: AnyBackend, path: Option<String>) -> Self {
        Self {
            specs: backend.specs(),
            shared: Shared::new(backend),
            path,
        }
    }
}

/// Opens drives: `devices` is one spec or a list of them (`sim`,
/// `qemu:zynqmp`, `qemu:zynq7000`, `tcp://HOST:PORT/NQN`, `/dev/ngXnY`,
/// `vfio:<PCI address>`); `count` repeats a single spec.
#[pyfunction]
#[pyo3(signature = (devices = None, count = 1, page_size = 4096))]
pub fn open(
    py: Python<'_>,
    devices: Option<&Bound<'_, PyAny>>,
    count: usize,
    page_size: u32,
) -> PyResult<Device> {
    let specs: Vec<String> = match devices {
        None => vec!["sim".to_string(); count],
        Some(d) => match d.extract::<String>() {
            Ok(s) => vec![s; count],
            Err(_) => {
                if count != 1 {
                    return Err(OffloadError::Invalid(
                        "count goes with a single spec, not a list".into(),
                    ))
                    .py(py);
                }
                d.extract::<Vec<String>>()?
            }
        },
    };
    if count == 0 {
        return Err(OffloadError::Invalid("count must be at least 1".into())).py(py);
    }
    let drives = py.detach(|| Drives::open(&specs, page_size)).py(py)?;
    Ok(Device::new(AnyBackend::Drives(drives), None))
}

fn basis(s: &str) -> Result<BasisKind, OffloadError> {
    match s {
        "raw" => Ok(BasisKind::Raw),
        "pca" => Ok(BasisKind::Pca),
        "balanced" => Ok(BasisKind::Balanced),
        _ => Err(OffloadError::Invalid(format!(
            "unknown basis {s:?} (raw, pca or balanced)"
        ))),
    }
}

#[pymethods]
impl Device {
    /// The drives' specs, in KV-head order (empty for the SSD backend).
    #[getter]
    fn specs(&self) -> Vec<String> {
        self.specs.clone()
    }

    /// The SSD backend's store file (None for drives and in DRAM).
    #[getter]
    fn path(&self) -> Option<String> {
        self.path.clone()
    }

    /// The SSD backend's bytes read from and written to its drive.
    fn io_bytes(&self, py: Python<'_>) -> PyResult<(u64, u64)> {
        self.shared.with(py, |b| b.ssd()?.io_bytes())
    }

    /// Identify of every drive: strings, transfer limit and the InstCSD
    /// capability block (`methods` as names).
    fn identify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let infos = self.shared.with(py, |d| Ok(d.drives()?.identify()))?;
        let list = PyList::empty(py);
        for i in infos {
            let c = &i.caps;
            let d = PyDict::new(py);
            d.set_item("model", &i.model)?;
            d.set_item("serial", &i.serial)?;
            d.set_item("firmware", &i.firmware)?;
            d.set_item("max_transfer", i.max_transfer)?;
            let methods: Vec<&str> = [
                (proto::Method::DENSE, "dense"),
                (proto::Method::SPARF, "sparf"),
                (proto::Method::PAGES, "pages"),
            ]
            .into_iter()
            .filter(|(m, _)| c.supports(*m))
            .map(|(_, n)| n)
            .collect();
            d.set_item("methods", methods)?;
            d.set_item("page_size", c.page_size)?;
            d.set_item("channels", c.channels)?;
            d.set_item("ways", c.ways)?;
            d.set_item("blocks_per_die", c.blocks_per_die)?;
            d.set_item("pages_per_block", c.pages_per_block)?;
            d.set_item("max_head_dim", c.max_head_dim)?;
            d.set_item("max_group", c.max_group)?;
            d.set_item("max_dim_group", c.max_dim_group)?;
            d.set_item("max_kv_heads", c.max_kv_heads)?;
            d.set_item("max_layers", c.max_layers)?;
            d.set_item("max_sequences", c.max_sequences)?;
            d.set_item("max_tokens_per_stream", c.max_tokens_per_stream)?;
            d.set_item("engine_clock_khz", c.engine_clock_khz)?;
            d.set_item("engine_lanes", c.engine_lanes)?;
            d.set_item("dram_budget_bytes", c.dram_budget_bytes)?;
            d.set_item("sketch_widths", c.sketch_widths)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// The statistics log of every drive (counters by name).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let logs = self.shared.with(py, |d| d.drives()?.stats())?;
        let list = PyList::empty(py);
        for l in logs {
            let d = PyDict::new(py);
            for (n, v) in proto::StatsLog::NAMES.iter().zip(l.counters()) {
                d.set_item(*n, v)?;
            }
            list.append(d)?;
        }
        Ok(list)
    }

    /// Each drive's virtual clock in ns (simulated drives; None for real ones).
    fn virtual_clock_ns(&self, py: Python<'_>) -> PyResult<Vec<Option<u64>>> {
        self.shared.with(py, |d| Ok(d.drives()?.virtual_clock_ns()))
    }

    /// Opens a sequence with a model's attention shape (on the SSD
    /// backend: the store's shape, no options).
    #[pyo3(signature = (seq, layers, q_heads, kv_heads, head_dim, *, basis = "raw", layout = "time", dim_group = 1))]
    #[allow(clippy::too_many_arguments)]
    fn open_sequence(
        &self,
        py: Python<'_>,
        seq: u32,
        layers: usize,
        q_heads: usize,
        kv_heads: usize,
        head_dim: usize,
        basis: &str,
        layout: &str,
        dim_group: u8,
    ) -> PyResult<()> {
        let opts = SeqOptions {
            basis: self::basis(basis).py(py)?,
            layout: Layout::parse(layout).py(py)?,
            dim_group,
        };
        let shape = ModelShape {
            layers,
            q_heads,
            kv_heads,
            head_dim,
        };
        self.shared.with(py, |d| d.open_sequence(seq, shape, opts))
    }

    /// Closes a sequence (collecting any pending batch with a step of it).
    fn close_sequence(&self, py: Python<'_>, seq: u32) -> PyResult<()> {
        self.shared.with(py, |d| d.close(seq))
    }

    /// Open sequences.
    fn sequences(&self, py: Python<'_>) -> PyResult<Vec<u32>> {
        self.shared.with(py, |d| Ok(d.sequences()))
    }

    /// Tokens stored in a layer of a sequence.
    fn length(&self, py: Python<'_>, seq: u32, layer: usize) -> PyResult<usize> {
        self.shared.with(py, |d| d.tokens(seq, layer))
    }

    /// Appends a layer's K and V, `[kv_heads, tokens, d]` float16 or
    /// float32; returns the tokens appended.
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

    /// Submits one layer's decode for one sequence (`seqs` an int, q
    /// `[q_heads, d]`) or a batch (`seqs` a list, q `[batch, q_heads, d]`),
    /// with each sequence's new K and V if given; returns a `Pending`.
    #[pyo3(signature = (layer, seqs, q, k_new = None, v_new = None, *, method = "dense", compression = 1.0, sparf = None))]
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
        sparf: Option<(usize, usize, usize)>,
    ) -> PyResult<Pending> {
        let m = method_spec(method, compression, sparf).py(py)?;
        let inputs = self.shared.inputs(py, seqs, q, k_new, v_new)?;
        self.shared.submit(py, layer, inputs, m)
    }

    /// Collects a submitted batch: `(outputs, report)`, outputs float32
    /// shaped as the batch's q.
    fn fetch<'py>(
        &self,
        py: Python<'py>,
        pending: &Pending,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
        self.shared.fetch(py, pending)
    }

    /// `submit` then `fetch`.
    #[pyo3(signature = (layer, seqs, q, k_new = None, v_new = None, *, method = "dense", compression = 1.0, sparf = None))]
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
        sparf: Option<(usize, usize, usize)>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
        let p = self.submit(py, layer, seqs, q, k_new, v_new, method, compression, sparf)?;
        self.shared.fetch(py, &p)
    }

    /// Benchmark helper: seconds per call of `iters` decodes (submit and
    /// fetch, no new token) of `seqs` made in a Rust loop inside this
    /// module, with the arguments `decode` would get. Set beside a Python
    /// loop of `decode`, the difference is the binding's overhead.
    #[pyo3(signature = (layer, seqs, q, iters, *, method = "dense", compression = 1.0))]
    #[allow(clippy::too_many_arguments)]
    fn time_rust_decode(
        &self,
        py: Python<'_>,
        layer: usize,
        seqs: &Bound<'_, PyAny>,
        q: &Bound<'_, PyAny>,
        iters: usize,
        method: &str,
        compression: f64,
    ) -> PyResult<f64> {
        let m = method_spec(method, compression, None).py(py)?;
        let inputs = self.shared.inputs(py, seqs, q, None, None)?;
        self.shared.time_rust(py, layer, inputs, m, iters)
    }

    /// Closes every open sequence.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.shared.with(py, |d| {
            let mut first = Ok(());
            for s in d.sequences() {
                if let Err(e) = d.close(s) {
                    first = first.and(Err(e));
                }
            }
            first
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<&Bound<'_, PyAny>>,
        _v: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        match &self.path {
            _ if !self.specs.is_empty() => format!("<instinfer.Device {:?}>", self.specs),
            Some(p) => format!("<instinfer.Device SSD store {p:?}>"),
            None => "<instinfer.Device SSD store in DRAM>".into(),
        }
    }
}
