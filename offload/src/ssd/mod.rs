//! [`SsdKv`]: the SSD block-sparse backend (SolidAttention's KV store on a
//! plain drive or in a directory) behind the calls of [`crate::Drives`].
//! Attention runs on the host; the KV cache lives on the SSD, read a block
//! at a time. Its methods are `dense` and `block`.
//!
//! The store is made for one model shape, so every sequence has it. A
//! batch is checked and copied at submit and computed at fetch (the
//! store's own prefetch overlaps its reads with the compute inside the
//! call). The store holds io_uring buffers and stays on one thread:
//! [`SsdWorker`] runs it on a thread of its own, where a batch is computed
//! as soon as it is submitted, while the caller goes on.

mod worker;

pub use worker::SsdWorker;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use attention::shape::Method;
use host_driver::backend::{AttentionBackend, DecodeStep, ModelShape};
use solid_attention::{Budget, KvLocation, Prefetch, SolidBackend, SsdSetup};

use crate::OffloadError;
use crate::drives::Step;
use crate::method::MethodSpec;
use crate::report::{BatchOutput, StepOutput, StepReport};

/// Where and how big the store is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsdOptions {
    /// A directory (the store is `DIR/<name>.kv`), a raw namespace
    /// (`/dev/nvmeXnY` or `/dev/ngXnY`: overwritten), or `dram` (the
    /// in-memory baseline).
    pub location: String,
    /// The store file's name in a directory.
    pub name: String,
    /// Tokens per sequence at most.
    pub capacity: usize,
    /// Sequences open at once at most.
    pub slots: usize,
    /// Tokens per block.
    pub block: usize,
    /// Layers of speculative prefetch (0: off).
    pub prefetch: usize,
}

impl SsdOptions {
    /// SolidAttention's defaults (blocks of 32, prefetch one layer ahead)
    /// at `location`.
    pub fn new(location: impl Into<String>, capacity: usize, slots: usize) -> Self {
        Self {
            location: location.into(),
            name: "instinfer".into(),
            capacity,
            slots,
            block: 32,
            prefetch: 1,
        }
    }
}

/// One step copied at submit.
#[derive(Debug)]
struct Owned {
    seq: u32,
    layer: usize,
    q: Vec<f32>,
    kv: Option<(Vec<f32>, Vec<f32>)>,
    method: MethodSpec,
}

/// The SSD backend.
#[derive(Debug)]
pub struct SsdKv {
    backend: SolidBackend,
    shape: ModelShape,
    lens: HashMap<u32, Vec<usize>>,
    pending: HashMap<u64, Vec<Owned>>,
    next_batch: u64,
}

impl SsdKv {
    /// A store for sequences of `shape`.
    pub fn open(shape: ModelShape, opts: &SsdOptions) -> Result<Self, OffloadError> {
        shape.validate()?;
        if opts.capacity == 0 || opts.slots == 0 || opts.block == 0 {
            return Err(OffloadError::invalid(
                "capacity, slots and block must all be positive",
            ));
        }
        if opts.prefetch > 4 {
            return Err(OffloadError::invalid(format!(
                "prefetch {} layers ahead (0 to 4)",
                opts.prefetch
            )));
        }
        let location = match opts.location.as_str() {
            "dram" => KvLocation::Dram,
            p if p.starts_with("/dev/") => {
                KvLocation::Raw(solid_attention::setup::block_device_of(p.as_ref()))
            }
            p if PathBuf::from(p).is_dir() => KvLocation::Dir(PathBuf::from(p)),
            p => {
                return Err(OffloadError::invalid(format!(
                    "SSD location {p:?}: an existing directory, /dev/nvmeXnY or dram"
                )));
            }
        };
        if opts.name.is_empty() || opts.name.contains(['/', '\0']) {
            return Err(OffloadError::invalid(format!(
                "store name {:?} is not a file name",
                opts.name
            )));
        }
        let setup = SsdSetup {
            location,
            block: opts.block,
            budget: Budget::Method,
            prefetch: match opts.prefetch {
                0 => Prefetch::Off,
                n => Prefetch::Ahead(n),
            },
            merge_gap: 2,
        };
        let backend = setup.backend(&opts.name, shape, opts.capacity, opts.capacity, opts.slots)?;
        Ok(Self {
            backend,
            shape,
            lens: HashMap::new(),
            pending: HashMap::new(),
            next_batch: 1,
        })
    }

    /// The shape every sequence has.
    pub fn shape(&self) -> ModelShape {
        self.shape
    }

    /// The store file (none in DRAM).
    pub fn path(&self) -> Option<PathBuf> {
        self.backend.store().path().map(PathBuf::from)
    }

    /// Bytes read from and written to the drive so far.
    pub fn io_bytes(&self) -> (u64, u64) {
        let s = &self.backend.store().stats;
        (s.bytes_read, s.bytes_written)
    }

