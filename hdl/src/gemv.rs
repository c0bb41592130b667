//! `GemvUnit`: the GeMV lanes of the attention kernel. One query vector q
//! (`Fx`, Q14 in an i32, up to [`D_MAX`] = 256 elements) and its scale `c`
//! are loaded; then key rows stream in as fp16 bit patterns, `L` elements
//! per clock, and for each row the unit emits one logit,
//! `saturate_i32((Σ q_i · fx(k_i) · c) >> 28)`: exactly
//! `attention::engine::logit(q, k, c)`, with `fx` done in hardware.
//!
//! # Design
//!
//! `L` lanes (the const generic; [`SYNTH_LANES`] = 8 is what `blocks()`
//! generates and synthesizes, the tests also run 4 and 1). Everything is a
//! fixed pipeline without back-pressure:
//!
//! 0. *Fetch*: the beat's `L` fp16 values and the q elements `step·L + j`
//!    (the q file is 256 registers, read by one 256/L-to-1 mux per lane).
//! 1. *Decode* (`fx` in hardware, [`FxDecode`]): every finite fp16 is `s · 2^(e−25)`, so
//!    `fx(k) = ±m · 2^sh` with `m ≤ 2047` and `sh ≤ 19`: `m = s, sh = e − 11`
//!    for `e ≥ 11`; `m = ((s >> (10 − e)) + 1) >> 1` (= round half away
//!    from zero of `s / 2^(11−e)`), `sh = 0` for `e ≤ 10` (subnormals use
//!    `e = 1` without the hidden bit); ±Inf is `2047 · 2^19` = 65504·2^14;
//!    NaN, −0 and masked lanes give `m = 0`.
//! 2. *Multiply* and 3. *Term* ([`FxMul`], shared with
//!    [`WeightedSum`](crate::WeightedSum)): `|q| · m` from two 16×16
//!    partial products (`|q|` ≤ 2^31 in two 16-bit halves, `m` in 16
//!    bits), then `(p_hi << 16) + p_lo` (< 2^42) shifted left by `sh`,
//!    negated when `sign(q) ≠ sign(k)`: a 70-bit two's-complement term.
//!    rust-hdl 0.46 implements `*` only for `Bits<16> × Bits<16> →
//!    Bits<32>` (and `Signed<16>`); there is no wide multiply, so every
//!    product here is built from 16×16 partial products, which yosys maps
//!    to one DSP48 each.
//! 4. *Lane sum*: a binary adder tree over the `L` terms.
//! 5. *Accumulate*: the 70-bit accumulator restarts at a row's first beat;
//!    after its last beat it holds the row's dot product.
//! 6. `|dot|` and its sign.
//! 7. `|dot| · c` as 5 × 2 partial products of 16×16 bits.
//! 8. Two 104-bit partial sums.
//! 9. Their sum `P = |dot|·c`.
//! 10. Shift and saturate: `P >> 28` when dot ≥ 0, `−⌈P / 2^28⌉` (the
//!     floor of the negative value) when dot < 0, clamped to i32.
//!
//! # Widths and the overflow bound
//!
//! `|q| ≤ 2^31` (any i32), `|fx(k)| ≤ 2047·2^19 < 2^30`, so a term is
//! below 2047·2^50 < 2^61; a row of d ≤ 256 terms sums to |dot| < 2^69,
//! which a 70-bit signed accumulator ([`ACC_BITS`]) holds exactly (every
//! partial sum is a sum of at most 256 terms too, so none wraps). `c` is
//! any u32 (the engine uses ≤ 2^20): `|dot|·c < 2^101` fits the 104-bit
//! product ([`PROD_BITS`]); after `>> 28` the value is below 2^73 and is
//! clamped to i32.
//!
//! # Protocol
//!
//! * `q_we`/`q_addr`/`q_data`: writes element `q_addr` of the q file (one
//!   per clock; a row reads q at its beats, so load q before them). Writes
//!   may overlap the previous query's rows still in the pipeline.
//! * `start`: latches `d` (1..=256) and `c`, and makes the next beat the
//!   first of a row; a row cut short by `start` gives no logit. `start`
//!   may come with the first beat (`k_valid` in the same clock).
//! * `k_valid`/`k_data[j]`: one beat of `L` fp16 values, elements
//!   `step·L + j` of the row; a row is ⌈d/L⌉ beats, back to back or with
//!   idle clocks between them. When `d` is not a multiple of `L`, the last
//!   beat's lanes `j ≥ d mod L` are masked (their values, even NaN or Inf,
//!   are ignored): pad them with anything. `d = 0` makes every beat a row
//!   of its own with every lane masked (logit 0, as the model's
//!   `logit(&[], &[], c)`).
//! * `out_valid`/`out_logit`: the row's logit (i32 bits), [`LATENCY`]
//!   clocks after its last beat.
//!
//! # Cycles
//!
//! A row takes ⌈d/L⌉ clocks of input; rows stream back to back, one logit
//! per ⌈d/L⌉ clocks; from a row's first beat to its logit, inclusive:
//! ⌈d/L⌉ + [`LATENCY`] clocks (measured in the tests, `gemv_cycles`).

