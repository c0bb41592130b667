//! [`SsdOffload`]: the KV cache on a plain NVMe namespace (a drive without
//! the InstCSD engine), attention on the host — FlexGen-style offload. K
//! and V go to the drive with standard Write commands and come back with
//! Read for every decode; the host computes dense attention with the fast
//! f32 kernel (`attention::host`), SparF reading all of K but only the
//! chosen tokens' value rows (the mean of V, which SparF blends in, is kept
//! as a running sum in host memory), and any other method with the f32
//! reference — always on the fp16 values the drive holds.
//!
//! Layout: every (sequence, layer, KV head) gets a K extent and a V extent
//! of `capacity` tokens, whole logical blocks, allocated when the sequence
//! opens and freed when it closes. Token rows (`d` fp16) are packed; the
//! partly filled last block of an extent stays in host memory until a
//! block's worth has arrived (written then), so no block is rewritten.
//! Commands are split at the device's transfer limit.

use std::collections::HashMap;

use attention::shape::Method;
use attention::{host, reference};
use proto::{Opcode, Sqe};

use super::{AttentionBackend, BackendError, DecodeStep, ModelShape, to_f16_bits};
use crate::transport::{IoData, IoRequest, Transport};

/// NVMe Write.
const WRITE: Opcode = Opcode(0x01);
/// NVMe Read.
const READ: Opcode = Opcode(0x02);

/// One extent's state: first LBA, tokens on the drive (whole blocks), and
/// the unwritten tail rows.
#[derive(Debug, Clone)]
struct Extent {
    lba: u64,
    flushed_bytes: usize,
    tail: Vec<u8>,
    /// Sum of the rows so far (value extents: SparF's mean of V).
    sum: Vec<f64>,
}

/// Per (layer, KV head): K and V extents.
#[derive(Debug)]
struct Seq {
    shape: ModelShape,
    len: Vec<usize>,
    k: Vec<Extent>,
    v: Vec<Extent>,
    /// First LBA and blocks of the whole allocation.
    alloc: (u64, u64),
}

/// KV on a plain NVMe namespace, attention on the host.
#[derive(Debug)]
pub struct SsdOffload<T> {
    dev: T,
    lba_size: usize,
    lbas: u64,
    max_transfer: usize,
    capacity: usize,
    /// Free LBA ranges `(start, blocks)`.
    free: Vec<(u64, u64)>,
    seqs: HashMap<u32, Seq>,
    /// Bytes read from the drive by the last decode.
    pub last_read_bytes: u64,
}

fn dev_err(e: impl std::fmt::Display) -> BackendError {
    BackendError::Storage(e.to_string())
}

impl<T: Transport> SsdOffload<T> {
    /// A namespace of `lbas` blocks of `lba_size` bytes behind `dev`,
    /// commands of at most `max_transfer` bytes, room for `capacity` tokens
    /// per (sequence, layer, head).
    pub fn new(
        dev: T,
        lba_size: usize,
        lbas: u64,
        max_transfer: usize,
        capacity: usize,
    ) -> Result<Self, BackendError> {
        if lba_size == 0 || !lba_size.is_power_of_two() || max_transfer < lba_size || capacity == 0
        {
            return Err(BackendError::Shape(format!(
                "block size {lba_size}, transfer limit {max_transfer}, capacity {capacity}"
            )));
        }
        Ok(Self {
            dev,
            lba_size,
            lbas,
            max_transfer: max_transfer / lba_size * lba_size,
            capacity,
            free: vec![(0, lbas)],
            seqs: HashMap::new(),
            last_read_bytes: 0,
        })
    }

    /// The transport.
    pub fn device_mut(&mut self) -> &mut T {
        &mut self.dev
    }

    fn blocks_for(&self, bytes: usize) -> u64 {
        bytes.div_ceil(self.lba_size) as u64
    }

