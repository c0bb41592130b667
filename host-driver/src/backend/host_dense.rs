//! [`HostDense`]: attention on the host, either with the f32 reference
//! (`attention::reference`, the yardstick for the device's accuracy; dense
//! through the model's SIMD f32 attention, `model::llama::attend_group`) or
//! with the device's integer engine model (`attention::engine`, which must
//! give exactly what the device gives).
//!
//! KV is stored rounded to fp16 (and q is rounded too) so both see exactly
//! the inputs the device sees. The reference runs every method, SparQ,
//! local window and H2O (with its per-head eviction state) included; the
//! engine model runs what the device runs: dense and SparF.
//!
//! Every step also counts what the drive would read for it
//! ([`super::flash`]): the tokens and dims each method chose, on the
//! drive's page layout, beside dense at the same context.

use std::collections::HashMap;

use attention::shape::{BasisKind, GroupShape, Method};
use attention::{AttentionError, engine, reference};

use super::flash::{FlashCount, FlashLayout, ReadSet, Reads};
use super::lengths::Lengths;
use super::{AttentionBackend, BackendError, DecodeStep, ModelShape, round_f16, to_f16_bits};

/// K and V of one KV head of one layer, `[s][d]` each (as f32 and as
/// the fp16 bits the engine model reads), and its H2O state.
#[derive(Debug, Default, Clone)]
struct HeadKv {
    k: Vec<f32>,
    v: Vec<f32>,
    k_bits: Vec<u16>,
    v_bits: Vec<u16>,
    h2o: reference::H2o,
    /// Tokens of the first append (the prefill): SparF+ chooses its
    /// basis from them, as [`super::Rotation`] does for the device.
    prefill: usize,
    /// SparF+: the basis, and K expressed in it (f32 for the reference,
    /// fp16 bits for the engine model).
    basis: Option<(BasisKind, reference::Basis)>,
    k_rot: Vec<f32>,
    k_rot_bits: Vec<u16>,
    /// Tokens of each append, in order.
    appends: Vec<usize>,
    /// The page selection: K and V as the drive places them.
    placed: Option<Placed>,
}

/// K and V (fp16 bits) in slot order, as a drive opened with
/// `proto::Placement { similar: true, .. }` stores them: each KV_APPEND
/// (an append split at the drive's transfer limit) ordered by
/// [`engine::layout_order`], decode tokens in time order.
#[derive(Debug, Clone)]
struct Placed {
    /// The layout's parameters: tokens per page, pinned sinks, recent
    /// tokens kept in order, tokens per KV_APPEND.
    key: (usize, usize, usize, usize),
    k: Vec<u16>,
    v: Vec<u16>,
    /// Appends placed so far.
    appends: usize,
}

impl HeadKv {
    /// Places the appends not yet placed (all of them when the layout
    /// changed) and returns K and V in slot order.
    fn sync_placed(&mut self, d: usize, key: (usize, usize, usize, usize)) -> (&[u16], &[u16]) {
        let (t, sink, keep, chunk) = key;
        if self.placed.as_ref().is_none_or(|p| p.key != key) {
            self.placed = Some(Placed {
                key,
                k: Vec::with_capacity(self.k.len()),
                v: Vec::with_capacity(self.v.len()),
                appends: 0,
            });
        }
        let Some(p) = self.placed.as_mut() else {
            unreachable!("set above");
        };
        for &n in &self.appends[p.appends..] {
            let at = p.k.len() / d.max(1);
            let mut t0 = 0;
            while t0 < n {
                let t1 = (t0 + chunk.max(1)).min(n);
                let lo = at + t0;
                let ks = to_f16_bits(&self.k[lo * d..(at + t1) * d]);
                let vs = to_f16_bits(&self.v[lo * d..(at + t1) * d]);
                let order = engine::layout_order(&ks, d, t, sink.saturating_sub(lo), keep);
                for &j in &order {
                    let j = j as usize;
                    p.k.extend_from_slice(&ks[j * d..(j + 1) * d]);
                    p.v.extend_from_slice(&vs[j * d..(j + 1) * d]);
                }
                t0 = t1;
            }
            p.appends += 1;
        }
        (&p.k, &p.v)
    }
}

