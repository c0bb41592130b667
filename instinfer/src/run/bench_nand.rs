//! `instinfer bench nand`: the simulated board's NAND schedule against the
//! depth of each die's command queue, with cache read off and on, on the
//! paper's board (8 channels × 8 ways, `cost::csd::paper_geometry`):
//!
//! - **raw**: `pages_per_die` full-page reads on every die, driven straight
//!   into the flash model as the firmware drives it
//!   (`board_sim::nand::sweep`), at 4 KiB and 16 KiB pages; against the aggregate channel bandwidth
//!   and the array bound (pages × tR / dies);
//! - **decode**: one dense decode of 40 KV heads, d = 128, 1024 tokens
//!   through the real firmware on the simulated device (16 KiB pages).
//!
//! Every time here is virtual (the board's model); nothing asserts on it.

use std::fmt::Write as _;

use attention::testdata::{structured_kv, structured_query};
use board_sim::nand::sweep::full_page_reads;
use board_sim::{NandTiming, SimConfig, SimCsd};
use ftl::Geometry;
use host_driver::array::{ArrayDecode, CsdArray};
use host_driver::csd::{Csd, CsdError};
use host_driver::measure::Phase;
use host_driver::policy::Policy;
use host_driver::transport::{SimTransport, TransportError};
use proto::SeqShape;

use super::{RunError, input};
use crate::cost::csd::paper_geometry;

/// Queue depths swept.
pub const DEPTHS: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// Parameters of `bench nand`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NandBenchParams {
    /// Full-page reads per die in the raw sweep.
    pub pages_per_die: u32,
    /// KV heads of the decode.
    pub heads: usize,
    /// Context tokens of the decode.
    pub tokens: usize,
    /// Skip the decode through the firmware.
    pub raw_only: bool,
}

impl Default for NandBenchParams {
    fn default() -> Self {
        Self {
            pages_per_die: 64,
            heads: 40,
            tokens: 1024,
            raw_only: false,
        }
    }
}

const D: usize = 128;

fn timing(page_size: u32, depth: usize, cache_read: bool) -> NandTiming {
    NandTiming {
        queue_depth: depth,
        cache_read,
        ..NandTiming::for_page_size(page_size)
    }
}

fn device(e: board_sim::SimError) -> RunError {
    CsdError::from(TransportError::from(e)).into()
}

/// Virtual ns of `pages_per_die` full-page reads on every die of `geo`.
fn raw_reads(geo: Geometry, t: NandTiming, pages_per_die: u32) -> Result<u64, RunError> {
    full_page_reads(geo, t, pages_per_die).map_err(|e| device(e.into()))
}

