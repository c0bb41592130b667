//! The calls every `Device` makes once a sequence is open (append,
//! submit, fetch, decode), written over `offload::KvBackend`, and
//! `Pending`, a submitted batch.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use attention::shape::SparseParams;
use offload::{BatchOutput, KvBackend, MethodSpec, OffloadError, Step};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::arrays::{Data, Input, output};
use crate::errors::IntoPy;

/// A submitted decode batch: give it to the `fetch` of the object that
/// made it.
#[derive(Debug)]
#[pyclass(module = "instinfer", frozen)]
pub struct Pending {
    owner: u64,
    id: u64,
    /// `None`: one sequence (outputs `[q_heads, d]`); else the batch size.
    batch: Option<usize>,
    q_heads: usize,
    d: usize,
    seqs: Vec<u32>,
}

#[pymethods]
impl Pending {
    /// The sequences of the batch, in order.
    #[getter]
    fn seqs(&self) -> Vec<u32> {
        self.seqs.clone()
    }

    fn __repr__(&self) -> String {
        format!("<instinfer.Pending batch {} of {:?}>", self.id, self.seqs)
    }
}

static OWNERS: AtomicU64 = AtomicU64::new(1);

/// A backend behind a lock, with the id its `Pending`s carry.
#[derive(Debug)]
pub struct Shared<B> {
    inner: Mutex<B>,
    owner: u64,
}

/// A method from its Python arguments.
pub fn method_spec(
    method: &str,
    compression: f64,
    sparf: Option<(usize, usize, usize)>,
) -> Result<MethodSpec, OffloadError> {
    match sparf {
        None => MethodSpec::parse(method, compression),
        Some((r, k, local)) if method == "sparf" => MethodSpec::sparf(SparseParams { r, k, local }),
        Some(_) => Err(OffloadError::Invalid(format!(
            "explicit sparf=(r, k, local) goes with method='sparf', not {method:?}"
        ))),
    }
}

impl<B: KvBackend> Shared<B> {
    pub fn new(b: B) -> Self {
        Self {
            inner: Mutex::new(b),
            owner: OWNERS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Runs `f` on the backend without the GIL.
    pub fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut B) -> Result<T, OffloadError> + Send,
    ) -> PyResult<T> {
        let r = py.detach(|| match self.inner.lock() {
            Ok(mut b) => Some(f(&mut b)),
            Err(_) => None,
        });
        match r {
            Some(r) => r.py(py),
            None => Err(PyRuntimeError::new_err(
                "the device handle is unusable after an internal error",
            )),
        }
    }

    pub fn append(
        &self,
        py: Python<'_>,
        seq: u32,
        layer: usize,
        k: &Bound<'_, PyAny>,
        v: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        let shape = self.with(py, |b| b.shape_of(seq))?;
        let (k, v) = (Input::extract(k, "k")?, Input::extract(v, "v")?);
        let (kvh, d) = (Some(shape.kv_heads), Some(shape.head_dim));
        let names = "kv_heads, tokens, d";
        k.check("k", names, &[kvh, None, d]).py(py)?;
        v.check("v", names, &[kvh, None, d]).py(py)?;
        if k.shape() != v.shape() {
            return Err(OffloadError::Invalid(format!(
                "k {:?} and v {:?} differ in shape",
                k.shape(),
                v.shape()
            )))
            .py(py);
        }
        let (kd, vd) = (k.data(), v.data());
        self.with(py, |b| b.append_kv(seq, layer, kd.values(), vd.values()))
    }