use rust_hdl::prelude::*;

use crate::fx::FxDecode;
use crate::fx_mul::FxMul;
use crate::logit_scale::LogitScale;

/// Largest query length.
pub const D_MAX: usize = 256;
/// Lanes of the synthesized unit (and the Verilog co-simulation).
pub const SYNTH_LANES: usize = 8;
/// Bits of the dot-product accumulator: |dot| < 2^69 (module docs).
pub const ACC_BITS: usize = 70;
const _: () = assert!(ACC_BITS == 70, "stage 6 reads the sign as bit 69");
/// Bits of `|dot| · c` < 2^101.
pub const PROD_BITS: usize = 104;
/// Clocks from a row's last beat to its `out_valid` (the last beat's clock
/// is 0).
pub const LATENCY: usize = 4 + crate::logit_scale::LATENCY;

/// The GeMV unit with `L` lanes; see the module docs.
#[derive(LogicBlock, Debug)]
pub struct GemvUnit<const L: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// Write one q element.
    pub q_we: Signal<In, Bit>,
    /// Its index (0..d).
    pub q_addr: Signal<In, Bits<8>>,
    /// Its value (`Fx`, i32 bits).
    pub q_data: Signal<In, Bits<32>>,
    /// Begin a query: latch `d` and `c`; the next beat starts a row.
    pub start: Signal<In, Bit>,
    /// Elements per row, 0..=256.
    pub d: Signal<In, Bits<9>>,
    /// The logit scale (Q16, u32).
    pub c: Signal<In, Bits<32>>,
    /// A beat of key elements arrives.
    pub k_valid: Signal<In, Bit>,
    /// The beat's fp16 values, lane j = element `step·L + j` of the row.
    pub k_data: [Signal<In, Bits<16>>; L],
    /// A row's logit leaves.
    pub out_valid: Signal<Out, Bit>,
    /// The logit (i32 bits, Q16).
    pub out_logit: Signal<Out, Bits<32>>,
    lanes: Constant<Bits<9>>,
    // Query state.
    q_mag: [DFF<Bits<32>>; D_MAX],
    q_neg: [DFF<Bit>; D_MAX],
    d_r: DFF<Bits<9>>,
    c_r: DFF<Bits<32>>,
    left: DFF<Bits<9>>,
    step: DFF<Bits<8>>,
    // Stage 0 (combinational).
    cur_left: Signal<Local, Bits<9>>,
    cur_step: Signal<Local, Bits<8>>,
    cur_c: Signal<Local, Bits<32>>,
    cur_last: Signal<Local, Bit>,
    q_data_neg: Signal<Local, Bits<32>>,
    sel_mag: [Signal<Local, Bits<32>>; L],
    sel_neg: [Signal<Local, Bit>; L],
    fxd: [FxDecode; L],
    k_m: [Signal<Local, Bits<16>>; L],
    k_sh: [Signal<Local, Bits<5>>; L],
    // Stage 1: decoded.
    s1_valid: DFF<Bit>,
    s1_first: DFF<Bit>,
    s1_last: DFF<Bit>,
    s1_c: DFF<Bits<32>>,
    s1_q: [DFF<Bits<32>>; L],
    s1_m: [DFF<Bits<16>>; L],
    s1_sh: [DFF<Bits<5>>; L],
    s1_neg: [DFF<Bit>; L],
    // Stages 2–3: the signed terms, by `FxMul`.
    mul: [FxMul<ACC_BITS>; L],
    s2_valid: DFF<Bit>,
    s2_first: DFF<Bit>,
    s2_last: DFF<Bit>,
    s2_c: DFF<Bits<32>>,
    s3_valid: DFF<Bit>,
    s3_first: DFF<Bit>,
    s3_last: DFF<Bit>,
    s3_c: DFF<Bits<32>>,
    /// Adder tree in heap order: node i = node 2i + node 2i+1, where nodes
    /// L..2L are the terms; node 0 is the root's copy (the lane sum).
    tree: [Signal<Local, Bits<ACC_BITS>>; L],
    // Stage 4: lane sum.
    s4_valid: DFF<Bit>,
    s4_first: DFF<Bit>,
    s4_last: DFF<Bit>,
    s4_c: DFF<Bits<32>>,
    s4_sum: DFF<Bits<ACC_BITS>>,
    // Stage 5: accumulator.
    acc: DFF<Bits<ACC_BITS>>,
    s5_done: DFF<Bit>,
    s5_c: DFF<Bits<32>>,
    // Stages 6–10.
    scale: LogitScale,
}