impl HeadKv {
    /// Sets up the basis of `kind` (chosen from the prefill keys on first
    /// use) and brings `k_rot` / `k_rot_bits` up to date; returns it.
    fn sync_basis(
        &mut self,
        kind: BasisKind,
        d: usize,
        arithmetic: Arithmetic,
    ) -> &reference::Basis {
        if self.basis.as_ref().is_none_or(|(k, _)| *k != kind) {
            let b = reference::Basis::of_kind(kind, &self.k[..self.prefill * d], d);
            self.k_rot.clear();
            self.k_rot_bits.clear();
            self.basis = Some((kind, b));
        }
        let Some((_, basis)) = self.basis.as_ref() else {
            unreachable!("set above");
        };
        let have = match arithmetic {
            Arithmetic::Reference => self.k_rot.len(),
            Arithmetic::Engine => self.k_rot_bits.len(),
        };
        let more = basis.rotate_key(&self.k[have..]);
        match arithmetic {
            Arithmetic::Reference => self.k_rot.extend(more),
            Arithmetic::Engine => self.k_rot_bits.extend(to_f16_bits(&more)),
        }
        basis
    }
}

/// Which arithmetic a [`HostDense`] uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Arithmetic {
    /// The f32/f64 reference.
    #[default]
    Reference,
    /// The device's bit-exact integer engine model.
    Engine,
}

/// Host-memory backend.
#[derive(Debug, Default)]
pub struct HostDense {
    lengths: Lengths,
    arithmetic: Arithmetic,
    /// `[layer][kv_head]` per sequence.
    kv: HashMap<u32, Vec<Vec<HeadKv>>>,
    /// What the last SparQ or SparF+ step read, as a fraction of dense.
    last_read: Option<f64>,
    /// The drive's layout the flash reads are counted on.
    flash: FlashLayout,
    /// The last step's flash reads.
    last_flash: Option<FlashCount>,
    /// What the guardrail did.
    pub guard: GuardStats,
    /// The drive's transfer limit (bytes; 0: [`DEFAULT_APPEND_LIMIT`]): an
    /// append is placed in the pieces a drive receives it in.
    append_limit: usize,
}

/// The simulated drive's transfer limit (MDTS), bytes.
pub const DEFAULT_APPEND_LIMIT: usize = 2 << 20;

/// How often the guardrail widened k, and what it cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuardStats {
    /// KV-head steps of SparF+.
    pub heads: u64,
    /// Of those, the ones where k was widened.
    pub fired: u64,
    /// K and V elements read beyond the nominal k.
    pub extra_elements: u64,
}

impl std::ops::Add for GuardStats {
    type Output = GuardStats;
    fn add(self, o: GuardStats) -> GuardStats {
        GuardStats {
            heads: self.heads + o.heads,
            fired: self.fired + o.fired,
            extra_elements: self.extra_elements + o.extra_elements,
        }
    }
}

impl std::ops::Sub for GuardStats {
    type Output = GuardStats;
    /// What happened between `o` (earlier) and `self` (later).
    fn sub(self, o: GuardStats) -> GuardStats {
        GuardStats {
            heads: self.heads - o.heads,
            fired: self.fired - o.fired,
            extra_elements: self.extra_elements - o.extra_elements,
        }
    }
}

impl GuardStats {
    /// One KV head's step: `tokens` attended where `nominal` were asked.
    fn count(&mut self, tokens: usize, nominal: usize, d: usize) {
        self.heads += 1;
        if tokens > nominal {
            self.fired += 1;
            self.extra_elements += (2 * (tokens - nominal) * d) as u64;
        }
    }
}

impl HostDense {
    /// An empty backend computing with the f32 reference.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty backend computing with the device's engine model.
    pub fn engine() -> Self {
        Self {
            arithmetic: Arithmetic::Engine,
            ..Self::default()
        }
    }

