//! [`SolidBackend`]: block-sparse decode attention on the host with the KV
//! cache in a [`KvStore`] on a plain SSD (or in DRAM, the same code) — and
//! its scheduler.
//!
//! # The scheduler
//!
//! SolidAttention splits a layer's decode into microtasks — q/kv
//! projection, store, prefetch, select, load, attention — and issues I/O
//! as early as the dependencies allow. The model here calls the backend
//! once per layer with q, k and v already projected, so the DAG maps onto
//! one backend call per layer like this:
//!
//! ```text
//! decode(layer l) ─┬─ store: append k, v to the DRAM tail; a full block is
//!                  │         written asynchronously (never waited for here)
//!                  ├─ select: score blocks by their in-DRAM representatives
//!                  ├─ load:   read the needed blocks that the prefetch of
//!                  │          l did not bring (into free slots, then into
//!                  │          the slots of wrong guesses: order does not
//!                  │          matter to attention, only K/V alignment)
//!                  ├─ wait:   for l's reads (the only blocking point:
//!                  │          counted as blocking time)
//!                  ├─ prefetch l+1 … l+N: the blocks those layers chose
//!                  │          last step + their sinks and local blocks,
//!                  │          read while this layer's attention, its MLP
//!                  │          and the next layer's projections run
//!                  └─ attention over the slots and the DRAM tail
//! ```
//!
//! **Priority.** The misses of layer l are on the critical path; the
//! prefetch of l+1 is not. When l has misses, the prefetch is issued only
//! once they are in, so that no speculative read is queued in front of
//! them (SolidAttention's latency-aware priority; measured here, issuing
//! the prefetch before waiting made the misses wait behind it and cut the
//! benefit of prefetching by more than half). When l has no misses (dense,
//! or a perfect guess), the prefetch goes out before the wait, to overlap
//! as much as possible.
//!
//! The prefetch of layer l+1 needs no query: it predicts from the previous
//! step (SolidAttention measures ≈ 81% overlap between consecutive steps)
//! and from the sinks and local window, which are known in advance. After
//! the last layer the prediction wraps to layer 0 of the next step, so the
//! reads overlap the output head and the sampling. Reads are issued in
//! runs of adjacent blocks into adjacent slots (the local window is one
//! read). Everything is asynchronous through io_uring; there is no I/O
//! thread: the drive works while the CPU computes.
//!
//! DRAM is bounded: `N + 1` read buffers of `budget / block + 1` blocks
//! per KV head, a few write slots, one partial block per (layer, head),
//! and the representatives.

use std::collections::HashMap;
use std::time::Instant;

use attention::host::interleaved_f32;
use attention::reference::{block_score, fixed_blocks, select_blocks};
use attention::shape::{BlockParams, Method};

use super::setup::{Budget, Prefetch};
use super::stats::{LayerStats, SolidStats};
use super::store::{KvStore, extend_f16};
use host_driver::backend::lengths::Lengths;
use host_driver::backend::{AttentionBackend, BackendError, DecodeStep, ModelShape};

/// Blocks in one read command at most (256 KiB at 8 KiB blocks).
const MAX_RUN: usize = 32;

/// Settings of a [`SolidBackend`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SolidOptions {
    /// Speculative prefetch.
    pub prefetch: Prefetch,
    /// The block-sparse budget rule.
    pub budget: Budget,
    /// Slots per KV head of a read buffer, in blocks: what one step reads,
    /// plus room for the gaps read through.
    pub max_blocks: usize,
    /// Unneeded blocks read through between two needed ones to make one
    /// command of two (0: never). Worth it on drives limited by commands
    /// per second more than by bytes.
    pub merge_gap: usize,
}

