//! [`Drives`]: one computational SSD or several sharing the KV heads
//! (a `CsdArray`), as an application drives them: sequences opened with a
//! model's attention shape, each layer's K and V appended (prefill), and
//! decode steps submitted as a batch and fetched later, so the caller can
//! compute something else while the drives work.
//!
//! The host keeps each (sequence, layer)'s token count, so callers never
//! pass positions. A rotated sequence (SparF+ in a PCA basis) gets its
//! basis from the first keys of each head, as the model backend does.
//!
//! Failure semantics: every argument is checked before anything is sent,
//! so a refused call changes nothing. A step the drive fails leaves its
//! new token's presence unknown (the drive may have stored it): the
//! sequence should be closed. Closing a sequence first collects any
//! pending batch that holds one of its steps (that batch's outputs are
//! dropped; [`Drives::fetch`] then reports it unknown).

use std::collections::{HashMap, HashSet};

use attention::shape::{BasisKind, Method};
use host_driver::array::{ArrayTicket, CsdArray, DecodeBuf};
use host_driver::backend::{ModelShape, Rotation};
use host_driver::csd::{Csd, DeviceInfo};
use host_driver::policy::PagesSetting;
use proto::{SeqShape, StatsLog};

use crate::OffloadError;
use crate::device::{AnyTransport, DeviceSpec};
use crate::method::{MethodSpec, wire_method};
use crate::report::{BatchOutput, StepOutput, StepReport};
use crate::values::Values;

/// How a sequence keeps its keys on the drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Tokens in time order (dense, SparF, SparF+).
    Time,
    /// Placed by similarity with the flash-aware method's defaults
    /// (`pages`).
    Pages,
    /// Time order, as the Quest-style page baseline wants (`quest`).
    Quest,
}

impl Layout {
    /// `time`, `pages` or `quest`.
    pub fn parse(s: &str) -> Result<Self, OffloadError> {
        match s {
            "time" => Ok(Self::Time),
            "pages" => Ok(Self::Pages),
            "quest" => Ok(Self::Quest),
            _ => Err(OffloadError::invalid(format!(
                "unknown layout {s:?} (time, pages or quest)"
            ))),
        }
    }

    fn placement(self) -> proto::Placement {
        match self {
            Self::Time => proto::Placement::TIME,
            Self::Pages => PagesSetting::DEFAULT.placement(),
            Self::Quest => PagesSetting::DEFAULT.quest().placement(),
        }
    }
}

/// How a sequence is opened besides its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqOptions {
    /// The basis of the dim-indexed K copy: `Raw` for dense and SparF,
    /// `Pca`/`Balanced` for the SparF+ methods in that basis.
    pub basis: BasisKind,
    /// Token placement.
    pub layout: Layout,
    /// Dims per flash row of the dim-indexed copy (1 to the drive's most).
    pub dim_group: u8,
}

impl Default for SeqOptions {
    fn default() -> Self {
        Self {
            basis: BasisKind::Raw,
            layout: Layout::Time,
            dim_group: 1,
        }
    }
}

/// One decode step of one layer of one sequence.
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    /// Sequence.
    pub seq: u32,
    /// Layer.
    pub layer: usize,
    /// Query `[q_heads][d]`.
    pub q: Values<'a>,
    /// The new token's K and V `[kv_heads][d]`, stored before attending;
    /// `None` attends to the stored tokens only.
    pub kv_new: Option<(Values<'a>, Values<'a>)>,
    /// The method.
    pub method: MethodSpec,
}

#[derive(Debug)]
struct Seq {
    shape: ModelShape,
    lens: Vec<usize>,
    rotation: Option<Rotation>,
}

/// A submitted batch not yet fetched.
#[derive(Debug)]
struct Pending {
    tickets: Vec<ArrayTicket>,
    /// Per step: sequence, layer, whether it stores a new token, tokens
    /// attended over.
    steps: Vec<(u32, usize, bool, u32)>,
    /// Each drive's clock at submit (simulated drives).
    t0: Vec<Option<u64>>,
}

/// One drive or an array of drives.
#[derive(Debug)]
pub struct Drives {
    array: CsdArray<AnyTransport>,
    specs: Vec<String>,
    seqs: HashMap<u32, Seq>,
    pending: HashMap<u64, Pending>,
    next_batch: u64,
}

