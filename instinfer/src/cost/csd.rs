//! The CSD side of the cost model, measured on the simulated board: the
//! real firmware, FTL and engine arithmetic behind NVMe queues, with the
//! board's NAND, bus, engine and PCIe timing (virtual time).
//!
//! A [`CsdPoint`] is one OPT-13B-shaped layer on one CSD: `seqs`
//! sequences of `s` tokens and `heads` KV heads of d = 128 are prefilled
//! with `KV_APPEND`, then one decode of every sequence is submitted at
//! once (dense, SparF at a compression, or the flash-aware page selection
//! `pages` at a compression), and the virtual time of each phase is read
//! off the device. The cost model scales it (dense and SparF): a decode
//! step of batch b over L layers costs L · b / seqs times the point's decode
//! time (the device is throughput-bound once its queues are full: the
//! first points run 2 × 40 head-decodes in flight), and the prefill the
//! same with the append time.
//!
//! **The board** is the paper's emulated CSD: 8 channels of 1.4 GB/s
//! (InstInfer §evaluation: a Zynq-7045 board extended to 8 channels of
//! 1.4 GB/s) with 8 ways each, as the Cosmos+ board it is built on, and
//! 4 KiB pages by default ([`Sample::paper`]); the rest is the simulated
//! board's default timing (`boards/sim/src/config.rs`). At 4 KiB a token
//! page holds 16 tokens of one head (d = 128, fp16), and a dim page 2048
//! tokens of one dim; the host groups m ∈ {2, 4, 8} dims per dim page
//! ([`paper_dim_group`]), so a dim page covers 256–1K tokens, as the
//! paper's hidden-dim-indexed map.
//!
//! **Sampling, said plainly.** One layer is simulated, not 40; `seqs`
//! sequences, not the batch; three context lengths (1024, 1536, 2048)
//! interpolated linearly. So that the sample's KV sits where the batch's
//! would, the device DRAM for group buffers is scaled by the share of the
//! batch's streams the sample holds: (1 layer × `seqs`) / (40 layers ×
//! batch 256), e.g. 256 MiB × 2 / 10 240 = 51 KiB for two sequences
//! ([`Sample::dram_budget`]). At batch 256 the board's DRAM holds far less
//! than one dim run per head, so the dim copy and the token pages are on
//! flash and at most the open partial groups are in DRAM (256 MiB over
//! 40 × 40 × 256 head streams is 655 bytes each, less than one token's K,
//! V and dim column, 768 bytes); with the full budget, a sample of two
//! sequences would keep every dim tail in DRAM and SparF's first step
//! would read it without a page read. KV and queries come from a
//! [`KvSource`]: the real model's attention traces scaled to OPT-13B's heads
//! ([`super::trace`]; `instinfer bench paper --trace DIR`), or structured
//! synthetic data (`attention::testdata`: heavy tokens aligned with the
//! query and a recency trend) when no trace is given. Dense reads do not
//! depend on the data; SparF's page skipping does, through which tokens
//! and dims it picks.
//!
//! **Pages** ([`Selection::Pages`], `attention::engine::pages`): the
//! sequences are opened with the method's `Placement` (the drive groups
//! alike keys on the same token pages at `KV_APPEND` and pins the sink
//! tokens in DRAM), and the decode reads at most c of each head's full
//! token pages, chosen from per-page summaries in device DRAM. The knobs
//! are `PagesSetting::DEFAULT` with the board's page size.

use attention::testdata::{structured_kv, structured_query};
use proto::SeqShape;

use super::hw::ModelShape;
use board_sim::{SimConfig, SimCsd};
use ftl::Geometry;
use host_driver::array::ArrayDecode;
use host_driver::csd::CsdError;
use host_driver::policy::{Compression, Policy, Selection};

use crate::error::{RunError, input};
use host_driver::array::CsdArray;
use host_driver::csd::Csd;
use host_driver::measure::{Phase, PhaseCounters};
use host_driver::transport::SimTransport;