/// One read buffer: the blocks of one (sequence, layer).
#[derive(Debug, Clone)]
struct Buf {
    /// The (sequence, layer) it holds or is reading.
    target: Option<(u32, usize)>,
    /// `[head][slot]`: the block each slot holds (or is reading).
    held: Vec<Vec<Option<usize>>>,
    /// `[head][slot]`: a read into the slot is in flight.
    busy: Vec<Vec<bool>>,
    /// Read tag → (head, first slot, slots).
    inflight: HashMap<u64, (usize, usize, usize)>,
    /// Blocks it read speculatively.
    speculative: u64,
    /// The visit that last targeted it (for reuse, oldest first).
    used_at: u64,
}

impl Buf {
    fn new(kvh: usize, slots: usize) -> Self {
        Self {
            target: None,
            held: vec![vec![None; slots]; kvh],
            busy: vec![vec![false; slots]; kvh],
            inflight: HashMap::new(),
            speculative: 0,
            used_at: 0,
        }
    }

    /// Retargets an idle buffer.
    fn reset(&mut self, target: (u32, usize), visit: u64) {
        self.target = Some(target);
        self.speculative = 0;
        self.used_at = visit;
        self.held.iter_mut().for_each(|h| h.fill(None));
    }
}

/// Per open sequence: its store slot and last step's choices.
#[derive(Debug, Clone)]
struct SeqRun {
    slot: usize,
    /// `[layer][head]`: the blocks on the drive attended last step.
    prev: Vec<Vec<Vec<usize>>>,
}

/// Block-sparse (or dense) attention with the KV cache in a [`KvStore`].
#[derive(Debug)]
pub struct SolidBackend {
    store: KvStore,
    opts: SolidOptions,
    lengths: Lengths,
    seqs: HashMap<u32, SeqRun>,
    bufs: Vec<Buf>,
    /// Decode calls so far: call `v` uses buffer `v % bufs.len()`.
    visit: u64,
    /// Per layer counters.
    pub stats: SolidStats,
    name: String,
    last_read: Option<f64>,
}

fn storage(m: impl Into<String>) -> BackendError {
    BackendError::Storage(m.into())
}

impl SolidBackend {
    /// The backend over `store` (create it with read slots
    /// [`Self::read_slots_for`]`(opts, kv_heads)`).
    pub fn new(store: KvStore, opts: SolidOptions) -> Result<Self, BackendError> {
        let kvh = store.layout().shape.kv_heads;
        let nbuf = match opts.prefetch {
            Prefetch::Off => 1,
            Prefetch::Ahead(n) => n.clamp(1, 4) + 1,
        };
        if !store.is_dram() && store.read_slots() < Self::read_slots_for(opts, kvh) {
            return Err(storage(format!(
                "the store has {} read slots, the scheduler needs {}",
                store.read_slots(),
                Self::read_slots_for(opts, kvh)
            )));
        }
        let name = match (store.is_dram(), opts.prefetch) {
            (true, _) => "dram".to_string(),
            (false, Prefetch::Off) => "ssd".to_string(),
            (false, Prefetch::Ahead(n)) => format!("ssd+prefetch{n}"),
        };
        Ok(Self {
            bufs: vec![Buf::new(kvh, opts.max_blocks); nbuf],
            store,
            opts,
            lengths: Lengths::default(),
            seqs: HashMap::new(),
            visit: 0,
            stats: SolidStats::default(),
            name,
            last_read: None,
        })
    }

    /// Read slots a store needs for these options.
    pub fn read_slots_for(opts: SolidOptions, kv_heads: usize) -> usize {
        let nbuf = match opts.prefetch {
            Prefetch::Off => 1,
            Prefetch::Ahead(n) => n.clamp(1, 4) + 1,
        };
        nbuf * kv_heads * opts.max_blocks
    }

    /// The options it runs with.
    pub fn options(&self) -> SolidOptions {
        self.opts
    }

    /// The store.
    pub fn store(&self) -> &KvStore {
        &self.store
    }

    /// The store, mutable (to flush it).
    pub fn store_mut(&mut self) -> &mut KvStore {
        &mut self.store
    }