fn narrow<N: TryFrom<usize>>(what: &str, x: usize) -> Result<N, OffloadError> {
    N::try_from(x).map_err(|_| {
        OffloadError::invalid(format!("{what} = {x} does not fit the device protocol"))
    })
}

impl Drives {
    /// Opens one drive per spec string (`sim`, `qemu:zynqmp`,
    /// `tcp://HOST:PORT/NQN`, `/dev/ngXnY`, `vfio:<PCI address>`); the
    /// simulated and QEMU boards get `page_size`-byte flash pages (4096 or
    /// 16384).
    pub fn open<S: AsRef<str>>(specs: &[S], page_size: u32) -> Result<Self, OffloadError> {
        if specs.is_empty() {
            return Err(OffloadError::invalid("no device given"));
        }
        if page_size != 4096 && page_size != 16384 {
            return Err(OffloadError::invalid(format!(
                "page size {page_size} (4096 or 16384)"
            )));
        }
        let mut csds = Vec::with_capacity(specs.len());
        let mut names = Vec::with_capacity(specs.len());
        for s in specs {
            let spec = DeviceSpec::parse(s.as_ref()).map_err(OffloadError::Invalid)?;
            csds.push(Csd::new(spec.open(page_size)?)?);
            names.push(spec.to_string());
        }
        Ok(Self {
            array: CsdArray::new(csds)?,
            specs: names,
            seqs: HashMap::new(),
            pending: HashMap::new(),
            next_batch: 1,
        })
    }

    /// The spec of each drive, in head order.
    pub fn specs(&self) -> &[String] {
        &self.specs
    }

    /// What each drive said in Identify (capability block included).
    pub fn identify(&self) -> Vec<DeviceInfo> {
        self.array
            .devices()
            .iter()
            .map(|d| d.info().clone())
            .collect()
    }

    /// Each drive's statistics log.
    pub fn stats(&mut self) -> Result<Vec<StatsLog>, OffloadError> {
        Ok(self.array.stats()?)
    }

    /// Each drive's virtual clock in ns (simulated drives; `None` for real
    /// ones).
    pub fn virtual_clock_ns(&self) -> Vec<Option<u64>> {
        self.array
            .device_times()
            .into_iter()
            .map(|t| t.map(|t| t.now_ns))
            .collect()
    }

    /// The underlying array (the Rust API's equal).
    pub fn array(&self) -> &CsdArray<AnyTransport> {
        &self.array
    }

    /// Open sequences.
    pub fn sequences(&self) -> Vec<u32> {
        let mut s: Vec<u32> = self.seqs.keys().copied().collect();
        s.sort_unstable();
        s
    }

    /// Tokens stored in `layer` of `seq`.
    pub fn len(&self, seq: u32, layer: usize) -> Result<usize, OffloadError> {
        let s = self.seq(seq)?;
        s.lens.get(layer).copied().ok_or_else(|| {
            OffloadError::invalid(format!(
                "layer {layer} of a {}-layer sequence",
                s.lens.len()
            ))
        })
    }

    /// The shape `seq` was opened with.
    pub fn shape(&self, seq: u32) -> Result<ModelShape, OffloadError> {
        Ok(self.seq(seq)?.shape)
    }

    /// Opens `seq` on every drive that gets one of its KV heads.
    pub fn open_sequence(
        &mut self,
        seq: u32,
        shape: ModelShape,
        opts: SeqOptions,
    ) -> Result<(), OffloadError> {
        shape.validate()?;
        if self.seqs.contains_key(&seq) {
            return Err(OffloadError::SequenceExists(seq));
        }
        if opts.dim_group == 0 || !shape.head_dim.is_multiple_of(usize::from(opts.dim_group)) {
            return Err(OffloadError::invalid(format!(
                "dim group {} does not divide the head dimension {}",
                opts.dim_group, shape.head_dim
            )));
        }
        let dev = SeqShape {
            layers: narrow("layers", shape.layers)?,
            kv_heads: narrow("kv_heads", shape.kv_heads)?,
            group: narrow("group", shape.group())?,
            head_dim: narrow("head_dim", shape.head_dim)?,
            dim_group: opts.dim_group,
            rotated: opts.basis != BasisKind::Raw,
            placement: opts.layout.placement(),
        };
        self.array.open(seq, dev)?;
        let rotation = dev
            .rotated
            .then(|| Rotation::new(opts.basis, shape.layers, shape.kv_heads, shape.head_dim));
        self.seqs.insert(
            seq,
            Seq {
                shape,
                lens: vec![0; shape.layers],
                rotation,
            },
        );
        Ok(())
    }