impl<const L: usize> Default for GemvUnit<L> {
    fn default() -> Self {
        assert!(
            L.is_power_of_two() && L <= D_MAX,
            "L must be a power of two ≤ 256"
        );
        Self {
            clock: Default::default(),
            q_we: Default::default(),
            q_addr: Default::default(),
            q_data: Default::default(),
            start: Default::default(),
            d: Default::default(),
            c: Default::default(),
            k_valid: Default::default(),
            k_data: std::array::from_fn(|_| Default::default()),
            out_valid: Default::default(),
            out_logit: Default::default(),
            lanes: Constant::new((L as u64).into()),
            q_mag: std::array::from_fn(|_| Default::default()),
            q_neg: std::array::from_fn(|_| Default::default()),
            d_r: Default::default(),
            c_r: Default::default(),
            left: Default::default(),
            step: Default::default(),
            cur_left: Default::default(),
            cur_step: Default::default(),
            cur_c: Default::default(),
            cur_last: Default::default(),
            q_data_neg: Default::default(),
            sel_mag: std::array::from_fn(|_| Default::default()),
            sel_neg: std::array::from_fn(|_| Default::default()),
            fxd: std::array::from_fn(|_| Default::default()),
            k_m: std::array::from_fn(|_| Default::default()),
            k_sh: std::array::from_fn(|_| Default::default()),
            s1_valid: Default::default(),
            s1_first: Default::default(),
            s1_last: Default::default(),
            s1_c: Default::default(),
            s1_q: std::array::from_fn(|_| Default::default()),
            s1_m: std::array::from_fn(|_| Default::default()),
            s1_sh: std::array::from_fn(|_| Default::default()),
            s1_neg: std::array::from_fn(|_| Default::default()),
            mul: std::array::from_fn(|_| Default::default()),
            s2_valid: Default::default(),
            s2_first: Default::default(),
            s2_last: Default::default(),
            s2_c: Default::default(),
            s3_valid: Default::default(),
            s3_first: Default::default(),
            s3_last: Default::default(),
            s3_c: Default::default(),
            tree: std::array::from_fn(|_| Default::default()),
            s4_valid: Default::default(),
            s4_first: Default::default(),
            s4_last: Default::default(),
            s4_c: Default::default(),
            s4_sum: Default::default(),
            acc: Default::default(),
            s5_done: Default::default(),
            s5_c: Default::default(),
            scale: Default::default(),
        }
    }
}

/// Zero extension that rust-hdl 0.46's code generator accepts anywhere.
///
/// `bit_cast` is evaluated once in Rust when the Verilog is generated, so
/// it cannot take an operand indexed by a loop variable. A method named
/// `to_bits` is rendered as its bare receiver, which Verilog zero-extends
/// in a wider context, exactly as this does in Rust. Widening only (a
/// narrowing `to_bits` would not truncate inside a Verilog expression):
/// narrow with `get_bits`.
pub trait Widen {
    /// Zero-extends to `M ≥ N` bits.
    fn to_bits<const M: usize>(self) -> Bits<M>;
}