    /// Resumes sequence `seq` already in a reopened store.
    pub fn resume(&mut self, seq: u32, shape: ModelShape) -> Result<(), BackendError> {
        let slot = self
            .store
            .slot_of(seq)
            .ok_or(BackendError::UnknownSequence(seq))?;
        self.lengths.open(seq, shape)?;
        for l in 0..shape.layers {
            self.lengths.grow(seq, l, self.store.len(slot, l));
        }
        self.seqs.insert(
            seq,
            SeqRun {
                slot,
                prev: vec![vec![Vec::new(); shape.kv_heads]; shape.layers],
            },
        );
        Ok(())
    }

    fn params(&self, m: Method, s: usize) -> Result<Option<BlockParams>, BackendError> {
        let block = self.store.layout().block;
        let p = match (m, self.opts.budget) {
            (Method::Dense, _) => return Ok(None),
            (Method::Block(p), Budget::Method) => BlockParams { block, ..p },
            (Method::Block(_), Budget::Default) => BlockParams {
                block,
                budget: BlockParams::default_for(s).budget.max(2 * block),
            },
            (Method::Block(_), Budget::Tokens(t)) => BlockParams { block, budget: t },
            (m, _) => {
                return Err(BackendError::Shape(format!(
                    "the SSD backend runs dense and block attention, not {}",
                    m.name()
                )));
            }
        };
        p.validate()?;
        Ok(Some(p))
    }

    /// The blocks on the drive a step of `s` tokens reads before knowing
    /// the query: last step's choice, sinks and local blocks.
    fn predict(&self, seq: u32, layer: usize, head: usize, m: Method) -> Vec<usize> {
        let Some(run) = self.seqs.get(&seq) else {
            return Vec::new();
        };
        let on_disk = self.store.full_blocks(run.slot, layer);
        let s = self.store.len(run.slot, layer) + 1;
        let mut want: Vec<bool> = match self.params(m, s) {
            Ok(Some(p)) => fixed_blocks(s, p),
            _ => vec![true; s.div_ceil(self.store.layout().block)],
        };
        want.truncate(on_disk);
        want.resize(on_disk, false);
        for &b in &run.prev[layer][head] {
            if b < on_disk {
                want[b] = true;
            }
        }
        let mut out: Vec<usize> = (0..on_disk).filter(|&b| want[b]).collect();
        out.truncate(self.opts.max_blocks);
        out
    }

    /// Reaps reads until buffer `j` has none in flight.
    fn wait_buf(&mut self, j: usize) -> Result<(), BackendError> {
        while !self.bufs[j].inflight.is_empty() {
            let d = self.store.wait_read()?;
            for b in &mut self.bufs {
                if let Some((head, start, n)) = b.inflight.remove(&d.tag) {
                    b.busy[head][start..start + n].fill(false);
                    break;
                }
            }
        }
        Ok(())
    }

    fn slot_base(&self, j: usize, head: usize) -> usize {
        (j * self.store.layout().shape.kv_heads + head) * self.opts.max_blocks
    }

