//! Cross-crate scenarios on the simulated CSD (host driver, PCIe queues,
//! firmware, FTL, NAND model, engine), and their shared set-up: simulated
//! devices, structured KV data in fp16, one-shot attention through the
//! device, and the engine-model oracle.

mod array;
mod batch;
mod decode_loop;
mod dense;
mod malformed;
mod random_commands;
mod sparf;
mod traffic;

use attention::shape::Method;
use attention::testdata::{structured_kv, structured_query};
use board_sim::{SimConfig, SimCsd};
use host_driver::csd::{Csd, DecodeOutput};
use host_driver::transport::SimTransport;
use proto::SeqShape;

/// A simulated InstCSD behind its in-process NVMe transport.
pub type SimDevice = Csd<SimTransport>;

/// A device with the default board for `page_size`.
pub fn device(page_size: u32) -> SimDevice {
    device_with(SimConfig::new(page_size))
}

/// A device on a board configured by `cfg`.
pub fn device_with(cfg: SimConfig) -> SimDevice {
    let board = SimCsd::new(cfg).expect("board config");
    let transport = SimTransport::with_device(board, 64).expect("transport");
    Csd::new(transport).expect("identify")
}

/// One attention problem: fp16 bits, K/V `[kv_heads][s][d]`, Q
/// `[kv_heads·group][d]`.
#[derive(Clone, Debug)]
pub struct Problem {
    pub kv_heads: usize,
    pub group: usize,
    pub s: usize,
    pub d: usize,
    pub k: Vec<u16>,
    pub v: Vec<u16>,
    pub q: Vec<u16>,
}

fn bits(x: &[f32]) -> Vec<u16> {
    x.iter()
        .map(|&f| attention::engine::f32_to_f16_bits(f))
        .collect()
}

impl Problem {
    /// Structured data: heavy tokens aligned with the query, a recency
    /// trend (see `attention::testdata`).
    pub fn structured(seed: u64, kv_heads: usize, group: usize, s: usize, d: usize) -> Self {
        let (k, v) = structured_kv(seed, kv_heads, s, d);
        let q = structured_query(seed, kv_heads * group, d, kv_heads);
        Self {
            kv_heads,
            group,
            s,
            d,
            k: bits(&k),
            v: bits(&v),
            q: bits(&q),
        }
    }

    /// SparF at 1/8: r = d/8 dims, k = S/8 tokens, the last 4 always.
    pub fn sparf_eighth(&self) -> Method {
        Method::SparF(attention::shape::SparseParams {
            r: self.d / 8,
            k: self.s / 8,
            local: 4,
        })
    }

    pub fn q_heads(&self) -> usize {
        self.kv_heads * self.group
    }

    /// The sequence shape (one layer).
    pub fn shape(&self, dim_group: u8) -> SeqShape {
        SeqShape {
            layers: 1,
            kv_heads: self.kv_heads as u8,
            group: self.group as u8,
            head_dim: self.d as u16,
            dim_group,
            rotated: false,
            placement: proto::Placement::TIME,
        }
    }

    /// As f32 (exactly the fp16 values).
    pub fn f32s(x: &[u16]) -> Vec<f32> {
        x.iter()
            .map(|&b| half::f16::from_bits(b).to_f32())
            .collect()
    }

    /// What the engine model computes for this problem.
    pub fn engine(&self, method: Method) -> Vec<i32> {
        attention::engine::attend_heads(
            method,
            &self.q,
            &self.k,
            &self.v,
            self.q_heads(),
            self.kv_heads,
            self.s,
            self.d,
        )
        .expect("engine model")
    }

    /// What the f32 reference computes for this problem.
    pub fn reference(&self, method: Method) -> Vec<f32> {
        attention::reference::attend_heads(
            method,
            &Self::f32s(&self.q),
            &Self::f32s(&self.k),
            &Self::f32s(&self.v),
            self.q_heads(),
            self.kv_heads,
            self.s,
            self.d,
        )
        .expect("reference")
    }

    /// Largest |V|.
    pub fn max_abs_v(&self) -> f32 {
        Self::f32s(&self.v)
            .iter()
            .fold(0.0f32, |m, x| m.max(x.abs()))
    }
}

/// Stores the problem's KV in sequence `seq` of `dev` (prefill commands)
/// and runs one decode with its query at the last position.
pub fn attend(dev: &mut SimDevice, seq: u32, p: &Problem, method: Method, m: u8) -> DecodeOutput {
    dev.open(seq, p.shape(m)).expect("open");
    dev.append(seq, 0, 0, &p.k, &p.v).expect("append");
    let t = dev
        .submit_decode(seq, 0, (p.s - 1) as u32, &p.q, None, method)
        .expect("submit");
    let out = dev.fetch(t).expect("fetch");
    dev.close(seq).expect("close");
    out
}

/// Max |a − b|.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .fold(0.0f32, |m, (x, y)| m.max((x - y).abs()))
}