/// One dense decode on the paper's board: virtual ns and channel bus bytes.
fn decode(page_size: u32, t: NandTiming, p: &NandBenchParams) -> Result<(u64, u64), RunError> {
    let mut cfg = SimConfig::new(page_size);
    cfg.geometry = paper_geometry(page_size);
    cfg.nand = t;
    let board = SimCsd::new(cfg).map_err(device)?;
    let transport = SimTransport::with_device(board, 64).map_err(CsdError::from)?;
    let mut array = CsdArray::new(vec![Csd::new(transport)?])?;
    let shape = SeqShape {
        layers: 1,
        kv_heads: u8::try_from(p.heads).map_err(|_| input("at most 255 heads"))?,
        group: 1,
        head_dim: D as u16,
        dim_group: 1,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    let (k, v) = structured_kv(7, p.heads, p.tokens, D);
    let q = structured_query(7, p.heads, D, p.heads);
    let bits = |x: &[f32]| -> Vec<u16> {
        x.iter()
            .map(|&f| attention::engine::f32_to_f16_bits(f))
            .collect()
    };
    let (k, v, q) = (bits(&k), bits(&v), bits(&q));
    array.open(0, shape)?;
    array.append(0, 0, 0, &k, &v)?;
    let req = ArrayDecode {
        seq: 0,
        layer: 0,
        position: (p.tokens - 1) as u32,
        q: &q,
        kv_new: None,
        approx: None,
        method: Policy::DENSE.method(p.tokens, D),
    };
    let phase = Phase::begin(&mut array)?;
    std::hint::black_box(array.decode_batch(&[req])?);
    let (_, c) = phase.end(&mut array)?;
    Ok((c.virtual_ns, c.channel_bus_bytes))
}

/// Fraction of `channels` buses streaming for `ns`.
fn of_channels(bytes: u64, t: &NandTiming, channels: u32, ns: u64) -> f64 {
    bytes as f64 / (f64::from(channels) * t.bus_bytes_per_s as f64 * ns.max(1) as f64 * 1e-9)
}

/// Runs the sweep; returns the report.
pub fn run_nand_bench(p: &NandBenchParams) -> Result<String, RunError> {
    if p.pages_per_die == 0 || p.heads == 0 || p.tokens == 0 {
        return Err(input(
            "--pages-per-die, --heads and --tokens must be at least 1",
        ));
    }
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(
        w,
        "bench nand: 8 channels x 8 ways, all times virtual (the board's model)"
    );
    for page_size in [4096u32, 16384] {
        let geo = paper_geometry(page_size);
        if p.pages_per_die > geo.pages_per_block * geo.blocks_per_die {
            return Err(input("--pages-per-die exceeds a die"));
        }
        let base = NandTiming::for_page_size(page_size);
        let pages = u64::from(p.pages_per_die) * u64::from(geo.dies());
        let array_bound = u64::from(p.pages_per_die) * base.t_read_ns;
        let _ = writeln!(
            w,
            "\nraw: {pages} full-page reads of {} KiB ({} per die); array bound {:.1} us virtual",
            page_size / 1024,
            p.pages_per_die,
            array_bound as f64 / 1e3
        );
        let _ = writeln!(
            w,
            "{:>5} {:>6} {:>18} {:>13} {:>12}",
            "depth", "cache", "virtual us", "of channels", "of arrays"
        );
        for cache_read in [false, true] {
            for depth in DEPTHS {
                let t = timing(page_size, depth, cache_read);
                let ns = raw_reads(geo, t, p.pages_per_die)?;
                let bytes = pages * u64::from(page_size);
                let _ = writeln!(
                    w,
                    "{depth:>5} {:>6} {:>18.1} {:>12.1}% {:>11.1}%",
                    if cache_read { "on" } else { "off" },
                    ns as f64 / 1e3,
                    100.0 * of_channels(bytes, &t, u32::from(geo.channels), ns),
                    100.0 * array_bound as f64 / ns.max(1) as f64
                );
            }
        }
    }
    if !p.raw_only {
        let page_size = 16384;
        let _ = writeln!(
            w,
            "\ndecode: dense, {} KV heads, d = {D}, {} tokens, 16 KiB pages, through the firmware",
            p.heads, p.tokens
        );
        let _ = writeln!(
            w,
            "{:>5} {:>6} {:>18} {:>13}",
            "depth", "cache", "virtual us", "of channels"
        );
        for cache_read in [false, true] {
            for depth in DEPTHS {
                let t = timing(page_size, depth, cache_read);
                let (ns, bytes) = decode(page_size, t, p)?;
                let _ = writeln!(
                    w,
                    "{depth:>5} {:>6} {:>18.1} {:>12.1}%",
                    if cache_read { "on" } else { "off" },
                    ns as f64 / 1e3,
                    100.0 * of_channels(bytes, &t, 8, ns)
                );
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_reads_near_the_busier_bound() {
        // 16 KiB, 8 ways: the bus (8 × 11.9 us per page) outweighs tR
        // (75 us): the channels stream nearly all the time.
        let geo = paper_geometry(16384);
        let t = timing(16384, 16, true);
        let ns = raw_reads(geo, t, 8).unwrap();
        let f = of_channels(8 * 64 * 16384, &t, 8, ns);
        assert!(f > 0.85 && f <= 1.0, "{f}");
        // 4 KiB: the arrays are the bound; a deeper queue with cache read
        // is not slower than one command per die.
        let geo = paper_geometry(4096);
        let deep = raw_reads(geo, timing(4096, 16, true), 8).unwrap();
        let shallow = raw_reads(geo, timing(4096, 1, true), 8).unwrap();
        let t_r = NandTiming::for_page_size(4096).t_read_ns;
        assert!(deep <= shallow && deep >= 8 * t_r);
    }
}