impl<const N: usize> Widen for Bits<N> {
    fn to_bits<const M: usize>(self) -> Bits<M> {
        assert!(M >= N, "Widen::to_bits only widens");
        bit_cast::<M, N>(self)
    }
}

impl<const L: usize> Logic for GemvUnit<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, d_r, c_r, left, step, s1_valid, s1_first, s1_last, s1_c, s2_valid,
            s2_first, s2_last, s2_c, s3_valid, s3_first, s3_last, s3_c, s4_valid, s4_first,
            s4_last, s4_c, s4_sum, acc, s5_done, s5_c
        );
        for e in 0..D_MAX {
            self.q_mag[e].clock.next = self.clock.val();
            self.q_mag[e].d.next = self.q_mag[e].q.val();
            self.q_neg[e].clock.next = self.clock.val();
            self.q_neg[e].d.next = self.q_neg[e].q.val();
        }
        for j in 0..L {
            self.s1_q[j].clock.next = self.clock.val();
            self.s1_q[j].d.next = self.s1_q[j].q.val();
            self.s1_m[j].clock.next = self.clock.val();
            self.s1_m[j].d.next = self.s1_m[j].q.val();
            self.s1_sh[j].clock.next = self.clock.val();
            self.s1_sh[j].d.next = self.s1_sh[j].q.val();
            self.s1_neg[j].clock.next = self.clock.val();
            self.s1_neg[j].d.next = self.s1_neg[j].q.val();
            self.mul[j].clock.next = self.clock.val();
        }

        // q file writes: magnitude (|i32::MIN| = 2^31 fits 32 bits) and sign.
        self.q_data_neg.next = !self.q_data.val() + 1;
        for e in 0..D_MAX {
            if self.q_we.val() & (self.q_addr.val().index() == e) {
                self.q_neg[e].d.next = self.q_data.val().get_bit(31);
                self.q_mag[e].d.next = self.q_data.val();
                if self.q_data.val().get_bit(31) {
                    self.q_mag[e].d.next = self.q_data_neg.val();
                }
            }
        }
        if self.start.val() {
            self.d_r.d.next = self.d.val();
            self.c_r.d.next = self.c.val();
        }

        // Stage 0: the beat's position in its row (`start` begins a row).
        self.cur_left.next = self.left.q.val();
        self.cur_step.next = self.step.q.val();
        self.cur_c.next = self.c_r.q.val();
        if self.start.val() {
            self.cur_left.next = self.d.val();
            self.cur_step.next = 0.into();
            self.cur_c.next = self.c.val();
            self.left.d.next = self.d.val();
            self.step.d.next = 0.into();
        }
        self.cur_last.next = self.cur_left.val() <= self.lanes.val();
        if self.k_valid.val() {
            if self.cur_last.val() {
                // The next beat begins the next row.
                self.left.d.next = self.d_r.q.val();
                if self.start.val() {
                    self.left.d.next = self.d.val();
                }
                self.step.d.next = 0.into();
            } else {
                self.left.d.next = self.cur_left.val() - self.lanes.val();
                self.step.d.next = self.cur_step.val() + 1;
            }
        }
        // q elements step·L + j. (The one-trip loop binds L to a loop
        // variable: rust-hdl resolves index expressions against loop
        // variables only, not const generics.)
        for j in 0..L {
            self.sel_mag[j].next = 0.into();
            self.sel_neg[j].next = false;
        }
        for lanes in L..(L + 1) {
            for i in 0..(D_MAX / L) {
                if self.cur_step.val().index() == i {
                    for j in 0..L {
                        self.sel_mag[j].next = self.q_mag[i * lanes + j].q.val();
                        self.sel_neg[j].next = self.q_neg[i * lanes + j].q.val();
                    }
                }
            }
        }
        // fx(k) = ±m · 2^sh (module docs; `crate::fx::FxDecode`).
        for j in 0..L {
            self.fxd[j].h.next = self.k_data[j].val();
            self.k_m[j].next = self.fxd[j].m.val();
            self.k_sh[j].next = self.fxd[j].sh.val();
            // Lanes past d are masked.
            if self.cur_left.val().index() <= j {
                self.k_m[j].next = 0.into();
            }
        }

        // Stage 1: decoded beat.
        self.s1_valid.d.next = self.k_valid.val();
        self.s1_first.d.next = self.cur_step.val() == 0;
        self.s1_last.d.next = self.cur_last.val();
        self.s1_c.d.next = self.cur_c.val();
        for j in 0..L {
            self.s1_q[j].d.next = self.sel_mag[j].val();
            self.s1_m[j].d.next = self.k_m[j].val();
            self.s1_sh[j].d.next = self.k_sh[j].val();
            self.s1_neg[j].d.next = self.sel_neg[j].val() ^ self.k_data[j].val().get_bit(15);
        }

        // Stages 2–3: the signed 70-bit terms ±|q| · m · 2^sh (`FxMul`).
        for j in 0..L {
            self.mul[j].x.next = self.s1_q[j].q.val();
            self.mul[j].m.next = self.s1_m[j].q.val();
            self.mul[j].sh.next = self.s1_sh[j].q.val();
            self.mul[j].neg.next = self.s1_neg[j].q.val();
        }
        self.s2_valid.d.next = self.s1_valid.q.val();
        self.s2_first.d.next = self.s1_first.q.val();
        self.s2_last.d.next = self.s1_last.q.val();
        self.s2_c.d.next = self.s1_c.q.val();
        self.s3_valid.d.next = self.s2_valid.q.val();
        self.s3_first.d.next = self.s2_first.q.val();
        self.s3_last.d.next = self.s2_last.q.val();
        self.s3_c.d.next = self.s2_c.q.val();

        // Stage 4: lane sum (a heap-ordered adder tree; L = 1 has none),
        // written children first so that the generated `always @(*)` reads
        // no node before it assigns it.
        for lanes in L..(L + 1) {
            for i in (L / 2).max(1)..L {
                self.tree[i].next =
                    self.mul[2 * i - lanes].term.val() + self.mul[2 * i + 1 - lanes].term.val();
            }
            // Internal nodes L/2 − 1 down to 1.
            for k in 0..(L / 2).saturating_sub(1) {
                self.tree[lanes / 2 - 1 - k].next =
                    self.tree[lanes - 2 - 2 * k].val() + self.tree[lanes - 1 - 2 * k].val();
            }
        }
        for i in 0..usize::from(L > 1) {
            self.tree[i].next = self.tree[i + 1].val();
        }
        for i in 0..usize::from(L == 1) {
            self.tree[i].next = self.mul[i].term.val();
        }
        self.s4_valid.d.next = self.s3_valid.q.val();
        self.s4_first.d.next = self.s3_first.q.val();
        self.s4_last.d.next = self.s3_last.q.val();
        self.s4_c.d.next = self.s3_c.q.val();
        self.s4_sum.d.next = self.tree[0].val();

        // Stage 5: accumulate the row.
        self.s5_done.d.next = self.s4_valid.q.val() & self.s4_last.q.val();
        self.s5_c.d.next = self.s4_c.q.val();
        if self.s4_valid.q.val() {
            if self.s4_first.q.val() {
                self.acc.d.next = self.s4_sum.q.val();
            } else {
                self.acc.d.next = self.acc.q.val() + self.s4_sum.q.val();
            }
        }

        // Stages 6–10: logit = sat_i32((dot · c) >> 28), by `LogitScale`.
        self.scale.clock.next = self.clock.val();
        self.scale.in_valid.next = self.s5_done.q.val();
        self.scale.in_dot.next = self.acc.q.val();
        self.scale.in_c.next = self.s5_c.q.val();
        self.out_valid.next = self.scale.out_valid.val();
        self.out_logit.next = self.scale.out_logit.val();
    }
}