    /// Reads `blocks` (ascending) of (seq slot, layer, head) into buffer
    /// `j`'s free slots, runs of adjacent blocks into runs of adjacent
    /// slots. Returns how many could not be placed.
    fn place(
        &mut self,
        j: usize,
        slot: usize,
        layer: usize,
        head: usize,
        blocks: &[usize],
    ) -> Result<usize, BackendError> {
        let base = self.slot_base(j, head);
        let gap = self.opts.merge_gap;
        let mut i = 0;
        while i < blocks.len() {
            let (held, busy) = (&self.bufs[j].held[head], &self.bufs[j].busy[head]);
            let free = |k: usize| held[k].is_none() && !busy[k];
            // Free stretches of slots: (start, length).
            let mut stretches = Vec::new();
            let mut k = 0;
            while k < held.len() {
                if free(k) {
                    let n = (k..held.len()).take_while(|&x| free(x)).count();
                    stretches.push((k, n));
                    k += n;
                } else {
                    k += 1;
                }
            }
            let Some(&(first_free, first_len)) = stretches.first() else {
                return Ok(blocks.len() - i);
            };
            // The extent from blocks[i]: needed blocks with gaps of at most
            // `gap` unneeded ones (read through: one larger command costs
            // the drive less than two small ones).
            let mut end = i;
            while end + 1 < blocks.len()
                && blocks[end + 1] - blocks[end] - 1 <= gap
                && blocks[end + 1] - blocks[i] < MAX_RUN
            {
                end += 1;
            }
            let span = blocks[end] - blocks[i] + 1;
            let (start, n) = match stretches.iter().find(|&&(_, len)| len >= span) {
                Some(&(start, _)) => (start, span),
                None => {
                    // No room for the whole extent: the adjacent run from
                    // blocks[i], as much as fits in the first stretch.
                    let mut run = 1;
                    while i + run < blocks.len()
                        && blocks[i + run] == blocks[i] + run
                        && run < MAX_RUN
                    {
                        run += 1;
                    }
                    (first_free, run.min(first_len))
                }
            };
            let tag = self
                .store
                .issue_read(base + start, (slot, layer, head, blocks[i]), n)?;
            let buf = &mut self.bufs[j];
            buf.inflight.insert(tag, (head, start, n));
            buf.busy[head][start..start + n].fill(true);
            for k in 0..n {
                buf.held[head][start + k] = Some(blocks[i] + k);
            }
            let last = blocks[i] + n - 1;
            while i < blocks.len() && blocks[i] <= last {
                i += 1;
            }
        }
        Ok(0)
    }

    /// The least recently used buffer other than those in `not`.
    fn spare(&self, not: &[usize]) -> usize {
        (0..self.bufs.len())
            .filter(|j| !not.contains(j))
            .min_by_key(|&j| self.bufs[j].used_at)
            .unwrap_or(0)
    }

    /// Makes buffer `j` read the prediction for (seq, layer).
    fn prefetch(
        &mut self,
        j: usize,
        seq: u32,
        layer: usize,
        m: Method,
    ) -> Result<(), BackendError> {
        self.wait_buf(j)?;
        let kvh = self.store.layout().shape.kv_heads;
        self.bufs[j].reset((seq, layer), self.visit);
        let Some(slot) = self.seqs.get(&seq).map(|r| r.slot) else {
            return Ok(());
        };
        for head in 0..kvh {
            let blocks = self.predict(seq, layer, head, m);
            self.bufs[j].speculative += blocks.len() as u64;
            self.place(j, slot, layer, head, &blocks)?;
        }
        self.store.submit()
    }

    /// The (sequence, layer) decoded after (seq, layer).
    fn next_of(&self, seq: u32, layer: usize) -> (u32, usize) {
        let layers = self.lengths.shape(seq).map(|s| s.layers).unwrap_or(1);
        (seq, (layer + 1) % layers)
    }

    /// Issues the prefetch of the layers after (seq, layer), buffer `j`
    /// excepted.
    fn prefetch_ahead(
        &mut self,
        j: usize,
        seq: u32,
        layer: usize,
        method: Method,
    ) -> Result<(), BackendError> {
        let Prefetch::Ahead(n) = self.opts.prefetch else {
            return Ok(());
        };
        let mut at = (seq, layer);
        let mut taken = vec![j];
        for _ in 0..n.clamp(1, 4) {
            at = self.next_of(at.0, at.1);
            if at == (seq, layer) {
                break;
            }
            let have = (0..self.bufs.len())
                .find(|k| !taken.contains(k) && self.bufs[*k].target == Some(at));
            let jj = match have {
                Some(k) => k,
                None => {
                    let k = self.spare(&taken);
                    self.prefetch(k, at.0, at.1, method)?;
                    k
                }
            };
            taken.push(jj);
        }
        Ok(())
    }