/// One simulated layer on one CSD.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CsdPoint {
    /// KV heads on this CSD.
    pub heads: usize,
    /// Context tokens.
    pub s: usize,
    /// `None` for dense; the sparse method's compression otherwise.
    pub compression: Option<f64>,
    /// The method: dense, SparF or pages.
    pub selection: Selection,
    /// Sequences decoded together.
    pub seqs: usize,
    /// Virtual ns of the prefill (`KV_APPEND` of all `s` tokens, all sequences).
    pub append_ns: u64,
    /// Virtual ns of the decode of all sequences.
    pub decode_ns: u64,
    /// Bytes over the channel buses during the decode.
    pub channel_bus_bytes: u64,
    /// Channel bus busy time during the decode, summed over channels (ns).
    pub bus_busy_ns: u64,
    /// Engine busy time during the decode (ns).
    pub engine_busy_ns: u64,
    /// NAND array busy time during the decode, summed over dies (ns).
    pub flash_busy_ns: u64,
    /// Host-link DMA busy time during the decode (ns).
    pub dma_busy_ns: u64,
    /// Array time of the die with the most page reads during the decode
    /// (its reads × tR, ns): a read set spread unevenly over the dies
    /// cannot finish before its busiest die.
    pub busiest_die_ns: u64,
    /// Dies of the board.
    pub dies: usize,
    /// Flash pages read during the decode.
    pub pages_read: u64,
    /// Channels of the board.
    pub channels: usize,
    /// Bus rate of one channel, B/s.
    pub channel_bytes_per_s: f64,
}

#[cfg(test)]
impl CsdPoint {
    /// A dense point of 2 sequences × 40 heads × 1024 tokens on the
    /// paper's 8 × 8 board that took `decode_ns` and nothing else: tests
    /// set the fields they look at.
    pub(crate) fn idle(decode_ns: u64) -> Self {
        Self {
            heads: 40,
            s: 1024,
            compression: None,
            selection: Selection::Dense,
            seqs: 2,
            append_ns: 0,
            decode_ns,
            channel_bus_bytes: 0,
            bus_busy_ns: 0,
            engine_busy_ns: 0,
            flash_busy_ns: 0,
            dma_busy_ns: 0,
            busiest_die_ns: 0,
            dies: 64,
            pages_read: 0,
            channels: 8,
            channel_bytes_per_s: 1.4e9,
        }
    }
}

impl CsdPoint {
    /// Virtual seconds of one layer's decode of one sequence.
    pub fn decode_s_per_seq(&self) -> f64 {
        self.decode_ns as f64 * 1e-9 / self.seqs as f64
    }

    /// Virtual seconds of one layer's prefill write of one sequence.
    pub fn append_s_per_seq(&self) -> f64 {
        self.append_ns as f64 * 1e-9 / self.seqs as f64
    }

    /// Fraction of the decode's time the channel buses were busy, averaged
    /// over channels.
    pub fn channel_utilization(&self) -> f64 {
        self.bus_busy_ns as f64 / (self.channels as f64 * self.decode_ns.max(1) as f64)
    }

    /// Bytes over the buses against the physical limit: every channel
    /// streaming for the whole decode.
    pub fn fraction_of_channel_bandwidth(&self) -> f64 {
        let limit = self.channels as f64 * self.channel_bytes_per_s * self.decode_ns as f64 * 1e-9;
        self.channel_bus_bytes as f64 / limit.max(1.0)
    }
}

/// InstInfer's method at a compression: dense for `None`, SparF otherwise.
pub fn instinfer_selection(compression: Option<f64>) -> Selection {
    match compression {
        None => Selection::Dense,
        Some(_) => Selection::SparF,
    }
}

/// Measured points, looked up by heads and compression, interpolated in s.
#[derive(Clone, Debug, Default)]
pub struct CsdProfile {
    /// Every point.
    pub points: Vec<CsdPoint>,
}

impl CsdProfile {
    /// InstInfer's points (dense for `None`, SparF at `compression`) with
    /// `heads`, by context; points of other methods are not InstInfer's.
    pub fn instinfer_points(&self, heads: usize, compression: Option<f64>) -> Vec<&CsdPoint> {
        self.points_of(instinfer_selection(compression), heads, compression)
    }

    /// The points of `selection` at `compression` with `heads`, by context.
    pub fn points_of(
        &self,
        selection: Selection,
        heads: usize,
        compression: Option<f64>,
    ) -> Vec<&CsdPoint> {
        let mut v: Vec<&CsdPoint> = self
            .points
            .iter()
            .filter(|p| {
                p.selection == selection && p.heads == heads && same(p.compression, compression)
            })
            .collect();
        v.sort_by_key(|p| p.s);
        v
    }