    fn io(&mut self, opcode: Opcode, lba: u64, data: IoData) -> Result<Vec<u8>, BackendError> {
        let len = data.len();
        let mut sqe = Sqe::new(opcode);
        sqe.cdw10 = lba as u32;
        sqe.cdw11 = (lba >> 32) as u32;
        sqe.cdw12 = (len / self.lba_size - 1) as u32;
        self.dev.submit(IoRequest { sqe, data }).map_err(dev_err)?;
        let (_, res) = self.dev.reap().map_err(dev_err)?;
        let st = res.cqe.status();
        if !st.is_success() {
            return Err(BackendError::Storage(format!(
                "{} of {len} bytes at LBA {lba}: {st}",
                if opcode == READ { "read" } else { "write" }
            )));
        }
        Ok(res.data)
    }

    fn write(&mut self, lba: u64, bytes: &[u8]) -> Result<(), BackendError> {
        for (i, chunk) in bytes.chunks(self.max_transfer).enumerate() {
            let at = lba + (i * self.max_transfer / self.lba_size) as u64;
            self.io(WRITE, at, IoData::ToDevice(chunk.to_vec()))?;
        }
        Ok(())
    }

    fn read(&mut self, lba: u64, len: usize) -> Result<Vec<u8>, BackendError> {
        let mut out = Vec::with_capacity(len);
        let mut off = 0;
        while off < len {
            let n = (len - off).min(self.max_transfer);
            let at = lba + (off / self.lba_size) as u64;
            out.extend(self.io(READ, at, IoData::FromDevice(n))?);
            off += n;
        }
        self.last_read_bytes += len as u64;
        Ok(out)
    }

    /// Appends `rows` (fp16 bytes) to an extent, writing every block that
    /// fills up.
    fn push(&mut self, e: &mut Extent, rows: &[u8]) -> Result<(), BackendError> {
        e.tail.extend_from_slice(rows);
        let full = e.tail.len() / self.lba_size * self.lba_size;
        if full > 0 {
            let at = e.lba + (e.flushed_bytes / self.lba_size) as u64;
            let block: Vec<u8> = e.tail.drain(..full).collect();
            self.write(at, &block)?;
            e.flushed_bytes += full;
        }
        Ok(())
    }

    /// The extent's bytes: the blocks on the drive, then the tail.
    fn load(&mut self, e: &Extent) -> Result<Vec<u8>, BackendError> {
        let mut b = if e.flushed_bytes > 0 {
            self.read(e.lba, e.flushed_bytes)?
        } else {
            Vec::new()
        };
        b.extend_from_slice(&e.tail);
        Ok(b)
    }

    /// The rows `tokens` (ascending) of `row_bytes` each from an extent:
    /// only the blocks that hold them are read, runs of adjacent blocks in
    /// one command; rows past the flushed blocks come from the tail.
    fn load_rows(
        &mut self,
        e: &Extent,
        tokens: &[u32],
        row_bytes: usize,
    ) -> Result<Vec<u8>, BackendError> {
        let lb = self.lba_size;
        let mut blocks: Vec<u64> = Vec::new();
        for &t in tokens {
            let (a, b) = (t as usize * row_bytes, (t as usize + 1) * row_bytes);
            if a >= e.flushed_bytes {
                continue;
            }
            for blk in a / lb..=(b.min(e.flushed_bytes) - 1) / lb {
                if blocks.last() != Some(&(blk as u64)) {
                    blocks.push(blk as u64);
                }
            }
        }
        let mut have = HashMap::new();
        let mut i = 0;
        while i < blocks.len() {
            let mut j = i + 1;
            while j < blocks.len() && blocks[j] == blocks[j - 1] + 1 {
                j += 1;
            }
            let data = self.read(e.lba + blocks[i], (j - i) * lb)?;
            for (n, chunk) in data.chunks_exact(lb).enumerate() {
                have.insert(blocks[i] + n as u64, chunk.to_vec());
            }
            i = j;
        }
        let byte = |off: usize| -> u8 {
            if off >= e.flushed_bytes {
                e.tail.get(off - e.flushed_bytes).copied().unwrap_or(0)
            } else {
                have.get(&((off / lb) as u64)).map_or(0, |b| b[off % lb])
            }
        };
        let mut out = Vec::with_capacity(tokens.len() * row_bytes);
        for &t in tokens {
            let a = t as usize * row_bytes;
            out.extend((a..a + row_bytes).map(byte));
        }
        Ok(out)
    }

