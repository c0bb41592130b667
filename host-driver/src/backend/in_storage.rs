//! [`InStorage`]: decode attention inside the drives of a
//! [`CsdArray`]. f32 inputs are rounded to fp16 (`half`) for the wire; a
//! batch is submitted in full (every step, every device) before any result
//! is fetched.
//!
//! Positions are tracked on the host per (sequence, layer). If a batch
//! fails, the device may have appended some steps' tokens while the host
//! counts none of them: close and reopen the sequence after a failed batch.

use std::collections::HashMap;

use attention::shape::{BasisKind, Method};

use crate::array::{ArrayDecode, CsdArray};
use crate::csd::Approx;
use crate::measure::{Phase, PhaseCounters};
use crate::transport::Transport;

use super::lengths::Lengths;
use super::{AttentionBackend, BackendError, DecodeStep, ModelShape, Rotation, to_f16_bits};

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
        }
    }

    /// Sequences opened from now on keep their dim-indexed K copy in a
    /// per-(layer, KV head) `basis` of their prefill keys (raw: the keys
    /// themselves); their SparF decodes must be SparF+ in that basis.
    pub fn set_basis(&mut self, basis: BasisKind) {
        self.basis = basis;
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
        };
        self.lengths.open(seq, shape)?;
        if let Err(e) = self.array.open(seq, dev_shape) {
            // Undo the book-keeping; the open error is the one to report.
            let _ = self.lengths.close(seq);
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
        let first = narrow("position", self.lengths.len(seq, layer)?)?;
        let k_dim = self.rotations.get_mut(&seq).map(|r| r.keys(layer, k));
        self.array.append_with_dim_copy(
            seq,
            narrow("layer", layer)?,
            first,
            &to_f16_bits(k),
            &to_f16_bits(v),
            k_dim.as_deref(),
        )?;
        self.lengths.grow(seq, layer, n);
        Ok(())
    }

    fn decode(&mut self, batch: &[DecodeStep<'_>]) -> Result<Vec<Vec<f32>>, BackendError> {
        self.lengths.check_batch(batch)?;
        struct Wire {
            q: Vec<u16>,
            kv: Option<(Vec<u16>, Vec<u16>)>,
            q_approx: Option<Vec<u16>>,
            k_approx: Option<Vec<u16>>,
            layer: u16,
            position: u32,
        }
        let mut wire = Vec::with_capacity(batch.len());
        for s in batch {
            let len = self.lengths.len(s.seq, s.layer)?;
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
            wire.push(Wire {
                q: to_f16_bits(s.q),
                kv: s.kv_new.map(|(k, v)| (to_f16_bits(k), to_f16_bits(v))),
                q_approx,
                k_approx,
                layer: narrow("layer", s.layer)?,
                position: narrow("position", position)?,
            });
        }
        let reqs: Vec<ArrayDecode<'_>> = batch
            .iter()
            .zip(&wire)
            .map(|(s, w)| ArrayDecode {
                seq: s.seq,
                layer: w.layer,
                position: w.position,
                q: &w.q,
                kv_new: w.kv.as_ref().map(|(k, v)| (k.as_slice(), v.as_slice())),
                approx: (w.q_approx.is_some() || w.k_approx.is_some()).then_some(Approx {
                    q: w.q_approx.as_deref(),
                    k_new: w.k_approx.as_deref(),
                }),
                method: s.method,
            })
            .collect();
        let outs = self.array.decode_batch(&reqs)?;
        for s in batch.iter().filter(|s| s.kv_new.is_some()) {
            self.lengths.grow(s.seq, s.layer, 1);
        }
        Ok(outs.into_iter().map(|o| o.out).collect())
    }

    fn close(&mut self, seq: u32) -> Result<(), BackendError> {
        self.lengths.close(seq)?;
        self.rotations.remove(&seq);
        self.array.close(seq)?;
        Ok(())
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
