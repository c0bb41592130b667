//! Book-keeping shared by the backends: open sequences, their shape and the
//! token count of every layer, with the checks every call needs.

use std::collections::{HashMap, HashSet};

use super::{BackendError, DecodeStep, ModelShape};

/// Open sequences: shape and tokens per layer.
#[derive(Debug, Default)]
pub struct Lengths {
    seqs: HashMap<u32, (ModelShape, Vec<usize>)>,
}

impl Lengths {
    /// Whether no sequence is open.
    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    /// Opens `seq` with `shape` (refused if already open).
    pub fn open(&mut self, seq: u32, shape: ModelShape) -> Result<(), BackendError> {
        shape.validate()?;
        if self.seqs.contains_key(&seq) {
            return Err(BackendError::SequenceExists(seq));
        }
        self.seqs.insert(seq, (shape, vec![0; shape.layers]));
        Ok(())
    }

    /// Closes `seq`, returning its shape.
    pub fn close(&mut self, seq: u32) -> Result<ModelShape, BackendError> {
        self.seqs
            .remove(&seq)
            .map(|(s, _)| s)
            .ok_or(BackendError::UnknownSequence(seq))
    }

    /// The shape `seq` was opened with.
    pub fn shape(&self, seq: u32) -> Result<ModelShape, BackendError> {
        self.seqs
            .get(&seq)
            .map(|(s, _)| *s)
            .ok_or(BackendError::UnknownSequence(seq))
    }

    /// Tokens stored in `layer`.
    pub fn len(&self, seq: u32, layer: usize) -> Result<usize, BackendError> {
        let (shape, lens) = self
            .seqs
            .get(&seq)
            .ok_or(BackendError::UnknownSequence(seq))?;
        lens.get(layer).copied().ok_or(BackendError::Layer {
            layer,
            layers: shape.layers,
        })
    }

    /// Records `n` more tokens in `layer` of `seq`.
    pub fn grow(&mut self, seq: u32, layer: usize, n: usize) {
        if let Some(l) = self.seqs.get_mut(&seq).and_then(|(_, l)| l.get_mut(layer)) {
            *l += n;
        }
    }

    /// Checks an append's buffers; returns the number of tokens.
    pub fn check_append(
        &self,
        seq: u32,
        layer: usize,
        k: &[f32],
        v: &[f32],
    ) -> Result<usize, BackendError> {
        let shape = self.shape(seq)?;
        self.len(seq, layer)?;
        let row = shape.kv_heads * shape.head_dim;
        if !k.len().is_multiple_of(row) {
            return Err(BackendError::Length {
                what: "k",
                expected: k.len() / row * row,
                actual: k.len(),
            });
        }
        if v.len() != k.len() {
            return Err(BackendError::Length {
                what: "v",
                expected: k.len(),
                actual: v.len(),
            });
        }
        Ok(k.len() / row)
    }

    /// Checks every step of a batch (shapes, layers, duplicates, something
    /// to attend to).
    pub fn check_batch(&self, batch: &[DecodeStep<'_>]) -> Result<(), BackendError> {
        let mut seen = HashSet::new();
        for s in batch {
            let shape = self.shape(s.seq)?;
            let len = self.len(s.seq, s.layer)?;
            if !seen.insert((s.seq, s.layer)) {
                return Err(BackendError::DuplicateStep {
                    seq: s.seq,
                    layer: s.layer,
                });
            }
            let q_len = shape.q_heads * shape.head_dim;
            if s.q.len() != q_len {
                return Err(BackendError::Length {
                    what: "q",
                    expected: q_len,
                    actual: s.q.len(),
                });
            }
            match s.kv_new {
                Some((k, v)) => {
                    let kv = shape.kv_heads * shape.head_dim;
                    for (what, b) in [("k_new", k), ("v_new", v)] {
                        if b.len() != kv {
                            return Err(BackendError::Length {
                                what,
                                expected: kv,
                                actual: b.len(),
                            });
                        }
                    }
                }
                None if len == 0 => {
                    return Err(BackendError::Empty {
                        seq: s.seq,
                        layer: s.layer,
                    });
                }
                None => {}
            }
        }
        Ok(())
    }
}