    /// Places appends as a drive with transfer limit `bytes` receives
    /// them (see [`crate::csd::Csd::append`]).
    pub fn set_append_limit(&mut self, bytes: usize) {
        self.append_limit = bytes;
    }

    /// The arithmetic in use.
    pub fn arithmetic(&self) -> Arithmetic {
        self.arithmetic
    }

    /// Counts flash reads on `layout` (the drive's page size and dim
    /// group; [`FlashLayout::DEFAULT`] until set).
    pub fn set_flash_layout(&mut self, layout: FlashLayout) {
        self.flash = layout;
    }

    fn heads_mut(&mut self, seq: u32, layer: usize) -> Result<&mut Vec<HeadKv>, BackendError> {
        self.kv
            .get_mut(&seq)
            .ok_or(BackendError::UnknownSequence(seq))?
            .get_mut(layer)
            .ok_or(BackendError::UnknownSequence(seq))
    }

    /// Appends `[kv_heads][n][d]` buffers, rounded to fp16.
    fn store(
        &mut self,
        seq: u32,
        layer: usize,
        k: &[f32],
        v: &[f32],
        n: usize,
    ) -> Result<(), BackendError> {
        let arithmetic = self.arithmetic;
        let heads = self.heads_mut(seq, layer)?;
        // `[kv_heads][n][d]`: one contiguous span per head.
        let per_head = k.len() / heads.len().max(1);
        for (h, hk) in heads.iter_mut().enumerate() {
            let span = h * per_head..(h + 1) * per_head;
            if hk.k.is_empty() {
                hk.prefill = n;
            }
            hk.appends.push(n);
            hk.k.extend(k[span.clone()].iter().copied().map(round_f16));
            hk.v.extend(v[span.clone()].iter().copied().map(round_f16));
            if arithmetic == Arithmetic::Engine {
                hk.k_bits.extend(to_f16_bits(&k[span.clone()]));
                hk.v_bits.extend(to_f16_bits(&v[span]));
            }
        }
        self.lengths.grow(seq, layer, n);
        Ok(())
    }
}

impl AttentionBackend for HostDense {
    fn open(&mut self, seq: u32, shape: ModelShape) -> Result<(), BackendError> {
        self.lengths.open(seq, shape)?;
        self.kv.insert(
            seq,
            vec![vec![HeadKv::default(); shape.kv_heads]; shape.layers],
        );
        Ok(())
    }

    fn append(&mut self, seq: u32, layer: usize, k: &[f32], v: &[f32]) -> Result<(), BackendError> {
        let n = self.lengths.check_append(seq, layer, k, v)?;
        if n == 0 {
            return Ok(());
        }
        self.store(seq, layer, k, v, n)
    }