    fn alloc(&mut self, blocks: u64) -> Option<u64> {
        let i = self.free.iter().position(|&(_, n)| n >= blocks)?;
        let (start, n) = self.free[i];
        if n == blocks {
            self.free.remove(i);
        } else {
            self.free[i] = (start + blocks, n - blocks);
        }
        Some(start)
    }

    fn append_rows(
        &mut self,
        seq: u32,
        layer: usize,
        k: &[f32],
        v: &[f32],
        n: usize,
    ) -> Result<(), BackendError> {
        let s = self
            .seqs
            .get(&seq)
            .ok_or(BackendError::UnknownSequence(seq))?;
        let (h, d) = (s.shape.kv_heads, s.shape.head_dim);
        if layer >= s.shape.layers {
            return Err(BackendError::Layer {
                layer,
                layers: s.shape.layers,
            });
        }
        for (what, x) in [("k", k), ("v", v)] {
            if x.len() != h * n * d {
                return Err(BackendError::Length {
                    what,
                    expected: h * n * d,
                    actual: x.len(),
                });
            }
        }
        if s.len[layer] + n > self.capacity {
            return Err(BackendError::Shape(format!(
                "{} tokens exceed the {} reserved per head",
                s.len[layer] + n,
                self.capacity
            )));
        }
        let bytes = |x: &[f32]| -> Vec<u8> {
            to_f16_bits(x)
                .iter()
                .flat_map(|b| b.to_le_bytes())
                .collect()
        };
        let mut seqst = self
            .seqs
            .remove(&seq)
            .ok_or(BackendError::UnknownSequence(seq))?;
        let result = (|| {
            for head in 0..h {
                let rows = head * n * d..(head + 1) * n * d;
                let i = layer * h + head;
                let (kb, vb) = (bytes(&k[rows.clone()]), bytes(&v[rows]));
                for r in f32s(&vb).chunks_exact(d) {
                    for (a, &x) in seqst.v[i].sum.iter_mut().zip(r) {
                        *a += f64::from(x);
                    }
                }
                self.push(&mut seqst.k[i], &kb)?;
                self.push(&mut seqst.v[i], &vb)?;
            }
            seqst.len[layer] += n;
            Ok(())
        })();
        self.seqs.insert(seq, seqst);
        result
    }
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
        .collect()
}

impl<T: Transport> AttentionBackend for SsdOffload<T> {
    fn open(&mut self, seq: u32, shape: ModelShape) -> Result<(), BackendError> {
        shape.validate()?;
        if self.seqs.contains_key(&seq) {
            return Err(BackendError::SequenceExists(seq));
        }
        let per_extent = self.blocks_for(self.capacity * shape.head_dim * 2);
        let extents = (shape.layers * shape.kv_heads * 2) as u64;
        let blocks = per_extent * extents;
        let start = self.alloc(blocks).ok_or_else(|| {
            BackendError::Storage(format!(
                "the namespace ({} blocks) has no {blocks} free blocks for sequence {seq}",
                self.lbas
            ))
        })?;
        let d = shape.head_dim;
        let ext = |i: u64| Extent {
            lba: start + i * per_extent,
            flushed_bytes: 0,
            tail: Vec::new(),
            sum: vec![0.0; d],
        };
        let n = (shape.layers * shape.kv_heads) as u64;
        self.seqs.insert(
            seq,
            Seq {
                shape,
                len: vec![0; shape.layers],
                k: (0..n).map(ext).collect(),
                v: (n..2 * n).map(ext).collect(),
                alloc: (start, blocks),
            },
        );
        Ok(())
    }

