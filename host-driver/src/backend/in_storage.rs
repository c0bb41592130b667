//! [`InStorage`]: decode attention inside the drives of a
//! [`CsdArray`]. f32 inputs are rounded to fp16 (`half`) for the wire; a
//! batch is submitted in full (every step, every device) before any result
//! is fetched.
//!
//! Each step's flash cost is the drive's own report (pages read, bytes
//! through the engine), set beside dense's at the same context from the
//! layout model ([`super::flash`]) on each drive's page size: dense's
//! measured page fraction is 1 exactly when the drive reads what the model
//! says (it does while its DRAM group buffers fit; under pressure it writes
//! partial pages, which dense then reads too).
//!
//! Positions are tracked on the host per (sequence, layer). A failed batch
//! is retried, and recomputed on the host where the backend keeps a copy:
//! see [`super::recovery`] for the policy. A step that still fails leaves
//! its token's presence on the drive unknown: close the sequence.

use std::collections::{HashMap, HashSet};

use attention::shape::{BasisKind, Method};

use crate::array::{ArrayDecode, CsdArray, DecodeBuf};
use crate::csd::{CsdError, DecodeOutput, RetryPolicy};
use crate::measure::{Phase, PhaseCounters};
use crate::transport::Transport;

use super::flash::{FlashCount, FlashLayout, Reads};
use super::lengths::Lengths;
use super::recovery::Recovery;
use super::{
    AttentionBackend, BackendError, DecodeStep, HostDense, ModelShape, Rotation, to_f16_bits,
};

/// Attention on computational SSDs.
#[derive(Debug)]
pub struct InStorage<T: Transport> {
    array: CsdArray<T>,
    dim_group: u8,
    lengths: Lengths,
    /// The basis sequences opened from now on keep their dim-indexed copy
    /// in (raw: plain sequences).
    basis: BasisKind,
    /// The rotated sequences' bases.
    rotations: HashMap<u32, Rotation>,
    /// How sequences opened from now on place their tokens.
    placement: proto::Placement,
    retry: RetryPolicy,
    /// Every open sequence's KV in host memory (engine model), if kept.
    host_copy: Option<HostDense>,
    /// Sequences served from the host copy since the drive failed them.
    moved: HashSet<u32>,
    recovery: Recovery,
    /// The last step's flash reads.
    last_flash: Option<FlashCount>,
}

impl<T: Transport> InStorage<T> {
    /// A backend over `array`; sequences are opened with dim-group `m`
    /// (dims per flash row of the dim-indexed K layout).
    pub fn new(array: CsdArray<T>, dim_group: u8) -> Self {
        Self {
            array,
            dim_group,
            lengths: Lengths::default(),
            basis: BasisKind::Raw,
            rotations: HashMap::new(),
            placement: proto::Placement::TIME,
            retry: RetryPolicy::default(),
            host_copy: None,
            moved: HashSet::new(),
            recovery: Recovery::default(),
            last_flash: None,
        }
    }

    /// Sets how often a failed step is run again on the drive.
    pub fn set_retry(&mut self, policy: RetryPolicy) {
        self.retry = policy;
    }

    /// Keeps a copy of every sequence's KV in host memory, from which a
    /// step the drive fails for good is recomputed (see
    /// [`super::recovery`]). It costs host memory of the whole KV cache; it
    /// must be asked for before any sequence is opened.
    pub fn keep_host_copy(&mut self) -> Result<(), BackendError> {
        if !self.lengths.is_empty() {
            return Err(BackendError::Shape(
                "a host copy must be kept from before the first sequence is opened".into(),
            ));
        }
        let mut copy = HostDense::engine();
        copy.set_flash_layout(self.layout(0));
        self.host_copy = Some(copy);
        Ok(())
    }

    /// What recovery did so far.
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// Whether `seq` is served from the host copy.
    pub fn is_moved(&self, seq: u32) -> bool {
        self.moved.contains(&seq)
    }