    /// Interpolates `f` of InstInfer's points ([`Self::instinfer_points`])
    /// with `heads` and `compression` at context `s` (linear; clamped to
    /// the measured range).
    pub fn at(
        &self,
        heads: usize,
        compression: Option<f64>,
        s: usize,
        f: impl Fn(&CsdPoint) -> f64,
    ) -> Option<f64> {
        let pts = self.instinfer_points(heads, compression);
        let first = pts.first()?;
        if s <= first.s || pts.len() == 1 {
            return Some(f(first));
        }
        for w in pts.windows(2) {
            if s <= w[1].s {
                let t = (s - w[0].s) as f64 / (w[1].s - w[0].s) as f64;
                return Some(f(w[0]) * (1.0 - t) + f(w[1]) * t);
            }
        }
        pts.last().map(|p| f(p))
    }
}

fn same(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => (x - y).abs() < 1e-9,
        _ => false,
    }
}

/// K, V and q of some heads, fp16 bits.
type HeadsBits = (Vec<u16>, Vec<u16>, Vec<u16>);

/// Where the simulated points' keys, values and queries come from.
#[derive(Clone, Debug, Default)]
pub enum KvSource {
    /// `attention::testdata`'s structured synthetic data.
    #[default]
    Synthetic,
    /// A recorded trace, scaled to the model's head shape.
    Trace(super::trace::Trace),
}

impl KvSource {
    /// `heads` heads of `s` tokens of d = `d` for sequence `seq`: K and V
    /// `[heads][s][d]`, q `[heads][d]`, fp16 bits.
    fn heads(&self, seq: usize, heads: usize, s: usize, d: usize) -> Result<HeadsBits, RunError> {
        match self {
            Self::Synthetic => {
                let seed = (s * 1000 + heads * 10 + seq) as u64;
                let (k, v) = structured_kv(seed, heads, s, d);
                Ok((
                    bits(&k),
                    bits(&v),
                    bits(&structured_query(seed, heads, d, heads)),
                ))
            }
            Self::Trace(t) => {
                if 2 * t.d != d {
                    return Err(input(format!(
                        "the trace's head dim {} does not pair up to {d}",
                        t.d
                    )));
                }
                let (mut k, mut v, mut q) = (Vec::new(), Vec::new(), Vec::new());
                for h in 0..heads {
                    // Each sequence starts at another trace head.
                    let (kh, vh, qh) = t.opt_head(seq * heads + h, s).ok_or_else(|| {
                        input(format!("the trace holds {} tokens, {s} asked", t.s))
                    })?;
                    k.extend(bits(&kh));
                    v.extend(bits(&vh));
                    q.extend(bits(&qh));
                }
                Ok((k, v, q))
            }
        }
    }

    /// A short description for reports.
    pub fn describe(&self) -> String {
        match self {
            Self::Synthetic => "structured synthetic KV".into(),
            Self::Trace(t) => format!(
                "SmolLM2 trace ({} layers x {} KV heads x {} tokens, d {} paired to {})",
                t.layers(),
                t.kv_heads,
                t.s,
                t.d,
                2 * t.d
            ),
        }
    }
}

/// What to simulate: KV heads per CSD, context, the method.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CsdSpec {
    /// KV heads on the CSD.
    pub heads: usize,
    /// Context tokens.
    pub s: usize,
    /// `None` dense, else the sparse method at this compression.
    pub compression: Option<f64>,
    /// [`Selection::Dense`] (no compression), or one of the drive's sparse
    /// selections (a compression): [`Selection::SparF`],
    /// [`Selection::SparFGuard`], [`Selection::Pages`], [`Selection::Quest`].
    pub selection: Selection,
}

impl CsdSpec {
    /// InstInfer's methods: dense for `None`, SparF at `compression`
    /// otherwise.
    pub fn new(heads: usize, s: usize, compression: Option<f64>) -> Self {
        Self {
            heads,
            s,
            compression,
            selection: instinfer_selection(compression),
        }
    }

    /// The flash-aware page selection at `compression`.
    pub fn pages(heads: usize, s: usize, compression: f64) -> Self {
        Self::sparse(Selection::Pages, heads, s, compression)
    }

    /// One of the drive's sparse `selection`s at `compression`.
    pub fn sparse(selection: Selection, heads: usize, s: usize, compression: f64) -> Self {
        Self {
            heads,
            s,
            compression: Some(compression),
            selection,
        }
    }