    /// Closes `seq` on its drives, first collecting any pending batch
    /// with a step of it.
    pub fn close_sequence(&mut self, seq: u32) -> Result<(), OffloadError> {
        self.seq(seq)?;
        let holding: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.steps.iter().any(|s| s.0 == seq))
            .map(|(&id, _)| id)
            .collect();
        for id in holding {
            // Dropped on purpose: the caller closes the sequence.
            let _ = self.fetch(id);
        }
        self.seqs.remove(&seq);
        Ok(self.array.close(seq)?)
    }

    /// Appends tokens to `layer` of `seq`: `k`, `v` `[kv_heads][n][d]`.
    pub fn append(
        &mut self,
        seq: u32,
        layer: usize,
        k: Values<'_>,
        v: Values<'_>,
    ) -> Result<usize, OffloadError> {
        let first = self.len(seq, layer)?;
        if self.is_pending(seq, layer) {
            return Err(OffloadError::invalid(format!(
                "a decode of sequence {seq} layer {layer} is pending: fetch it first"
            )));
        }
        let shape = self.seq(seq)?.shape;
        let n = crate::check::kv(&shape, &k, &v)?;
        let first_pos: u32 = narrow("position", first)?;
        narrow::<u32>("position", first + n)?;
        let layer16: u16 = narrow("layer", layer)?;
        let k_dim = self
            .seqs
            .get_mut(&seq)
            .and_then(|s| s.rotation.as_mut())
            .map(|r| r.keys(layer, &k.f32s()));
        self.array.append_with_dim_copy(
            seq,
            layer16,
            first_pos,
            &k.f16_bits(),
            &v.f16_bits(),
            k_dim.as_deref(),
        )?;
        if let Some(l) = self.seqs.get_mut(&seq).and_then(|s| s.lens.get_mut(layer)) {
            *l += n;
        }
        Ok(n)
    }

    fn is_pending(&self, seq: u32, layer: usize) -> bool {
        self.pending
            .values()
            .any(|p| p.steps.iter().any(|s| s.0 == seq && s.1 == layer))
    }

    /// Checks one step and builds what goes on the wire.
    fn prepare(&mut self, st: &Step<'_>) -> Result<Wire, OffloadError> {
        let len = self.len(st.seq, st.layer)?;
        if self.is_pending(st.seq, st.layer) {
            return Err(OffloadError::invalid(format!(
                "a decode of sequence {} layer {} is already pending",
                st.seq, st.layer
            )));
        }
        let shape = self.seq(st.seq)?.shape;
        let d = shape.head_dim;
        let tokens = crate::check::step(&shape, len, st)?;
        let method = st.method.resolve(tokens, d)?;
        let Some(bit) = wire_method(&method) else {
            return Err(OffloadError::invalid(format!(
                "the drives run dense, the SparF family, pages and quest, not {}",
                st.method.name()
            )));
        };
        for (i, dev) in self.array.devices().iter().enumerate() {
            if !dev.info().caps.supports(bit) {
                return Err(OffloadError::invalid(format!(
                    "drive {} ({}) does not advertise {}",
                    i,
                    self.specs[i],
                    st.method.name()
                )));
            }
        }
        let (mut q_approx, mut k_approx) = (None, None);
        if let Some(rot) = self.seqs.get_mut(&st.seq).and_then(|s| s.rotation.as_mut()) {
            k_approx = st.kv_new.map(|(k, _)| rot.keys(st.layer, &k.f32s()));
            if matches!(method, Method::SparFPlus(_)) {
                q_approx = rot.queries(st.layer, &st.q.f32s());
            }
        }
        Ok(Wire {
            buf: DecodeBuf {
                seq: st.seq,
                layer: narrow("layer", st.layer)?,
                position: narrow("position", if st.kv_new.is_some() { len } else { len - 1 })?,
                q: st.q.f16_bits().into_owned(),
                kv: st
                    .kv_new
                    .map(|(k, v)| (k.f16_bits().into_owned(), v.f16_bits().into_owned())),
                q_approx,
                k_approx,
                method,
            },
            tokens: narrow("tokens", tokens)?,
        })
    }

    /// Submits a batch of steps (at most one per sequence and layer) to
    /// every drive holding their heads; returns the batch's handle for
    /// [`Self::fetch`]. Checked whole before anything is sent.
    pub fn submit(&mut self, steps: &[Step<'_>]) -> Result<u64, OffloadError> {
        if steps.is_empty() {
            return Err(OffloadError::invalid("an empty batch"));
        }
        let mut seen = HashSet::new();
        for s in steps {
            if !seen.insert((s.seq, s.layer)) {
                return Err(OffloadError::invalid(format!(
                    "two steps of sequence {} layer {} in one batch",
                    s.seq, s.layer
                )));
            }
        }
        let mut wire = Vec::with_capacity(steps.len());
        for s in steps {
            wire.push(self.prepare(s)?);
        }
        let t0 = self.virtual_clock_ns();
        let mut tickets = Vec::with_capacity(steps.len());
        let mut done = Vec::with_capacity(steps.len());
        for (s, w) in steps.iter().zip(&wire) {
            match self.array.submit_decode(&w.buf.request()) {
                Ok(t) => {
                    tickets.push(t);
                    done.push((s.seq, s.layer, s.kv_new.is_some(), w.tokens));
                }
                Err(e) => {
                    // The steps already sent ran: keep their tokens counted.
                    let results = self.array.fetch_many_each(tickets);
                    self.grow(&done, &results);
                    return Err(e.into());
                }
            }
        }
        let id = self.next_batch;
        self.next_batch += 1;
        self.pending.insert(
            id,
            Pending {
                tickets,
                steps: done,
                t0,
            },
        );
        Ok(id)
    }

    /// Collects batch `id`: its outputs in step order, or the first
    /// step's error (the other steps ran; their new tokens are stored).
    pub fn fetch(&mut self, id: u64) -> Result<BatchOutput, OffloadError> {
        let p = self
            .pending
            .remove(&id)
            .ok_or(OffloadError::UnknownBatch(id))?;
        let results = self.array.fetch_many_each(p.tickets);
        self.grow(&p.steps, &results);
        let virtual_ns = self
            .virtual_clock_ns()
            .into_iter()
            .zip(&p.t0)
            .filter_map(|(now, then)| Some(now?.saturating_sub((*then)?)))
            .max();
        let mut steps = Vec::with_capacity(results.len());
        for (r, s) in results.into_iter().zip(&p.steps) {
            let o = r?;
            steps.push(StepOutput {
                out: o.out,
                report: StepReport::from_drive(s.3, &o.report),
            });
        }
        Ok(BatchOutput { steps, virtual_ns })
    }

    /// Submit and fetch in one call.
    pub fn decode(&mut self, steps: &[Step<'_>]) -> Result<BatchOutput, OffloadError> {
        let id = self.submit(steps)?;
        self.fetch(id)
    }

    /// Batches submitted and not yet fetched.
    pub fn pending(&self) -> Vec<u64> {
        let mut p: Vec<u64> = self.pending.keys().copied().collect();
        p.sort_unstable();
        p
    }

    fn grow<T, E>(&mut self, steps: &[(u32, usize, bool, u32)], results: &[Result<T, E>]) {
        for (&(seq, layer, new, _), r) in steps.iter().zip(results) {
            if new
                && r.is_ok()
                && let Some(l) = self.seqs.get_mut(&seq).and_then(|s| s.lens.get_mut(layer))
            {
                *l += 1;
            }
        }
    }

    fn seq(&self, seq: u32) -> Result<&Seq, OffloadError> {
        self.seqs
            .get(&seq)
            .ok_or(OffloadError::UnknownSequence(seq))
    }
}

/// One step on the wire, and the tokens it attends over.
struct Wire {
    buf: DecodeBuf,
    tokens: u32,
}

#[cfg(test)]
mod tests;
