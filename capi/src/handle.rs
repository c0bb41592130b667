//! `Handle`: what an `instinfer_device *` points at, and the safe Rust of
//! every C function. Drives and the SSD backend sit behind the same
//! handle, as the Python package puts them behind the same calls; a call
//! one of them cannot make is `INSTINFER_EINVALID`.

use std::collections::HashMap;

use attention::shape::{BasisKind, SparseParams};
use offload::{
    AnyBackend, Drives, KvBackend, Layout, MethodSpec, ModelShape, OffloadError, SeqOptions,
    SsdOptions, SsdWorker, Step, Values,
};

use crate::{instinfer_caps, instinfer_report, instinfer_seq_options};

/// An open device or store, with the sizes of its pending batches.
#[derive(Debug)]
pub struct Handle {
    backend: AnyBackend,
    /// Batch → (steps, output floats per step).
    batches: HashMap<u64, (usize, usize)>,
}

fn invalid(msg: impl Into<String>) -> OffloadError {
    OffloadError::Invalid(msg.into())
}

/// A model shape from its C form.
pub fn shape(s: &crate::instinfer_shape) -> ModelShape {
    ModelShape {
        layers: s.layers as usize,
        q_heads: s.q_heads as usize,
        kv_heads: s.kv_heads as usize,
        head_dim: s.head_dim as usize,
    }
}

/// A method from its C form (`name` already read).
pub fn method(name: &str, m: &crate::instinfer_method) -> Result<MethodSpec, OffloadError> {
    if m.sparf_r == 0 {
        return MethodSpec::parse(name, m.compression);
    }
    if name != "sparf" {
        return Err(invalid(format!(
            "explicit SparF parameters go with the method sparf, not {name:?}"
        )));
    }
    MethodSpec::sparf(SparseParams {
        r: m.sparf_r as usize,
        k: m.sparf_k as usize,
        local: m.sparf_local as usize,
    })
}

impl Handle {
    /// Drives by spec.
    pub fn open(specs: &[String], page_size: u32) -> Result<Self, OffloadError> {
        Ok(Self::with(AnyBackend::Drives(Drives::open(
            specs, page_size,
        )?)))
    }

    /// The SSD backend.
    pub fn open_ssd(
        location: &str,
        shape: ModelShape,
        o: &crate::instinfer_ssd_options,
    ) -> Result<Self, OffloadError> {
        let opts = SsdOptions {
            block: if o.block == 0 { 32 } else { o.block as usize },
            prefetch: o.prefetch as usize,
            ..SsdOptions::new(location, o.capacity as usize, o.slots as usize)
        };
        Ok(Self::with(AnyBackend::Ssd(SsdWorker::open(shape, opts)?)))
    }

    fn with(backend: AnyBackend) -> Self {
        Self {
            backend,
            batches: HashMap::new(),
        }
    }

    /// Drives behind the handle (0 for the SSD backend).
    pub fn count(&self) -> usize {
        self.backend.specs().len()
    }

    /// Identify of drive `i`.
    pub fn identify(&mut self, i: usize) -> Result<instinfer_caps, OffloadError> {
        let infos = self.backend.drives()?.identify();
        let info = infos
            .get(i)
            .ok_or_else(|| invalid(format!("drive {i} of {}", infos.len())))?;
        let c = &info.caps;
        Ok(instinfer_caps {
            methods: u32::from(c.methods),
            page_size: c.page_size,
            channels: u32::from(c.channels),
            ways: u32::from(c.ways),
            max_head_dim: u32::from(c.max_head_dim),
            max_group: u32::from(c.max_group),
            max_kv_heads: u32::from(c.max_kv_heads),
            max_layers: u32::from(c.max_layers),
            max_sequences: c.max_sequences,
            max_tokens_per_stream: c.max_tokens_per_stream,
            max_transfer: info.max_transfer as u64,
            dram_budget_bytes: c.dram_budget_bytes,
        })
    }

    /// The statistics counters of drive `i`, in `proto::StatsLog` order.
    pub fn stats(&mut self, i: usize) -> Result<[u64; proto::StatsLog::COUNTERS], OffloadError> {
        let logs = self.backend.drives()?.stats()?;
        logs.get(i)
            .map(proto::StatsLog::counters)
            .ok_or_else(|| invalid(format!("drive {i} of {}", logs.len())))
    }