    /// The method's policy on a board of `page_size`-byte pages (the
    /// page selection's knobs at their defaults, its pages the board's).
    pub fn policy(&self, page_size: u32) -> Result<Policy, RunError> {
        let mut policy = match (self.selection, self.compression) {
            (Selection::Dense, None) => Policy::DENSE,
            (
                Selection::SparF | Selection::SparFGuard | Selection::Pages | Selection::Quest,
                Some(c),
            ) => Policy::new(self.selection, Compression::new(c).map_err(input)?),
            (selection, c) => {
                return Err(input(format!(
                    "a simulated CSD point runs dense without a compression, or sparf, sparf-guard, pages or quest with one; not {selection} with {}",
                    c.map_or("none".to_string(), |c| c.to_string())
                )));
            }
        };
        policy.pages.page_bytes = page_size;
        policy.pages.validate().map_err(input)?;
        Ok(policy)
    }

    /// How the sequences are opened: the page selection's placement for
    /// pages, time order otherwise.
    fn placement(&self, policy: &Policy) -> proto::Placement {
        match self.selection {
            Selection::Pages => policy.pages.placement(),
            _ => proto::Placement::TIME,
        }
    }
}

fn bits(x: &[f32]) -> Vec<u16> {
    x.iter()
        .map(|&f| attention::engine::f32_to_f16_bits(f))
        .collect()
}

/// The paper's CSD: 8 channels × 8 ways (see the module docs), blocks
/// enough for the points simulated.
pub fn paper_geometry(page_size: u32) -> Geometry {
    Geometry {
        channels: 8,
        ways: 8,
        blocks_per_die: 128,
        pages_per_block: 64,
        page_size,
    }
}

/// Dim groups the paper packs into one dim page ("2–8 hidden dims per
/// page", InstInfer §hidden-dim-indexed mapping).
pub const PAPER_DIM_GROUPS: [u8; 3] = [2, 4, 8];

/// Dims per dim-indexed page (`SeqShape::dim_group`) for a sequence opened
/// with `prompt` tokens, as the paper sizes them from the input length:
/// of m ∈ {2, 4, 8} (dividing `head_dim`), the one whose dim page holds
/// the most tokens (`Geometry::tokens_per_dim_page`) that the prompt still
/// fills; m = 8, the shortest run, when the prompt fills none.
///
/// Why: SparF's first step reads a dim page for every chosen dim, and the
/// page brings m dims of which the NFC filter drops the rest, so a smaller
/// m reads fewer pages; a run longer than the prompt leaves its pages part
/// empty (held in DRAM or written partial) until decode fills them. At
/// 4 KiB pages this gives 256 tokens per dim page for a 256-token prompt,
/// 512 for 512 and 1K from 1K up: the paper's 256–1K. The model's maximum
/// context (2048 for OPT-13B) only caps the prompt, and every prompt of
/// 1K or more already gets m = 2 at 4 KiB.
pub fn paper_dim_group(geometry: &Geometry, head_dim: u16, prompt: usize) -> u8 {
    let mut fits = PAPER_DIM_GROUPS
        .into_iter()
        .filter(|&m| head_dim.is_multiple_of(u16::from(m)));
    fits.clone()
        .find(|&m| geometry.tokens_per_dim_page(m) as usize <= prompt)
        .or_else(|| fits.next_back())
        .unwrap_or(1)
}

/// How a CSD point samples the paper's batch: the board, the sequences
/// simulated, the prompt they are opened with, and the share of the
/// batch's device DRAM they get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Flash page size of the board, bytes.
    pub page_size: u32,
    /// Sequences decoded together.
    pub seqs: usize,
    /// Input length the host opens each sequence with (sets `dim_group`).
    pub prompt: usize,
    /// Layers × batch of the run the sample stands for; `None` gives the
    /// sample the board's whole DRAM budget.
    pub scaled_to: Option<(usize, usize)>,
}

impl Sample {
    /// The paper's run: 1024-token prompts, batch 256 of OPT-13B's 40
    /// layers.
    pub fn paper(page_size: u32, seqs: usize) -> Self {
        Self {
            page_size,
            seqs,
            prompt: 1024,
            scaled_to: Some((ModelShape::OPT_13B.layers, 256)),
        }
    }