/// One query: q (`Fx`), its scale and its key rows (fp16 bits, `q.len()`
/// elements each).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GemvQuery {
    /// The query vector, 0..=256 elements.
    pub q: Vec<i32>,
    /// The logit scale.
    pub c: u32,
    /// Key rows.
    pub keys: Vec<Vec<u16>>,
}

/// The inputs of one clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GemvCycle {
    /// `q_we`.
    pub q_we: bool,
    /// `q_addr`.
    pub q_addr: u8,
    /// `q_data` (i32 bits).
    pub q_data: u32,
    /// `start`.
    pub start: bool,
    /// `d`.
    pub d: u16,
    /// `c`.
    pub c: u32,
    /// `k_valid`.
    pub k_valid: bool,
    /// `k_data[j]`; empty is all zero.
    pub k: Vec<u16>,
}

impl GemvCycle {
    /// The fields in the order of `tb/gemv_tb.v`'s vector lines, hex:
    /// `q_we q_addr q_data start d c k_valid k[0] … k[lanes−1]`.
    pub fn vector_line(&self, lanes: usize) -> String {
        let mut s = format!(
            "{:x} {:x} {:x} {:x} {:x} {:x} {:x}",
            u8::from(self.q_we),
            self.q_addr,
            self.q_data,
            u8::from(self.start),
            self.d,
            self.c,
            u8::from(self.k_valid)
        );
        for j in 0..lanes {
            s.push_str(&format!(" {:x}", self.k.get(j).copied().unwrap_or(0)));
        }
        s
    }
}