    fn decode(&mut self, batch: &[DecodeStep<'_>]) -> Result<Vec<Vec<f32>>, BackendError> {
        self.lengths.check_batch(batch)?;
        let mut outs = Vec::with_capacity(batch.len());
        for step in batch {
            let shape = self.lengths.shape(step.seq)?;
            if let Some((k, v)) = step.kv_new {
                self.store(step.seq, step.layer, k, v, 1)?;
            }
            let s = self.lengths.len(step.seq, step.layer)?;
            let (g, d) = (shape.group(), shape.head_dim);
            let q: Vec<f32> = step.q.iter().copied().map(round_f16).collect();
            let arithmetic = self.arithmetic;
            let append_limit = match self.append_limit {
                0 => DEFAULT_APPEND_LIMIT,
                n => n,
            };
            let layout = self.flash;
            let mut guard = self.guard;
            let heads = self.heads_mut(step.seq, step.layer)?;
            let mut out = Vec::with_capacity(q.len());
            let group = GroupShape {
                group: g,
                head_dim: d,
            };
            let mut read = 0usize;
            let (mut pages_read, mut pages_all) = (0usize, 0usize);
            let mut flash = Reads::default();
            let n_heads = heads.len();
            step.method.validate(d)?;
            for (h, hk) in heads.iter_mut().enumerate() {
                let q_g = &q[h * g * d..(h + 1) * g * d];
                let set = match (arithmetic, step.method) {
                    (Arithmetic::Reference, Method::Dense) => {
                        // The host's fast f32 attention on the model's
                        // SIMD kernels, the group's query heads together.
                        let mut o = vec![0f32; q_g.len()];
                        model::llama::attend_group(q_g, d, &hk.k, &hk.v, &mut Vec::new(), &mut o);
                        out.extend(o);
                        ReadSet::All
                    }
                    (Arithmetic::Reference, Method::SparQ(p)) => {
                        let t = reference::sparq_traced(q_g, &hk.k, &hk.v, group, p)?;
                        read += t.read_elements(s, d);
                        out.extend(t.out);
                        ReadSet::Sparse {
                            dims: t.dims,
                            tokens: t.tokens,
                        }
                    }
                    (Arithmetic::Reference, Method::SparF(p)) => {
                        let t = reference::sparf_traced(q_g, &hk.k, &hk.v, group, p)?;
                        out.extend(t.out);
                        ReadSet::Sparse {
                            dims: t.dims,
                            tokens: t.tokens,
                        }
                    }
                    (Arithmetic::Reference, Method::Local { window }) => {
                        // Dense over the last `window` tokens, on the same
                        // fast f32 kernel as `Dense`.
                        let first = s.saturating_sub(window.max(1));
                        let (k_w, v_w) = (&hk.k[first * d..s * d], &hk.v[first * d..s * d]);
                        let mut o = vec![0f32; q_g.len()];
                        model::llama::attend_group(q_g, d, k_w, v_w, &mut Vec::new(), &mut o);
                        out.extend(o);
                        ReadSet::Tokens((first as u32..s as u32).collect())
                    }
                    (Arithmetic::Reference, Method::H2o(p)) => {
                        let t = hk.h2o.step_traced(q_g, &hk.k, &hk.v, group, p)?;
                        out.extend(t.out);
                        ReadSet::Tokens(t.tokens)
                    }
                    (Arithmetic::Reference, Method::Block(p)) => {
                        let t = reference::block_sparse_traced(q_g, &hk.k, &hk.v, group, p)?;
                        out.extend(t.out);
                        ReadSet::Tokens(t.tokens)
                    }
                    (Arithmetic::Reference, Method::Oracle { k }) => {
                        let t = reference::oracle_traced(q_g, &hk.k, &hk.v, group, k)?;
                        out.extend(t.out);
                        ReadSet::AllKeys(t.tokens)
                    }
                    (Arithmetic::Reference, Method::SparFPlus(o)) => {
                        hk.sync_basis(o.basis, d, arithmetic);
                        let Some((_, basis)) = hk.basis.as_ref() else {
                            unreachable!("set by sync_basis");
                        };
                        let t = reference::sparf_plus(
                            q_g, &hk.k, &hk.k_rot, &hk.v, group, o.p, o.guard, basis,
                        )?;
                        read += o.p.r * s + 2 * t.tokens.len() * d;
                        guard.count(t.tokens.len(), o.p.k.min(s), d);
                        out.extend(t.out);
                        ReadSet::Sparse {
                            dims: t.dims,
                            tokens: t.tokens,
                        }
                    }
                    (Arithmetic::Engine, Method::Dense) => {
                        let raw =
                            engine::dense_group(&to_f16_bits(q_g), &hk.k_bits, &hk.v_bits, group)?;
                        out.extend(raw.into_iter().map(engine::fx_to_f32));
                        ReadSet::All
                    }
                    (Arithmetic::Engine, Method::SparF(p)) => {
                        let t = engine::sparf_group(
                            &to_f16_bits(q_g),
                            &hk.k_bits,
                            &hk.v_bits,
                            group,
                            p,
                        )?;
                        out.extend(t.out.into_iter().map(engine::fx_to_f32));
                        ReadSet::Sparse {
                            dims: t.dims,
                            tokens: t.tokens,
                        }
                    }
                    (Arithmetic::Engine, Method::SparFPlus(o)) => {
                        let q_bits = to_f16_bits(q_g);
                        let raw = o.basis == BasisKind::Raw;
                        let q_rot = if raw {
                            Vec::new()
                        } else {
                            to_f16_bits(&hk.sync_basis(o.basis, d, arithmetic).rotate_query(q_g))
                        };
                        let (q_approx, k_approx) = if raw {
                            (&q_bits[..], &hk.k_bits[..])
                        } else {
                            (&q_rot[..], &hk.k_rot_bits[..])
                        };
                        let x = engine::PlusInputs {
                            q: &q_bits,
                            q_approx,
                            k: &hk.k_bits,
                            k_approx,
                            v: &hk.v_bits,
                        };
                        let t = engine::sparf_plus_group(x, group, o.p, o.guard)?;
                        read += o.p.r * s + 2 * t.tokens.len() * d;
                        guard.count(t.tokens.len(), o.p.k.min(s), d);
                        out.extend(t.out.into_iter().map(engine::fx_to_f32));
                        ReadSet::Sparse {
                            dims: t.dims,
                            tokens: t.tokens,
                        }
                    }
                    // The drive's method: the engine model in both modes.
                    (_, Method::Pages(p)) => {
                        // Time order is a layout with nothing to group.
                        let keep = if p.similar {
                            p.local_pages * p.page_tokens
                        } else {
                            usize::MAX
                        };
                        // Tokens per KV_APPEND at the drive's transfer limit.
                        let chunk = append_limit / (4 * n_heads * d).max(1);
                        let key = (p.page_tokens, p.sink, keep, chunk);
                        let (k, v) = hk.sync_placed(d, key);
                        let t = engine::pages_group(&to_f16_bits(q_g), k, v, group, p)?;
                        let full = s / p.page_tokens;
                        pages_read += t.pages.len();
                        pages_all += full;
                        out.extend(t.out.into_iter().map(engine::fx_to_f32));
                        ReadSet::Pages {
                            pages: t.pages,
                            page_tokens: p.page_tokens,
                            pinned: p.sink.min(full * p.page_tokens),
                        }
                    }
                    // The engine model runs what the drive runs.
                    (
                        Arithmetic::Engine,
                        Method::SparQ(_)
                        | Method::Local { .. }
                        | Method::H2o(_)
                        | Method::Block(_)
                        | Method::Oracle { .. },
                    ) => {
                        return Err(AttentionError::Unsupported {
                            method: step.method.name(),
                        }
                        .into());
                    }
                };
                flash += layout.reads(&set, s, d);
            }
            let dense = layout.dense(s, d);
            self.last_flash = Some(FlashCount::new(
                flash,
                Reads {
                    pages: dense.pages * n_heads as u64,
                    bytes: dense.bytes * n_heads as u64,
                },
            ));
            self.guard = guard;
            self.last_read = match step.method {
                Method::SparQ(_) | Method::SparFPlus(_) => {
                    Some(read as f64 / (n_heads * 2 * s * d).max(1) as f64)
                }
                // Whole pages: of the full pages, those read (the DRAM
                // tail is read by neither).
                Method::Pages(_) => Some(pages_read as f64 / pages_all.max(1) as f64),
                _ => None,
            };
            outs.push(out);
        }
        Ok(outs)
    }

    fn close(&mut self, seq: u32) -> Result<(), BackendError> {
        self.lengths.close(seq)?;
        self.kv.remove(&seq);
        Ok(())
    }

    fn last_read_fraction(&self) -> Option<f64> {
        self.last_read
    }

    fn last_flash(&self) -> Option<FlashCount> {
        self.last_flash
    }

    fn name(&self) -> &str {
        match self.arithmetic {
            Arithmetic::Reference => "host",
            Arithmetic::Engine => "host-engine",
        }
    }
}