    /// The board's geometry.
    pub fn geometry(&self) -> Geometry {
        paper_geometry(self.page_size)
    }

    /// `dim_group` of the sample's sequences ([`paper_dim_group`]).
    pub fn dim_group(&self, head_dim: u16) -> u8 {
        paper_dim_group(&self.geometry(), head_dim, self.prompt)
    }

    /// Device DRAM for group buffers, bytes: the board's budget
    /// (`SimConfig`, 256 MiB) × (1 layer × `seqs`) / (layers × batch), at
    /// least one token of one head of d = `head_dim` (K, V and dim column)
    /// so that every append can proceed.
    pub fn dram_budget(&self, head_dim: u16) -> u64 {
        let full = SimConfig::new(self.page_size).dram_budget;
        let Some((layers, batch)) = self.scaled_to else {
            return full;
        };
        let share = full as u128 * self.seqs as u128 / (layers * batch).max(1) as u128;
        let token = ftl::StreamShape {
            head_dim,
            dim_group: 1,
        }
        .bytes_per_token();
        (share as u64).clamp(token, full)
    }

    fn board(&self, head_dim: u16) -> Result<CsdArray<SimTransport>, RunError> {
        let mut cfg = SimConfig::new(self.page_size);
        cfg.geometry = self.geometry();
        cfg.dram_budget = self.dram_budget(head_dim);
        let board = SimCsd::new(cfg)
            .map_err(|e| CsdError::from(host_driver::transport::TransportError::from(e)))?;
        let t = SimTransport::with_device(board, 64).map_err(CsdError::from)?;
        Ok(CsdArray::new(vec![Csd::new(t)?])?)
    }
}