    /// Reads a batch's Python arguments: sequence ids, whether a single
    /// sequence was given (no batch axis), q and the new tokens.
    pub fn inputs<'py>(
        &self,
        py: Python<'_>,
        seqs: &Bound<'py, PyAny>,
        q: &Bound<'py, PyAny>,
        k_new: Option<&Bound<'py, PyAny>>,
        v_new: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Inputs<'py>> {
        let (ids, single): (Vec<u32>, bool) = match seqs.extract::<u32>() {
            Ok(s) => (vec![s], true),
            Err(_) => (seqs.extract::<Vec<u32>>()?, false),
        };
        if ids.is_empty() {
            return Err(OffloadError::Invalid("no sequence given".into())).py(py);
        }
        let shape = self.with(py, |b| b.shape_of(ids[0]))?;
        let (qh, kvh, d) = (shape.q_heads, shape.kv_heads, shape.head_dim);
        let lead: &[Option<usize>] = if single { &[] } else { &[Some(ids.len())] };
        let dims = |rest: &[Option<usize>]| -> Vec<Option<usize>> {
            lead.iter().chain(rest).copied().collect()
        };
        let pre = if single { "" } else { "batch, " };
        let q = Input::extract(q, "q")?;
        q.check(
            "q",
            &format!("{pre}q_heads, d"),
            &dims(&[Some(qh), Some(d)]),
        )
        .py(py)?;
        let kv = match (k_new, v_new) {
            (None, None) => None,
            (Some(k), Some(v)) => {
                let (k, v) = (Input::extract(k, "k_new")?, Input::extract(v, "v_new")?);
                let names = format!("{pre}kv_heads, d");
                let want = dims(&[Some(kvh), Some(d)]);
                k.check("k_new", &names, &want).py(py)?;
                v.check("v_new", &names, &want).py(py)?;
                Some((k, v))
            }
            _ => {
                return Err(OffloadError::Invalid(
                    "k_new and v_new go together: give both or neither".into(),
                ))
                .py(py);
            }
        };
        Ok(Inputs {
            ids,
            single,
            q,
            kv,
            qn: qh * d,
            kn: kvh * d,
            q_heads: qh,
            d,
        })
    }

    /// Submits a batch read by [`Self::inputs`].
    pub fn submit(
        &self,
        py: Python<'_>,
        layer: usize,
        inputs: Inputs<'_>,
        method: MethodSpec,
    ) -> PyResult<Pending> {
        let data = inputs.data();
        let steps = inputs.steps(&data, layer, method);
        let id = self.with(py, |b| b.submit_batch(&steps))?;
        Ok(Pending {
            owner: self.owner,
            id,
            batch: (!inputs.single).then_some(inputs.ids.len()),
            q_heads: inputs.q_heads,
            d: inputs.d,
            seqs: inputs.ids,
        })
    }

    /// Seconds per call of `iters` submit + fetch of the batch, made in a
    /// Rust loop without the GIL (the benchmark's baseline).
    pub fn time_rust(
        &self,
        py: Python<'_>,
        layer: usize,
        inputs: Inputs<'_>,
        method: MethodSpec,
        iters: usize,
    ) -> PyResult<f64> {
        let data = inputs.data();
        let steps = inputs.steps(&data, layer, method);
        self.with(py, |b| {
            let t = std::time::Instant::now();
            for _ in 0..iters.max(1) {
                let id = b.submit_batch(&steps)?;
                std::hint::black_box(b.fetch_batch(id)?);
            }
            Ok(t.elapsed().as_secs_f64() / iters.max(1) as f64)
        })
    }

    pub fn fetch<'py>(
        &self,
        py: Python<'py>,
        p: &Pending,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
        if p.owner != self.owner {
            return Err(OffloadError::Invalid(
                "this batch was submitted to another device or store".into(),
            ))
            .py(py);
        }
        let out = self.with(py, |b| b.fetch_batch(p.id))?;
        let shape: Vec<usize> = match p.batch {
            None => vec![p.q_heads, p.d],
            Some(n) => vec![n, p.q_heads, p.d],
        };
        let report = report(py, &out, &p.seqs)?;
        let data: Vec<f32> = out.steps.into_iter().flat_map(|s| s.out).collect();
        Ok((output(py, data, &shape)?, report))
    }
}

/// The batch's report: `virtual_ns` and one dict per step.
fn report<'py>(py: Python<'py>, out: &BatchOutput, seqs: &[u32]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("virtual_ns", out.virtual_ns)?;
    let steps = PyList::empty(py);
    for (s, &seq) in out.steps.iter().zip(seqs) {
        let r = &s.report;
        let e = PyDict::new(py);
        e.set_item("seq", seq)?;
        e.set_item("tokens", r.tokens)?;
        e.set_item("tokens_attended", r.tokens_attended)?;
        e.set_item("pages_read", r.pages_read)?;
        e.set_item("pages_skipped", r.pages_skipped)?;
        e.set_item("guard_widened", r.guard_widened)?;
        e.set_item("engine_bytes", r.engine_bytes)?;
        e.set_item("elements_filtered", r.elements_filtered)?;
        steps.append(e)?;
    }
    d.set_item("steps", steps)?;
    Ok(d)
}

/// A batch's arguments, read and shape-checked.
pub struct Inputs<'py> {
    ids: Vec<u32>,
    single: bool,
    q: Input<'py>,
    kv: Option<(Input<'py>, Input<'py>)>,
    qn: usize,
    kn: usize,
    q_heads: usize,
    d: usize,
}

/// The arrays of [`Inputs`], lent.
type Lent<'a> = (Data<'a>, Option<(Data<'a>, Data<'a>)>);

impl Inputs<'_> {
    fn data(&self) -> Lent<'_> {
        (
            self.q.data(),
            self.kv.as_ref().map(|(k, v)| (k.data(), v.data())),
        )
    }

    /// One step per sequence, each with its rows of the arrays.
    fn steps<'a>(&self, data: &'a Lent<'_>, layer: usize, method: MethodSpec) -> Vec<Step<'a>> {
        let (qd, kvd) = data;
        let (qn, kn) = (self.qn, self.kn);
        self.ids
            .iter()
            .enumerate()
            .map(|(i, &seq)| Step {
                seq,
                layer,
                q: qd.part(i * qn..(i + 1) * qn),
                kv_new: kvd
                    .as_ref()
                    .map(|(k, v)| (k.part(i * kn..(i + 1) * kn), v.part(i * kn..(i + 1) * kn))),
                method,
            })
            .collect()
    }
}
