//! A SparF head for the DimScore co-simulations (the unit tests and the
//! Verilog one): q, its chosen dims, the keys, the dim pages' beats, and
//! the engine model's approximate logits.

use attention::engine::{approx_scale, logit, select_dims};
use attention::testdata::SplitMix64;
use hdl::dim_score::{DimCycle, FLUSH_TO_DONE, LANES};

/// One head of SparF's approximate pass: q (Fx), its chosen dims, the
/// keys (s × d fp16) and the dim pages' tokens per run.
pub struct TestHead {
    pub q: Vec<i32>,
    pub dims: Vec<u16>,
    pub keys: Vec<Vec<u16>>,
    pub run: usize,
}

impl TestHead {
    pub fn random(rng: &mut SplitMix64, s: usize, d: usize, r: usize, run: usize) -> Self {
        let q: Vec<i32> = (0..d)
            .map(|_| match rng.next_u64() % 20 {
                0 => i32::MIN,
                1 => i32::MAX,
                _ => (rng.next_u64() as i32) >> (rng.next_u64() % 20),
            })
            .collect();
        let mut dims = Vec::new();
        select_dims(&q, 1, d, r, &mut dims);
        let keys = (0..s)
            .map(|_| {
                (0..d)
                    .map(|_| match rng.next_u64() % 50 {
                        0 => 0x7C00,                           // +Inf
                        1 => 0xFE00,                           // NaN
                        2 => 0x0001,                           // subnormal
                        3 => 0x8000,                           // −0
                        _ => (rng.next_u64() as u16) & 0xBFFF, // |x| < 2
                    })
                    .collect()
            })
            .collect();
        Self { q, dims, keys, run }
    }

    pub fn c(&self) -> u32 {
        approx_scale(&self.q, &self.dims)
    }

    /// The model's approximate logits.
    pub fn want(&self) -> Vec<i32> {
        let q_r: Vec<i32> = self.dims.iter().map(|&i| self.q[usize::from(i)]).collect();
        let c = self.c();
        self.keys
            .iter()
            .map(|k| {
                let row: Vec<u16> = self.dims.iter().map(|&i| k[usize::from(i)]).collect();
                logit(&q_r, &row, c)
            })
            .collect()
    }

    /// The beats of the dim pages, run by run, chosen dim by chosen dim
    /// (whole page rows: `run` is a multiple of 8).
    pub fn beats(&self) -> Vec<DimCycle> {
        let s = self.keys.len();
        let mut out = Vec::new();
        for t0 in (0..s).step_by(self.run) {
            // A dim page's row has `run` token slots; those past s are
            // padding the unit never emits.
            let end = t0 + self.run;
            for (k, &dim) in self.dims.iter().enumerate() {
                for g0 in (t0..end).step_by(LANES) {
                    let mut data = [0u16; LANES];
                    for (j, x) in data.iter_mut().enumerate() {
                        *x = self
                            .keys
                            .get(g0 + j)
                            .map_or(0x3C00, |row| row[usize::from(dim)]);
                    }
                    out.push(DimCycle {
                        in_valid: true,
                        in_fresh: k == 0,
                        in_group: (g0 / LANES) as u16,
                        in_q: self.q[usize::from(dim)] as u32,
                        in_data: crate::nfc_filter::beat_bits(&data),
                        ..DimCycle::default()
                    });
                }
            }
        }
        out
    }

    pub fn stimulus(&self) -> Vec<DimCycle> {
        let mut out = vec![DimCycle {
            start: true,
            s: self.keys.len() as u16,
            c: self.c(),
            ..DimCycle::default()
        }];
        out.extend(self.beats());
        out.push(DimCycle {
            flush: true,
            ..DimCycle::default()
        });
        out.extend(std::iter::repeat_n(
            DimCycle::default(),
            self.keys.len() + FLUSH_TO_DONE,
        ));
        out
    }
}