    fn append(&mut self, seq: u32, layer: usize, k: &[f32], v: &[f32]) -> Result<(), BackendError> {
        let s = self
            .seqs
            .get(&seq)
            .ok_or(BackendError::UnknownSequence(seq))?;
        let per_token = s.shape.kv_heads * s.shape.head_dim;
        self.append_rows(seq, layer, k, v, k.len() / per_token.max(1))
    }

    fn decode(&mut self, batch: &[DecodeStep<'_>]) -> Result<Vec<Vec<f32>>, BackendError> {
        self.last_read_bytes = 0;
        let mut outs = Vec::with_capacity(batch.len());
        for step in batch {
            if let Some((k, v)) = step.kv_new {
                self.append_rows(step.seq, step.layer, k, v, 1)?;
            }
            let s = self
                .seqs
                .get(&step.seq)
                .ok_or(BackendError::UnknownSequence(step.seq))?;
            let (shape, len) = (s.shape, s.len[step.layer]);
            let (h, d) = (shape.kv_heads, shape.head_dim);
            if step.layer >= shape.layers {
                return Err(BackendError::Layer {
                    layer: step.layer,
                    layers: shape.layers,
                });
            }
            if step.q.len() != shape.q_heads * d {
                return Err(BackendError::Length {
                    what: "q",
                    expected: shape.q_heads * d,
                    actual: step.q.len(),
                });
            }
            let exts: Vec<(Extent, Extent)> = (0..h)
                .map(|head| {
                    let i = step.layer * h + head;
                    (s.k[i].clone(), s.v[i].clone())
                })
                .collect();
            let q: Vec<f32> = step.q.iter().map(|&x| super::round_f16(x)).collect();
            if let Method::SparF(p) = step.method {
                let g = shape.group();
                let gs = attention::shape::GroupShape {
                    group: g,
                    head_dim: d,
                };
                let mut out = Vec::with_capacity(shape.q_heads * d);
                for (head, (ke, ve)) in exts.iter().enumerate() {
                    let k = f32s(&self.load(ke)?);
                    let qh = &q[head * g * d..(head + 1) * g * d];
                    let sel = reference::sparf_select(qh, &k, gs, p)?;
                    let rows = f32s(&self.load_rows(ve, &sel.tokens, d * 2)?);
                    let vbar: Vec<f64> = ve.sum.iter().map(|x| x / len.max(1) as f64).collect();
                    out.extend(reference::sparf_finish(qh, &k, &rows, &vbar, gs, sel).out);
                }
                outs.push(out);
                continue;
            }
            let (mut k, mut v) = (
                Vec::with_capacity(h * len * d),
                Vec::with_capacity(h * len * d),
            );
            for (ke, ve) in &exts {
                k.extend(f32s(&self.load(ke)?));
                v.extend(f32s(&self.load(ve)?));
            }
            let out = match step.method {
                Method::Dense => {
                    let mut o = vec![0f32; shape.q_heads * d];
                    host::dense_f32(&q, &k, &v, shape.q_heads, h, len, d, &mut o)?;
                    o
                }
                m => reference::attend_heads(m, &q, &k, &v, shape.q_heads, h, len, d)?,
            };
            outs.push(out);
        }
        Ok(outs)
    }

    fn close(&mut self, seq: u32) -> Result<(), BackendError> {
        let s = self
            .seqs
            .remove(&seq)
            .ok_or(BackendError::UnknownSequence(seq))?;
        self.free.push(s.alloc);
        self.free.sort_unstable();
        // Merge neighbours.
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.free.len());
        for (st, n) in self.free.drain(..) {
            match merged.last_mut() {
                Some((ps, pn)) if *ps + *pn == st => *pn += n,
                _ => merged.push((st, n)),
            }
        }
        self.free = merged;
        Ok(())
    }

    fn name(&self) -> &str {
        "ssd-offload"
    }
}
