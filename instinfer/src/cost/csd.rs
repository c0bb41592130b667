//! The CSD side of the cost model, measured on the simulated board: the
//! real firmware, FTL and engine arithmetic behind NVMe queues, with the
//! board's NAND, bus, engine and PCIe timing (virtual time).
//!
//! A [`CsdPoint`] is one OPT-13B-shaped layer on one CSD: `seqs`
//! sequences of `s` tokens and `heads` KV heads of d = 128 are prefilled
//! with `KV_APPEND`, then one decode of every sequence is submitted at
//! once (dense, or SparF at a compression), and the virtual time of each
//! phase is read off the device. The cost model scales it: a decode step
//! of batch b over L layers costs L · b / seqs times the point's decode
//! time (the device is throughput-bound once its queues are full: the
//! first points run 2 × 40 head-decodes in flight), and the prefill the
//! same with the append time.
//!
//! **The board** is the paper's emulated CSD: 8 channels of 1.4 GB/s
//! (InstInfer §evaluation: a Zynq-7045 board extended to 8 channels of
//! 1.4 GB/s) with 8 ways each, as the Cosmos+ board it is built on, 16 KiB
//! pages; the rest is the simulated board's default timing
//! (`boards/sim/src/config.rs`).
//!
//! **Sampling, said plainly.** One layer is simulated, not 40; `seqs`
//! sequences, not the batch; three context lengths (1024, 1536, 2048)
//! interpolated linearly. KV and queries come from a [`KvSource`]: the
//! real model's attention traces scaled to OPT-13B's heads
//! ([`super::trace`]; `instinfer bench paper --trace DIR`), or structured
//! synthetic data (`attention::testdata`: heavy tokens aligned with the
//! query and a recency trend) when no trace is given. Dense reads do not
//! depend on the data; SparF's page skipping does, through which tokens
//! and dims it picks.

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
use host_driver::measure::Phase;
use host_driver::transport::SimTransport;

/// One simulated layer on one CSD.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CsdPoint {
    /// KV heads on this CSD.
    pub heads: usize,
    /// Context tokens.
    pub s: usize,
    /// `None` for dense; SparF's compression otherwise.
    pub compression: Option<f64>,
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
    /// Dies of the board.
    pub dies: usize,
    /// Flash pages read during the decode.
    pub pages_read: u64,
    /// Channels of the board.
    pub channels: usize,
    /// Bus rate of one channel, B/s.
    pub channel_bytes_per_s: f64,
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

/// Measured points, looked up by heads and compression, interpolated in s.
#[derive(Clone, Debug, Default)]
pub struct CsdProfile {
    /// Every point.
    pub points: Vec<CsdPoint>,
}

impl CsdProfile {
    fn matching(&self, heads: usize, compression: Option<f64>) -> Vec<&CsdPoint> {
        let mut v: Vec<&CsdPoint> = self
            .points
            .iter()
            .filter(|p| p.heads == heads && same(p.compression, compression))
            .collect();
        v.sort_by_key(|p| p.s);
        v
    }

    /// Interpolates `f` of the points with `heads` and `compression` at
    /// context `s` (linear; clamped to the measured range).
    pub fn at(
        &self,
        heads: usize,
        compression: Option<f64>,
        s: usize,
        f: impl Fn(&CsdPoint) -> f64,
    ) -> Option<f64> {
        let pts = self.matching(heads, compression);
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

/// What to simulate: KV heads per CSD, context, dense or SparF.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CsdSpec {
    /// KV heads on the CSD.
    pub heads: usize,
    /// Context tokens.
    pub s: usize,
    /// `None` dense, else SparF at this compression.
    pub compression: Option<f64>,
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

fn paper_board(page_size: u32) -> Result<CsdArray<SimTransport>, RunError> {
    let mut cfg = SimConfig::new(page_size);
    cfg.geometry = paper_geometry(page_size);
    let board = SimCsd::new(cfg)
        .map_err(|e| CsdError::from(host_driver::transport::TransportError::from(e)))?;
    let t = SimTransport::with_device(board, 64).map_err(CsdError::from)?;
    Ok(CsdArray::new(vec![Csd::new(t)?])?)
}

/// Simulates every spec (`seqs` sequences each) on a fresh simulated board
/// with `page_size`-byte pages and OPT-13B's head dimension.
pub fn profile_csd(
    model: &ModelShape,
    source: &KvSource,
    specs: &[CsdSpec],
    seqs: usize,
    page_size: u32,
) -> Result<CsdProfile, RunError> {
    if seqs == 0 {
        return Err(input("at least one sequence per CSD point"));
    }
    let d = model.head_dim;
    let mut out = CsdProfile::default();
    for spec in specs {
        let mut array = paper_board(page_size)?;
        let channels = array.devices()[0].info().caps.channels as usize;
        let method = match spec.compression {
            None => Policy::DENSE,
            Some(c) => Policy::new(Selection::SparF, Compression::new(c).map_err(input)?),
        }
        .method(spec.s, d);
        let shape = SeqShape {
            layers: 1,
            kv_heads: u8::try_from(spec.heads).map_err(|_| input("at most 255 heads per CSD"))?,
            group: 1,
            head_dim: d as u16,
            dim_group: 1,
            rotated: false,
        };
        let mut queries = Vec::with_capacity(seqs);
        let phase = Phase::begin(&mut array)?;
        for i in 0..seqs {
            let (k, v, q) = source.heads(i, spec.heads, spec.s, d)?;
            array.open(i as u32, shape)?;
            array.append(i as u32, 0, 0, &k, &v)?;
            queries.push(q);
        }
        let (_, appended) = phase.end(&mut array)?;
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
        let phase = Phase::begin(&mut array)?;
        std::hint::black_box(array.decode_batch(&reqs)?);
        let (_, decoded) = phase.end(&mut array)?;
        out.points.push(CsdPoint {
            heads: spec.heads,
            s: spec.s,
            compression: spec.compression,
            seqs,
            append_ns: appended.virtual_ns,
            decode_ns: decoded.virtual_ns,
            channel_bus_bytes: decoded.channel_bus_bytes,
            bus_busy_ns: decoded.busy.bus_ns,
            engine_busy_ns: decoded.busy.engine_ns,
            flash_busy_ns: decoded.busy.flash_ns,
            dma_busy_ns: decoded.busy.dma_ns,
            dies: channels * 8,
            pages_read: decoded.flash_pages_read,
            channels,
            channel_bytes_per_s: board_sim::NandTiming::for_page_size(page_size).bus_bytes_per_s
                as f64,
        });
    }
    Ok(out)
}