    /// Runs the failed steps of a batch again, one by one, under the
    /// policy (see [`super::recovery`]): a step that failed transiently
    /// gets up to `attempts` re-runs (this one included); one refused
    /// because the drive already holds its token is always run without it
    /// (that is no retry).
    fn rerun_failed(
        &mut self,
        reqs: &[ArrayDecode<'_>],
        results: &mut [Result<DecodeOutput, CsdError>],
    ) {
        if results.iter().any(Result::is_err) {
            self.recovery.batches_failed += 1;
        }
        for (r, req) in results.iter_mut().zip(reqs) {
            let (policy, first) = match r {
                Ok(_) => continue,
                Err(e) if e.is_position_mismatch() && req.kv_new.is_some() => (self.retry, 0),
                Err(e) if e.is_transient() && self.retry.attempts > 0 => (
                    RetryPolicy {
                        attempts: self.retry.attempts - 1,
                    },
                    1,
                ),
                Err(_) => continue,
            };
            let (o, n) = self.array.decode_retrying(req, policy);
            self.recovery.retries += u64::from(n + first);
            self.recovery.steps_recovered += u64::from(o.is_ok());
            *r = o;
        }
    }

    /// Steps computed from the host copy (sequences moved there).
    fn host_decode(&mut self, steps: &[DecodeStep<'_>]) -> Result<Vec<Vec<f32>>, BackendError> {
        self.host_copy
            .as_mut()
            .ok_or_else(|| BackendError::Shape("a moved sequence without a host copy".into()))?
            .decode(steps)
    }

    /// Moves `seq` to the host copy: its drive pages are released (best
    /// effort: the drive has just failed).
    fn move_to_host(&mut self, seq: u32) {
        if self.moved.insert(seq) {
            self.recovery.sequences_moved += 1;
            self.rotations.remove(&seq);
            let _ = self.array.close(seq);
        }
    }

    /// Sequences opened from now on keep their dim-indexed K copy in a
    /// per-(layer, KV head) `basis` of their prefill keys (raw: the keys
    /// themselves); their SparF decodes must be SparF+ in that basis.
    pub fn set_basis(&mut self, basis: BasisKind) {
        self.basis = basis;
    }

    /// Sequences opened from now on place their tokens by `placement`
    /// (the PAGES method's layout; see `proto::Placement`).
    pub fn set_placement(&mut self, placement: proto::Placement) {
        self.placement = placement;
    }

    /// The layout of device `i`'s streams (its page size, this backend's
    /// dim group).
    fn layout(&self, i: usize) -> FlashLayout {
        let page_bytes = self
            .array
            .devices()
            .get(i)
            .map_or(FlashLayout::DEFAULT.page_bytes, |c| c.info().caps.page_size);
        FlashLayout {
            page_bytes,
            dim_group: self.dim_group,
        }
    }

    /// What dense reads of `seq` at `s` tokens of dimension `d`, summed over
    /// the devices holding its KV heads.
    fn dense_reads(&self, seq: u32, s: usize, d: usize) -> Reads {
        let Some(ranges) = self.array.head_ranges(seq) else {
            return Reads::default();
        };
        let mut total = Reads::default();
        for (i, r) in ranges.iter().enumerate() {
            let one = self.layout(i).dense(s, d);
            total += Reads {
                pages: one.pages * r.len() as u64,
                bytes: one.bytes * r.len() as u64,
            };
        }
        total
    }

    /// The array (statistics, timing).
    pub fn array(&self) -> &CsdArray<T> {
        &self.array
    }

    /// The array, mutable.
    pub fn array_mut(&mut self) -> &mut CsdArray<T> {
        &mut self.array
    }
}

fn narrow<N: TryFrom<usize>>(what: &str, x: usize) -> Result<N, BackendError> {
    N::try_from(x)
        .map_err(|_| BackendError::Shape(format!("{what} = {x} does not fit the device protocol")))
}

impl<T: Transport> AttentionBackend for InStorage<T> {
    fn open(&mut self, seq: u32, shape: ModelShape) -> Result<(), BackendError> {
        shape.validate()?;
        let dev_shape = proto::SeqShape {
            layers: narrow("layers", shape.layers)?,
            kv_heads: narrow("kv_heads", shape.kv_heads)?,
            group: narrow("group", shape.group())?,
            head_dim: narrow("head_dim", shape.head_dim)?,
            dim_group: self.dim_group,
            rotated: self.basis != BasisKind::Raw,
            placement: self.placement,
        };
        self.lengths.open(seq, shape)?;
        if let Some(h) = &mut self.host_copy
            && let Err(e) = h.open(seq, shape)
        {
            let _ = self.lengths.close(seq);
            return Err(e);
        }
        if let Err(e) = self.array.open(seq, dev_shape) {
            // Undo the book-keeping; the open error is the one to report.
            let _ = self.lengths.close(seq);
            if let Some(h) = &mut self.host_copy {
                let _ = h.close(seq);
            }
            return Err(e.into());
        }
        if dev_shape.rotated {
            let rot = Rotation::new(self.basis, shape.layers, shape.kv_heads, shape.head_dim);
            self.rotations.insert(seq, rot);
        }
        Ok(())
    }

    fn append(&mut self, seq: u32, layer: usize, k: &[f32], v: &[f32]) -> Result<(), BackendError> {
        let n = self.lengths.check_append(seq, layer, k, v)?;
        if n == 0 {
            return Ok(());
        }
        if !self.moved.contains(&seq) {
            let first = narrow("position", self.lengths.len(seq, layer)?)?;
            let k_dim = self.rotations.get_mut(&seq).map(|r| r.keys(layer, k));
            let r = self.array.append_with_dim_copy(
                seq,
                narrow("layer", layer)?,
                first,
                &to_f16_bits(k),
                &to_f16_bits(v),
                k_dim.as_deref(),
            );
            if let Err(e) = r {
                if self.host_copy.is_none() {
                    self.recovery.failed += 1;
                    return Err(e.into());
                }
                self.move_to_host(seq);
            }
        }
        if let Some(h) = &mut self.host_copy {
            h.append(seq, layer, k, v)?;
        }
        self.lengths.grow(seq, layer, n);
        Ok(())
    }

    fn decode(&mut self, batch: &[DecodeStep<'_>]) -> Result<Vec<Vec<f32>>, BackendError> {
        self.lengths.check_batch(batch)?;
        self.last_flash = None;
        let mut outs: Vec<Option<Vec<f32>>> = vec![None; batch.len()];
        let mut flash: Vec<Option<FlashCount>> = vec![None; batch.len()];
        let (on_drive, on_host): (Vec<usize>, Vec<usize>) =
            (0..batch.len()).partition(|&i| !self.moved.contains(&batch[i].seq));
        if !on_host.is_empty() {
            let steps: Vec<DecodeStep<'_>> = on_host.iter().map(|&i| batch[i]).collect();
            let o = self.host_decode(&steps)?;
            self.recovery.steps_on_host += steps.len() as u64;
            for (&i, o) in on_host.iter().zip(o) {
                outs[i] = Some(o);
            }
            if let (Some(&i), Some(h)) = (on_host.last(), &self.host_copy) {
                flash[i] = h.last_flash();
            }
        }
        let steps: Vec<DecodeStep<'_>> = on_drive.iter().map(|&i| batch[i]).collect();
        let mut wire = Vec::with_capacity(batch.len());
        // Dense's reads at each step's context, while every sequence is open.
        let mut dense = Vec::with_capacity(batch.len());
        for s in &steps {
            let len = self.lengths.len(s.seq, s.layer)?;
            let tokens = len + usize::from(s.kv_new.is_some());
            let d = self.lengths.shape(s.seq)?.head_dim;
            dense.push(self.dense_reads(s.seq, tokens, d));
            // With a new token it lands at `len`; otherwise the query is the last token.
            let position = if s.kv_new.is_some() { len } else { len - 1 };
            // A rotated sequence: the new key first (it may choose the
            // basis), then the query for SparF+.
            let (mut q_approx, mut k_approx) = (None, None);
            if let Some(rot) = self.rotations.get_mut(&s.seq) {
                k_approx = s.kv_new.map(|(k, _)| rot.keys(s.layer, k));
                if matches!(s.method, Method::SparFPlus(_)) {
                    q_approx = rot.queries(s.layer, s.q);
                }
            }
            wire.push(DecodeBuf {
                seq: s.seq,
                method: s.method,
                q: to_f16_bits(s.q),
                kv: s.kv_new.map(|(k, v)| (to_f16_bits(k), to_f16_bits(v))),
                q_approx,
                k_approx,
                layer: narrow("layer", s.layer)?,
                position: narrow("position", position)?,
            });
        }
        let reqs: Vec<ArrayDecode<'_>> = wire.iter().map(DecodeBuf::request).collect();
        let mut results = self.array.decode_batch_each(&reqs);
        self.rerun_failed(&reqs, &mut results);
        let mut first_err = None;
        for (((&i, s), r), dense) in on_drive.iter().zip(&steps).zip(results).zip(&dense) {
            match r {
                Ok(o) => {
                    if let (Some(h), Some((k, v))) = (&mut self.host_copy, s.kv_new) {
                        h.append(s.seq, s.layer, k, v)?;
                    }
                    let measured = Reads {
                        pages: u64::from(o.report.pages_read),
                        bytes: o.report.engine_bytes,
                    };
                    flash[i] = Some(FlashCount::new(measured, *dense));
                    outs[i] = Some(o.out);
                }
                Err(_) if self.host_copy.is_some() => {
                    self.move_to_host(s.seq);
                    outs[i] = self.host_decode(std::slice::from_ref(s))?.pop();
                    flash[i] = self.host_copy.as_ref().and_then(HostDense::last_flash);
                    self.recovery.steps_recomputed += 1;
                }
                Err(e) => {
                    self.recovery.failed += 1;
                    first_err.get_or_insert(e);
                }
            }
        }
        for (i, s) in batch.iter().enumerate() {
            if outs[i].is_some() && s.kv_new.is_some() {
                self.lengths.grow(s.seq, s.layer, 1);
            }
        }
        if let Some(e) = first_err {
            return Err(e.into());
        }
        self.last_flash = flash.last().copied().flatten();
        outs.into_iter()
            .map(|o| o.ok_or_else(|| BackendError::Shape("a decode step got no output".into())))
            .collect()
    }

    fn close(&mut self, seq: u32) -> Result<(), BackendError> {
        self.lengths.close(seq)?;
        self.rotations.remove(&seq);
        if let Some(h) = &mut self.host_copy {
            h.close(seq)?;
        }
        if !self.moved.remove(&seq) {
            self.array.close(seq)?;
        }
        Ok(())
    }

    fn last_flash(&self) -> Option<FlashCount> {
        self.last_flash
    }

    fn measure_begin(&mut self) -> Result<Option<Phase>, BackendError> {
        Ok(Some(Phase::begin(&mut self.array)?))
    }

    fn measure_end(&mut self, phase: Phase) -> Result<Option<(f64, PhaseCounters)>, BackendError> {
        Ok(Some(phase.end(&mut self.array)?))
    }

    fn name(&self) -> &str {
        "in-storage"
    }
}