    /// One decode of one (sequence, layer).
    fn step(&mut self, st: &DecodeStep<'_>) -> Result<Vec<f32>, BackendError> {
        let shape = self.lengths.shape(st.seq)?;
        let (kvh, d, g) = (shape.kv_heads, shape.head_dim, shape.group());
        let slot = self.seqs[&st.seq].slot;
        let layer = st.layer;
        // Store.
        if let Some((k, v)) = st.kv_new {
            self.store.append(slot, layer, k, v)?;
            self.lengths.grow(st.seq, layer, 1);
        }
        let s = self.store.len(slot, layer);
        let params = self.params(st.method, s)?;
        let block = self.store.layout().block;
        let on_disk = self.store.full_blocks(slot, layer);
        // Select (per KV head).
        let mut reps = Vec::new();
        let mut keep: Vec<Vec<bool>> = Vec::with_capacity(kvh);
        for head in 0..kvh {
            let q = &st.q[head * g * d..(head + 1) * g * d];
            keep.push(match params {
                None => vec![true; s.div_ceil(block)],
                Some(p) => select_blocks(s, p, |b| {
                    self.store.reps(slot, layer, head, b, &mut reps);
                    block_score(q, &reps, d)
                }),
            });
        }
        let fixed: Vec<bool> =
            params.map_or_else(|| vec![true; s.div_ceil(block)], |p| fixed_blocks(s, p));
        let dram = self.store.is_dram();
        let mut ls = LayerStats {
            steps: 1,
            ..LayerStats::default()
        };
        let mut j = 0;
        if !dram {
            // Load: the prefetched buffer if there is one, then the misses.
            if let Some(i) = self
                .bufs
                .iter()
                .position(|b| b.target == Some((st.seq, layer)))
            {
                j = i;
                ls.prefetched = self.bufs[j].speculative;
            } else {
                j = self.spare(&[]);
                self.wait_buf(j)?;
                self.bufs[j].reset((st.seq, layer), self.visit);
            }
            let mut missing: Vec<Vec<usize>> = Vec::with_capacity(kvh);
            for (head, kh) in keep.iter().enumerate() {
                let need: Vec<usize> = (0..on_disk).filter(|&b| kh[b]).collect();
                if need.len() > self.opts.max_blocks {
                    return Err(storage(format!(
                        "a step reads {} blocks per head, the read buffer holds {} (raise the budget or the capacity)",
                        need.len(),
                        self.opts.max_blocks
                    )));
                }
                let held = &mut self.bufs[j].held[head];
                let mut miss = Vec::new();
                for &b in &need {
                    ls.needed += 1;
                    let dynamic = !fixed[b];
                    ls.needed_dynamic += dynamic as u64;
                    if held.contains(&Some(b)) {
                        ls.hits += 1;
                        ls.hits_dynamic += dynamic as u64;
                    } else {
                        miss.push(b);
                    }
                }
                ls.misses += miss.len() as u64;
                // Slots holding blocks this step does not need are free.
                for h in held.iter_mut() {
                    if h.is_some_and(|b| b >= on_disk || !kh[b]) {
                        *h = None;
                    }
                }
                missing.push(miss);
            }
            let t = Instant::now();
            let mut left = Vec::with_capacity(kvh);
            for (head, miss) in missing.iter().enumerate() {
                let n = self.place(j, slot, layer, head, miss)?;
                left.push(n);
            }
            if left.iter().any(|&n| n > 0) {
                // Free slots were still being read by wrong guesses: wait
                // for them, then overwrite.
                self.wait_buf(j)?;
                for (head, miss) in missing.iter().enumerate() {
                    let from = miss.len() - left[head];
                    if self.place(j, slot, layer, head, &miss[from..])? > 0 {
                        return Err(storage("read buffer too small for the step"));
                    }
                }
            }
            self.store.submit()?;
            ls.blocking_ns += t.elapsed().as_nanos() as u64;
            // Reads this layer waits for go first: with misses in flight the
            // next layers' prefetch waits until they are in (a speculative
            // read queued beside them would delay the critical path);
            // without misses it goes at once, to overlap the most.
            let late = ls.misses > 0;
            if !late {
                self.prefetch_ahead(j, st.seq, layer, st.method)?;
            }
            let t = Instant::now();
            self.wait_buf(j)?;
            ls.blocking_ns += t.elapsed().as_nanos() as u64;
            if late {
                self.prefetch_ahead(j, st.seq, layer, st.method)?;
            }
        }
        // Attention over the slots (or DRAM) and the tail.
        let mut out = vec![0f32; shape.q_heads * d];
        let mut rows_f32: Vec<f32> = Vec::new();
        let row_bytes = 4 * d;
        let mut read_tokens = 0usize;
        for (head, kh) in keep.iter().enumerate() {
            rows_f32.clear();
            let tail = self.store.tail(slot, layer, head);
            for (b, _) in kh.iter().enumerate().filter(|(_, k)| **k) {
                let rows = (s - b * block).min(block);
                let bytes: &[u8] = match tail {
                    Some((tb, t)) if tb == b => t,
                    _ if dram => self
                        .store
                        .dram_block(slot, layer, head, b)
                        .ok_or_else(|| storage(format!("block {b} missing in DRAM")))?,
                    _ => {
                        let k = self.bufs[j].held[head]
                            .iter()
                            .position(|h| *h == Some(b))
                            .ok_or_else(|| storage(format!("block {b} was not loaded")))?;
                        self.store.slot_rows(self.slot_base(j, head) + k)?
                    }
                };
                let bytes = &bytes[..rows * row_bytes];
                extend_f16(bytes, &mut rows_f32);
                read_tokens += rows;
            }
            interleaved_f32(
                &st.q[head * g * d..(head + 1) * g * d],
                &rows_f32,
                g,
                d,
                &mut out[head * g * d..(head + 1) * g * d],
            )?;
        }
        self.last_read = Some(read_tokens as f64 / (kvh * s) as f64);
        // Remember the choice for the next step's prefetch.
        let run = self
            .seqs
            .get_mut(&st.seq)
            .ok_or(BackendError::UnknownSequence(st.seq))?;
        for (head, kh) in keep.iter().enumerate() {
            run.prev[layer][head] = (0..on_disk).filter(|&b| kh[b]).collect();
        }
        self.stats.layer(layer).add(&ls);
        self.visit += 1;
        Ok(out)
    }
}