/// Beats of a row of `d` elements: ⌈d/L⌉, and 1 for `d = 0`.
pub fn beats(d: usize, lanes: usize) -> usize {
    d.div_ceil(lanes).max(1)
}

/// The clocks of a run of queries on an `lanes`-lane unit: each query's q
/// writes (one element per clock), `start` (on a clock of its own for
/// even-numbered queries, with the first beat for odd ones), its rows'
/// beats back to back (the last beat's lanes past d filled with `pad`),
/// then idle clocks until the last logit is out.
pub fn stimulus(queries: &[GemvQuery], lanes: usize, pad: u16) -> Vec<GemvCycle> {
    let mut out = Vec::new();
    for (n, query) in queries.iter().enumerate() {
        let d = query.q.len();
        assert!(d <= D_MAX, "d ≤ 256");
        for (i, &x) in query.q.iter().enumerate() {
            out.push(GemvCycle {
                q_we: true,
                q_addr: i as u8,
                q_data: x as u32,
                ..GemvCycle::default()
            });
        }
        let start = GemvCycle {
            start: true,
            d: d as u16,
            c: query.c,
            ..GemvCycle::default()
        };
        let together = n % 2 == 1 && !query.keys.is_empty();
        if !together {
            out.push(start.clone());
        }
        for (r, key) in query.keys.iter().enumerate() {
            assert_eq!(key.len(), d, "a key row has d elements");
            for b in 0..beats(d, lanes) {
                let k = (0..lanes)
                    .map(|j| key.get(b * lanes + j).copied().unwrap_or(pad))
                    .collect();
                let mut cycle = GemvCycle {
                    k_valid: true,
                    k,
                    ..GemvCycle::default()
                };
                if together && r == 0 && b == 0 {
                    cycle.start = true;
                    cycle.d = start.d;
                    cycle.c = start.c;
                }
                out.push(cycle);
            }
        }
    }
    out.extend(std::iter::repeat_n(GemvCycle::default(), LATENCY + 1));
    out
}

impl<const L: usize> GemvUnit<L> {
    /// Sets the inputs of one clock.
    pub fn drive(&mut self, c: &GemvCycle) {
        self.q_we.next = c.q_we;
        self.q_addr.next = u64::from(c.q_addr).into();
        self.q_data.next = u64::from(c.q_data).into();
        self.start.next = c.start;
        self.d.next = u64::from(c.d).into();
        self.c.next = u64::from(c.c).into();
        self.k_valid.next = c.k_valid;
        for j in 0..L {
            self.k_data[j].next = u64::from(c.k.get(j).copied().unwrap_or(0)).into();
        }
    }
}

/// What one run produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GemvRun {
    /// The logits, in row order.
    pub logits: Vec<i32>,
    /// The clock (index into the stimulus) of each logit.
    pub out_clock: Vec<usize>,
}

/// Runs `stim` through a fresh `GemvUnit<L>` in rust-hdl.
pub fn run<const L: usize>(stim: &[GemvCycle]) -> GemvRun {
    let mut uut = GemvUnit::<L>::default();
    crate::sim::prepare(&mut uut);
    let mut run = GemvRun::default();
    for (t, c) in stim.iter().enumerate() {
        uut.drive(c);
        crate::sim::tick(&mut uut, |u| &mut u.clock);
        if uut.out_valid.val() {
            run.logits.push(uut.out_logit.val().to_u32() as i32);
            run.out_clock.push(t);
        }
    }
    run
}

#[cfg(test)]
mod tests;