    /// Open sequences, in order.
    pub fn sequences(&self) -> Vec<u32> {
        let mut s: Vec<u32> = self.lens.keys().copied().collect();
        s.sort_unstable();
        s
    }

    /// Opens `seq`.
    pub fn open_sequence(&mut self, seq: u32) -> Result<(), OffloadError> {
        if self.lens.contains_key(&seq) {
            return Err(OffloadError::SequenceExists(seq));
        }
        self.backend.open(seq, self.shape)?;
        self.lens.insert(seq, vec![0; self.shape.layers]);
        Ok(())
    }

    /// Closes `seq`, dropping any pending step of it.
    pub fn close_sequence(&mut self, seq: u32) -> Result<(), OffloadError> {
        if self.lens.remove(&seq).is_none() {
            return Err(OffloadError::UnknownSequence(seq));
        }
        self.pending
            .retain(|_, steps| steps.iter().all(|s| s.seq != seq));
        Ok(self.backend.close(seq)?)
    }

    /// Tokens stored in `layer` of `seq`.
    pub fn len(&self, seq: u32, layer: usize) -> Result<usize, OffloadError> {
        let lens = self
            .lens
            .get(&seq)
            .ok_or(OffloadError::UnknownSequence(seq))?;
        lens.get(layer).copied().ok_or_else(|| {
            OffloadError::invalid(format!("layer {layer} of a {}-layer sequence", lens.len()))
        })
    }

    /// Appends tokens: `k`, `v` `[kv_heads][n][d]`.
    pub fn append(
        &mut self,
        seq: u32,
        layer: usize,
        k: crate::Values<'_>,
        v: crate::Values<'_>,
    ) -> Result<usize, OffloadError> {
        let have = self.len(seq, layer)?;
        if self.is_pending(seq, layer) {
            return Err(OffloadError::invalid(format!(
                "a decode of sequence {seq} layer {layer} is pending: fetch it first"
            )));
        }
        let n = crate::check::kv(&self.shape, &k, &v)?;
        let room = self.backend.store().layout().capacity_tokens();
        if have + n > room {
            return Err(OffloadError::invalid(format!(
                "sequence {seq} layer {layer} holds {have} tokens; {n} more exceed the store's capacity of {room}"
            )));
        }
        self.backend.append(seq, layer, &k.f32s(), &v.f32s())?;
        if let Some(l) = self.lens.get_mut(&seq).and_then(|l| l.get_mut(layer)) {
            *l += n;
        }
        Ok(n)
    }

    fn is_pending(&self, seq: u32, layer: usize) -> bool {
        self.pending
            .values()
            .any(|p| p.iter().any(|s| s.seq == seq && s.layer == layer))
    }