impl AttentionBackend for SolidBackend {
    fn open(&mut self, seq: u32, shape: ModelShape) -> Result<(), BackendError> {
        shape.validate()?;
        let slot = self.store.open_seq(seq, shape)?;
        if let Err(e) = self.lengths.open(seq, shape) {
            let _ = self.store.close_seq(seq);
            return Err(e);
        }
        self.seqs.insert(
            seq,
            SeqRun {
                slot,
                prev: vec![vec![Vec::new(); shape.kv_heads]; shape.layers],
            },
        );
        Ok(())
    }

    fn append(&mut self, seq: u32, layer: usize, k: &[f32], v: &[f32]) -> Result<(), BackendError> {
        let n = self.lengths.check_append(seq, layer, k, v)?;
        let slot = self.seqs[&seq].slot;
        self.store.append(slot, layer, k, v)?;
        self.lengths.grow(seq, layer, n);
        Ok(())
    }

    fn decode(&mut self, batch: &[DecodeStep<'_>]) -> Result<Vec<Vec<f32>>, BackendError> {
        self.lengths.check_batch(batch)?;
        batch.iter().map(|st| self.step(st)).collect()
    }

    fn close(&mut self, seq: u32) -> Result<(), BackendError> {
        self.lengths.close(seq)?;
        self.seqs.remove(&seq);
        for j in 0..self.bufs.len() {
            if self.bufs[j].target.is_some_and(|(s, _)| s == seq) {
                self.wait_buf(j)?;
                self.bufs[j].target = None;
            }
        }
        self.store.close_seq(seq)
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn last_read_fraction(&self) -> Option<f64> {
        self.last_read
    }
}