/// Simulates every spec on a fresh board of `sample` with the model's head
/// dimension.
pub fn profile_csd(
    model: &ModelShape,
    source: &KvSource,
    specs: &[CsdSpec],
    sample: &Sample,
) -> Result<CsdProfile, RunError> {
    let seqs = sample.seqs;
    if seqs == 0 {
        return Err(input("at least one sequence per CSD point"));
    }
    let d = model.head_dim;
    let head_dim = u16::try_from(d).map_err(|_| input("head dim over 65 535"))?;
    let mut out = CsdProfile::default();
    for spec in specs {
        let policy = spec.policy(sample.page_size)?;
        let method = policy.method(spec.s, d);
        let mut array = sample.board(head_dim)?;
        let channels = array.devices()[0].info().caps.channels as usize;
        let shape = SeqShape {
            layers: 1,
            kv_heads: u8::try_from(spec.heads).map_err(|_| input("at most 255 heads per CSD"))?,
            group: 1,
            head_dim,
            dim_group: sample.dim_group(head_dim),
            rotated: false,
            placement: spec.placement(&policy),
        };
        let mut queries = Vec::with_capacity(seqs);
        // The prefill is timed on a board with the whole DRAM budget: a
        // prompt appended in one command fills whole token and dim pages,
        // which need no buffering at any batch, while the scaled budget
        // would force partial pages a whole-run append never writes.
        let mut timed = match sample.scaled_to {
            Some(_) => Some(
                Sample {
                    scaled_to: None,
                    ..*sample
                }
                .board(head_dim)?,
            ),
            None => None,
        };
        let mut heads = Vec::with_capacity(seqs);
        for i in 0..seqs {
            heads.push(source.heads(i, spec.heads, spec.s, d)?);
        }
        let prefill = |a: &mut CsdArray<SimTransport>| -> Result<PhaseCounters, RunError> {
            let phase = Phase::begin(a)?;
            for (i, (k, v, _)) in heads.iter().enumerate() {
                a.open(i as u32, shape)?;
                a.append(i as u32, 0, 0, k, v)?;
            }
            Ok(phase.end(a)?.1)
        };
        let mut appended = prefill(&mut array)?;
        if let Some(t) = timed.as_mut() {
            appended = prefill(t)?;
        }
        for (_, _, q) in heads {
            queries.push(q);
        }
        let reqs: Vec<ArrayDecode<'_>> = queries
            .iter()
            .enumerate()
            .map(|(i, q)| ArrayDecode {
                seq: i as u32,
                layer: 0,
                position: (spec.s - 1) as u32,
                q,
                kv_new: None,
                approx: None,
                method,
            })
            .collect();
        let per_die = |a: &CsdArray<SimTransport>| {
            a.devices()[0]
                .transport()
                .device()
                .nand_counters()
                .reads_per_die
        };
        let before = per_die(&array);
        let phase = Phase::begin(&mut array)?;
        std::hint::black_box(array.decode_batch(&reqs)?);
        let (_, decoded) = phase.end(&mut array)?;
        let busiest = per_die(&array)
            .iter()
            .zip(&before)
            .map(|(a, b)| a - b)
            .max()
            .unwrap_or(0);
        let t_read = board_sim::NandTiming::for_page_size(sample.page_size).t_read_ns;
        out.points.push(CsdPoint {
            heads: spec.heads,
            s: spec.s,
            compression: spec.compression,
            selection: spec.selection,
            seqs,
            append_ns: appended.virtual_ns,
            decode_ns: decoded.virtual_ns,
            channel_bus_bytes: decoded.channel_bus_bytes,
            bus_busy_ns: decoded.busy.bus_ns,
            engine_busy_ns: decoded.busy.engine_ns,
            flash_busy_ns: decoded.busy.flash_ns,
            dma_busy_ns: decoded.busy.dma_ns,
            busiest_die_ns: busiest * t_read,
            dies: sample.geometry().dies() as usize,
            pages_read: decoded.flash_pages_read,
            channels,
            channel_bytes_per_s: board_sim::NandTiming::for_page_size(sample.page_size)
                .bus_bytes_per_s as f64,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_4k_page_holds_16_tokens_and_dim_pages_256_to_1k() {
        let g = paper_geometry(4096);
        assert_eq!(g.tokens_per_page(128), 16);
        let runs: Vec<u32> = PAPER_DIM_GROUPS
            .iter()
            .map(|&m| g.tokens_per_dim_page(m))
            .collect();
        assert_eq!(runs, [1024, 512, 256]);
    }

    #[test]
    fn dim_group_is_the_longest_run_the_prompt_fills() {
        let g4 = paper_geometry(4096);
        let at = |s| paper_dim_group(&g4, 128, s);
        assert_eq!(
            [
                at(100),
                at(256),
                at(511),
                at(512),
                at(1024),
                at(2048),
                at(32768)
            ],
            [8, 8, 8, 4, 2, 2, 2]
        );
        // 16 KiB pages: runs of 4096, 2048 and 1024 tokens.
        let g16 = paper_geometry(16384);
        let at = |s| paper_dim_group(&g16, 128, s);
        assert_eq!([at(1024), at(2048), at(32768)], [8, 4, 2]);
        // Only groups that divide the head dim.
        assert_eq!(paper_dim_group(&g4, 2, 4096), 2);
        assert_eq!(paper_dim_group(&g4, 6, 300), 2);
    }

    #[test]
    fn the_budget_is_the_samples_share_of_batch_256() {
        let s = Sample::paper(4096, 2);
        // 256 MiB × 2 / (40 × 256).
        assert_eq!(s.dram_budget(128), (256u64 << 20) * 2 / 10_240);
        let full = Sample {
            scaled_to: None,
            ..s
        };
        assert_eq!(full.dram_budget(128), 256 << 20);
        // Never below one token of one head.
        let tiny = Sample {
            scaled_to: Some((40, 1 << 30)),
            ..s
        };
        assert_eq!(tiny.dram_budget(128), 6 * 128);
    }

    fn point(sample: &Sample, compression: Option<f64>) -> CsdPoint {
        let spec = CsdSpec::new(2, 1536, compression);
        profile_csd(&ModelShape::OPT_13B, &KvSource::Synthetic, &[spec], sample)
            .expect("point")
            .points[0]
    }

    /// The page selection at 1/8 reads at most c of each head's full token
    /// pages, K and V: an eighth of dense's pages (64 per head and tensor
    /// at 1024 tokens of 16 per page), with a page per head of slack for
    /// rounding; and it moves fewer bytes over the channel buses. The
    /// sequences are opened with its placement (a sink the decode would
    /// refuse otherwise).
    #[test]
    fn pages_at_one_eighth_read_an_eighth_of_denses_token_pages() {
        let sample = Sample::paper(4096, 1);
        let (heads, s) = (2, 1024);
        let run = |spec| {
            profile_csd(&ModelShape::OPT_13B, &KvSource::Synthetic, &[spec], &sample)
                .expect("point")
                .points[0]
        };
        let dense = run(CsdSpec::new(heads, s, None));
        let pages = run(CsdSpec::pages(heads, s, 0.125));
        assert_eq!(dense.pages_read, (heads * 2 * s / 16) as u64);
        assert_eq!(pages.selection, Selection::Pages);
        let slack = (heads * sample.seqs) as u64;
        assert!(
            pages.pages_read > 0 && pages.pages_read <= dense.pages_read / 8 + slack,
            "pages read {} of dense's {}",
            pages.pages_read,
            dense.pages_read
        );
        assert!(
            pages.channel_bus_bytes < dense.channel_bus_bytes / 4,
            "bus bytes {} of dense's {}",
            pages.channel_bus_bytes,
            dense.channel_bus_bytes
        );
        // Quest's pages are whole pages too, in time order: the same cap.
        let quest = run(CsdSpec::sparse(Selection::Quest, heads, s, 0.125));
        assert_eq!(quest.selection, Selection::Quest);
        assert!(
            quest.pages_read > 0 && quest.pages_read <= dense.pages_read / 8 + slack,
            "quest pages read {} of dense's {}",
            quest.pages_read,
            dense.pages_read
        );
    }

    /// A point runs dense without a compression, or one of the drive's
    /// sparse selections with one; anything else is refused before a
    /// board is built.
    #[test]
    fn a_point_runs_dense_or_a_drive_selection_only() {
        let ok = |spec: CsdSpec| spec.policy(4096).ok().map(|p| p.selection);
        assert_eq!(ok(CsdSpec::new(2, 64, None)), Some(Selection::Dense));
        assert_eq!(ok(CsdSpec::new(2, 64, Some(0.5))), Some(Selection::SparF));
        assert_eq!(ok(CsdSpec::pages(2, 64, 0.5)), Some(Selection::Pages));
        for selection in [Selection::SparFGuard, Selection::Quest] {
            assert_eq!(ok(CsdSpec::sparse(selection, 2, 64, 0.5)), Some(selection));
        }
        let page = CsdSpec::pages(2, 64, 0.5).policy(16384).expect("16 KiB");
        assert_eq!(page.pages.page_bytes, 16384);
        for bad in [
            CsdSpec {
                compression: None,
                ..CsdSpec::pages(2, 64, 0.5)
            },
            CsdSpec {
                compression: Some(0.5),
                ..CsdSpec::new(2, 64, None)
            },
            CsdSpec::sparse(Selection::SparQ, 2, 64, 0.5),
            CsdSpec::sparse(Selection::Oracle, 2, 64, 0.5),
            CsdSpec::pages(2, 64, 0.0),
        ] {
            assert!(bad.policy(4096).is_err(), "{bad:?}");
            let r = profile_csd(
                &ModelShape::OPT_13B,
                &KvSource::Synthetic,
                &[bad],
                &Sample::paper(4096, 1),
            );
            assert!(matches!(r, Err(RunError::Input(_))), "{bad:?}");
        }
    }

    /// At 1536 tokens and runs of 1024 a 512-token dim tail is left per
    /// head. The full budget keeps it in DRAM; the batch-256 share cannot,
    /// so the tail goes to flash and SparF's first step reads it there.
    /// Dense reads only token pages, which the budget does not move.
    #[test]
    fn the_scaled_budget_puts_the_dim_tail_on_flash() {
        let scaled = Sample::paper(4096, 1);
        assert_eq!(scaled.dim_group(128), 2);
        let full = Sample {
            scaled_to: None,
            ..scaled
        };
        let sparf = |s: &Sample| point(s, Some(0.125));
        let (on_flash, in_dram) = (sparf(&scaled), sparf(&full));
        assert!(
            on_flash.pages_read > in_dram.pages_read,
            "{} vs {}",
            on_flash.pages_read,
            in_dram.pages_read
        );
        assert_eq!(
            point(&scaled, None).pages_read,
            point(&full, None).pages_read
        );
        // Every point carries its busy fractions and bound.
        for (r, f) in on_flash.utilisation() {
            assert!(f > 0.0 && f <= 1.0 + 1e-9, "{r:?}: {f}");
        }
        let b = on_flash.bound();
        assert!(b.ns > 0 && b.ratio(on_flash.decode_ns) >= 1.0 - 1e-9);
    }
}