    /// Checks and copies a batch; returns its handle.
    pub fn submit(&mut self, steps: &[Step<'_>]) -> Result<u64, OffloadError> {
        if steps.is_empty() {
            return Err(OffloadError::invalid("an empty batch"));
        }
        let mut seen = HashSet::new();
        let mut owned = Vec::with_capacity(steps.len());
        for s in steps {
            let len = self.len(s.seq, s.layer)?;
            if !seen.insert((s.seq, s.layer)) || self.is_pending(s.seq, s.layer) {
                return Err(OffloadError::invalid(format!(
                    "sequence {} layer {} has another step pending",
                    s.seq, s.layer
                )));
            }
            let tokens = crate::check::step(&self.shape, len, s)?;
            if tokens > self.backend.store().layout().capacity_tokens() {
                return Err(OffloadError::invalid(format!(
                    "sequence {} layer {} would hold {tokens} tokens, more than the store's capacity",
                    s.seq, s.layer
                )));
            }
            match s.method.resolve(tokens, self.shape.head_dim)? {
                Method::Dense | Method::Block(_) => {}
                _ => {
                    return Err(OffloadError::invalid(format!(
                        "the SSD backend runs dense and block, not {}",
                        s.method.name()
                    )));
                }
            }
            owned.push(Owned {
                seq: s.seq,
                layer: s.layer,
                q: s.q.f32s().into_owned(),
                kv: s
                    .kv_new
                    .map(|(k, v)| (k.f32s().into_owned(), v.f32s().into_owned())),
                method: s.method,
            });
        }
        let id = self.next_batch;
        self.next_batch += 1;
        self.pending.insert(id, owned);
        Ok(id)
    }

    /// Runs batch `id` and returns its outputs in step order.
    pub fn fetch(&mut self, id: u64) -> Result<BatchOutput, OffloadError> {
        let steps = self
            .pending
            .remove(&id)
            .ok_or(OffloadError::UnknownBatch(id))?;
        let mut out = Vec::with_capacity(steps.len());
        for s in &steps {
            let tokens = self.len(s.seq, s.layer)? + usize::from(s.kv.is_some());
            let method = s.method.resolve(tokens, self.shape.head_dim)?;
            let before = self.backend.store().stats.bytes_read;
            let step = DecodeStep {
                seq: s.seq,
                layer: s.layer,
                q: &s.q,
                kv_new: s.kv.as_ref().map(|(k, v)| (k.as_slice(), v.as_slice())),
                method,
            };
            let o = self
                .backend
                .decode(std::slice::from_ref(&step))?
                .pop()
                .ok_or_else(|| OffloadError::Storage("a step got no output".into()))?;
            if s.kv.is_some()
                && let Some(l) = self.lens.get_mut(&s.seq).and_then(|l| l.get_mut(s.layer))
            {
                *l += 1;
            }
            let fraction = self.backend.last_read_fraction().unwrap_or(1.0);
            out.push(StepOutput {
                out: o,
                report: StepReport {
                    tokens: tokens as u32,
                    tokens_attended: (fraction * tokens as f64).round() as u32,
                    engine_bytes: self.backend.store().stats.bytes_read - before,
                    ..StepReport::default()
                },
            });
        }
        Ok(BatchOutput {
            steps: out,
            virtual_ns: None,
        })
    }

    /// Submit and fetch in one call.
    pub fn decode(&mut self, steps: &[Step<'_>]) -> Result<BatchOutput, OffloadError> {
        let id = self.submit(steps)?;
        self.fetch(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Values;

    const SHAPE: ModelShape = ModelShape {
        layers: 2,
        q_heads: 4,
        kv_heads: 2,
        head_dim: 64,
    };

    #[test]
    fn block_sparse_on_a_file_equals_dram_and_dense_is_exact_enough() {
        let dir = std::env::temp_dir().join(format!("offload-ssd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut rng = attention::testdata::SplitMix64::new(3);
        let s = 256;
        let row = SHAPE.kv_heads * SHAPE.head_dim;
        let k: Vec<f32> = (0..row * s).map(|_| rng.next_f32() - 0.5).collect();
        let v: Vec<f32> = (0..row * s).map(|_| rng.next_f32() - 0.5).collect();
        let q: Vec<f32> = (0..SHAPE.q_heads * 64)
            .map(|_| rng.next_f32() - 0.5)
            .collect();
        let run = |loc: &str, method: &str| {
            let mut kv = SsdKv::open(SHAPE, &SsdOptions::new(loc, 512, 2)).unwrap();
            kv.open_sequence(1).unwrap();
            for layer in 0..2 {
                kv.append(1, layer, Values::F32(&k), Values::F32(&v))
                    .unwrap();
            }
            let step = Step {
                seq: 1,
                layer: 1,
                q: Values::F32(&q),
                kv_new: None,
                method: MethodSpec::parse(method, 0.25).unwrap(),
            };
            let o = kv.decode(&[step]).unwrap();
            (o.steps[0].clone(), kv.io_bytes())
        };
        let dir_s = dir.to_str().unwrap();
        let (file, io) = run(dir_s, "block");
        let (dram, _) = run("dram", "block");
        assert_eq!(file.out, dram.out);
        assert!(io.0 > 0 && io.1 > 0, "{io:?}");
        assert_eq!(file.report.tokens, s as u32);
        assert!(file.report.tokens_attended < s as u32);
        let (dense, _) = run(dir_s, "dense");
        assert_eq!(dense.report.tokens_attended, s as u32);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_options_and_methods_are_refused() {
        assert!(SsdKv::open(SHAPE, &SsdOptions::new("/no/such/dir", 64, 1)).is_err());
        assert!(SsdKv::open(SHAPE, &SsdOptions::new("dram", 0, 1)).is_err());
        let mut kv = SsdKv::open(SHAPE, &SsdOptions::new("dram", 64, 1)).unwrap();
        kv.open_sequence(1).unwrap();
        assert!(kv.open_sequence(1).is_err());
        let row = SHAPE.kv_heads * 64;
        let k = vec![0.25f32; row * 4];
        kv.append(1, 0, Values::F32(&k), Values::F32(&k)).unwrap();
        let q = vec![0.1f32; SHAPE.q_heads * 64];
        let step = |m: &str| Step {
            seq: 1,
            layer: 0,
            q: Values::F32(&q),
            kv_new: None,
            method: MethodSpec::parse(m, 0.5).unwrap(),
        };
        assert!(kv.decode(&[step("sparf")]).is_err());
        assert_eq!(kv.decode(&[step("dense")]).unwrap().steps[0].out.len(), 256);
        let big = vec![0.25f32; row * 64];
        assert!(
            kv.append(1, 0, Values::F32(&big), Values::F32(&big))
                .is_err()
        );
        kv.close_sequence(1).unwrap();
        assert!(kv.close_sequence(1).is_err());
    }
}