    /// Opens a sequence (on the SSD backend: its shape must be the store's).
    pub fn seq_open(
        &mut self,
        seq: u32,
        shape: ModelShape,
        opts: Option<&instinfer_seq_options>,
    ) -> Result<(), OffloadError> {
        let o = opts.copied().unwrap_or_default();
        let opts = SeqOptions {
            basis: match o.basis {
                crate::INSTINFER_BASIS_RAW => BasisKind::Raw,
                crate::INSTINFER_BASIS_PCA => BasisKind::Pca,
                crate::INSTINFER_BASIS_BALANCED => BasisKind::Balanced,
                b => return Err(invalid(format!("unknown basis {b}"))),
            },
            layout: match o.layout {
                crate::INSTINFER_LAYOUT_TIME => Layout::Time,
                crate::INSTINFER_LAYOUT_PAGES => Layout::Pages,
                crate::INSTINFER_LAYOUT_QUEST => Layout::Quest,
                l => return Err(invalid(format!("unknown layout {l}"))),
            },
            dim_group: match o.dim_group {
                0 => 1,
                g => u8::try_from(g).map_err(|_| invalid(format!("dim group {g} exceeds 255")))?,
            },
        };
        self.backend.open_sequence(seq, shape, opts)
    }

    /// Closes a sequence.
    pub fn seq_close(&mut self, seq: u32) -> Result<(), OffloadError> {
        self.backend.close(seq)
    }

    /// Tokens stored in a layer.
    pub fn seq_length(&self, seq: u32, layer: usize) -> Result<usize, OffloadError> {
        self.backend.tokens(seq, layer)
    }

    /// The shape of an open sequence.
    pub fn shape_of(&self, seq: u32) -> Result<ModelShape, OffloadError> {
        self.backend.shape_of(seq)
    }

    /// Appends K and V.
    pub fn append(
        &mut self,
        seq: u32,
        layer: usize,
        k: Values<'_>,
        v: Values<'_>,
    ) -> Result<usize, OffloadError> {
        self.backend.append_kv(seq, layer, k, v)
    }

    /// Submits one layer's decode of `seqs`: q `[batch][q_heads][d]`, the
    /// new tokens `[batch][kv_heads][d]` (shapes of the first sequence).
    pub fn submit(
        &mut self,
        layer: usize,
        seqs: &[u32],
        q: Values<'_>,
        kv: Option<(Values<'_>, Values<'_>)>,
        method: MethodSpec,
    ) -> Result<u64, OffloadError> {
        let first = *seqs.first().ok_or_else(|| invalid("an empty batch"))?;
        let s = self.shape_of(first)?;
        let (qn, kn) = (s.q_heads * s.head_dim, s.kv_heads * s.head_dim);
        if q.len() != seqs.len() * qn {
            return Err(invalid(format!(
                "q holds {} elements, not batch × q_heads × d = {}",
                q.len(),
                seqs.len() * qn
            )));
        }
        if let Some((k, v)) = kv
            && (k.len() != seqs.len() * kn || v.len() != k.len())
        {
            return Err(invalid("k_new and v_new must be batch × kv_heads × d"));
        }
        let steps: Vec<Step<'_>> = seqs
            .iter()
            .enumerate()
            .map(|(i, &seq)| Step {
                seq,
                layer,
                q: q.part(i * qn..(i + 1) * qn),
                kv_new: kv
                    .map(|(k, v)| (k.part(i * kn..(i + 1) * kn), v.part(i * kn..(i + 1) * kn))),
                method,
            })
            .collect();
        let id = self.backend.submit_batch(&steps)?;
        self.batches.insert(id, (seqs.len(), qn));
        Ok(id)
    }

    /// Elements of the outputs of a pending batch.
    pub fn batch_size(&self, id: u64) -> Result<(usize, usize), OffloadError> {
        self.batches
            .get(&id)
            .copied()
            .ok_or(OffloadError::UnknownBatch(id))
    }

    /// Collects a batch into `out` (`steps × q_heads × d` floats) and
    /// `reports` (one per step, if given); returns the virtual ns.
    pub fn fetch(
        &mut self,
        id: u64,
        out: &mut [f32],
        reports: Option<&mut [instinfer_report]>,
    ) -> Result<Option<u64>, OffloadError> {
        let (n, per) = self.batch_size(id)?;
        if out.len() < n * per {
            return Err(invalid(format!(
                "the output buffer holds {} floats; the batch needs {}",
                out.len(),
                n * per
            )));
        }
        if let Some(r) = &reports
            && r.len() < n
        {
            return Err(invalid(format!("{} reports for {n} steps", r.len())));
        }
        self.batches.remove(&id);
        let b = self.backend.fetch_batch(id)?;
        for (i, s) in b.steps.iter().enumerate() {
            out[i * per..(i + 1) * per].copy_from_slice(&s.out);
        }
        if let Some(r) = reports {
            for (slot, s) in r.iter_mut().zip(&b.steps) {
                let x = &s.report;
                *slot = instinfer_report {
                    tokens: x.tokens,
                    tokens_attended: x.tokens_attended,
                    pages_read: x.pages_read,
                    pages_skipped: x.pages_skipped,
                    guard_widened: x.guard_widened,
                    engine_bytes: x.engine_bytes,
                    elements_filtered: x.elements_filtered,
                };
            }
        }
        Ok(b.virtual_ns)
    }
}
