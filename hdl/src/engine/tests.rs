//! The engine top through its AXI4-Lite port and streams: register map,
//! jobs against `attention::engine::dense_group` (group 1) bit for bit,
//! two jobs in flight at once, argtopk against `attention::engine::argtopk`.

use std::collections::VecDeque;

use super::*;
use attention::GroupShape;
use attention::engine::{argtopk as model_argtopk, dense_group, dense_scale, f32_to_f16_bits, fx};
use attention::testdata::{SplitMix64, structured_kv, structured_query};

const CH: usize = 2;

/// Runs `f` on a thread with a large stack (the engine is a big struct,
/// and rust-hdl's settling recurses through it).
fn big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("test thread");
}

/// One NFC clock of a channel.
#[derive(Clone, Copy, Default)]
struct NfcIn {
    start: bool,
    valid: bool,
    data: [u16; 8],
}

/// The engine driven clock by clock: per-channel NFC queues, a query
/// queue and an argtopk queue are consumed one entry per clock while the
/// AXI driver runs its handshakes.
struct Tb {
    uut: Box<Engine<CH>>,
    t: usize,
    nfc: [VecDeque<NfcIn>; CH],
    q: VecDeque<(u8, u8, i32)>,
    topk: VecDeque<(bool, u64, bool)>,
    out: [Vec<Vec<i32>>; 2],
    done_at: [Vec<usize>; 2],
    start_at: [Vec<usize>; 2],
    topk_out: Vec<u32>,
    /// Key/value beats each kernel received.
    beats_in: [usize; 2],
}

impl Tb {
    fn new() -> Self {
        let mut uut = Box::new(Engine::<CH>::default());
        crate::sim::prepare(uut.as_mut());
        Self {
            uut,
            t: 0,
            nfc: Default::default(),
            q: VecDeque::new(),
            topk: VecDeque::new(),
            out: Default::default(),
            done_at: Default::default(),
            start_at: Default::default(),
            topk_out: Vec::new(),
            beats_in: [0; 2],
        }
    }

    fn step(&mut self) {
        for c in 0..CH {
            let x = self.nfc[c].pop_front().unwrap_or_default();
            self.uut.nfc_start[c].next = x.start;
            self.uut.nfc_valid[c].next = x.valid;
            self.uut.nfc_data[c].next = crate::nfc_filter::beat_bits(&x.data).to_bits();
        }
        let q = self.q.pop_front();
        self.uut.q_we.next = q.is_some();
        let (k, a, v) = q.unwrap_or_default();
        self.uut.q_kernel.next = u64::from(k).into();
        self.uut.q_addr.next = u64::from(a).into();
        self.uut.q_data.next = u64::from(v as u32).into();
        let (valid, key, flush) = self.topk.pop_front().unwrap_or_default();
        self.uut.topk_valid.next = valid;
        self.uut.topk_key.next = key.into();
        self.uut.topk_flush.next = flush;
        crate::sim::tick(self.uut.as_mut(), |u| &mut u.clock);
        let u = &self.uut;
        if u.out0_valid.val() {
            self.out[0].push(
                u.out0_data
                    .iter()
                    .map(|x| x.val().to_u32() as i32)
                    .collect(),
            );
        }
        if u.out1_valid.val() {
            self.out[1].push(
                u.out1_data
                    .iter()
                    .map(|x| x.val().to_u32() as i32)
                    .collect(),
            );
        }
        if u.kern0.done.val() {
            self.done_at[0].push(self.t);
        }
        if u.kern1.done.val() {
            self.done_at[1].push(self.t);
        }
        if u.kern0.start.val() {
            self.start_at[0].push(self.t);
        }
        if u.kern1.start.val() {
            self.start_at[1].push(self.t);
        }
        if u.beat_v[0].q.val() {
            self.beats_in[0] += 1;
        }
        if u.beat_v[1].q.val() {
            self.beats_in[1] += 1;
        }
        if u.topk_out_valid.val() {
            self.topk_out.push(u.topk_out_index.val().to_u32());
        }
        self.t += 1;
    }

    /// An AXI4-Lite write (AW and W together, then B); returns BRESP.
    fn write_strb(&mut self, addr: u32, data: u32, strb: u8) -> u8 {
        let u = &mut self.uut;
        u.s_axi_awvalid.next = true;
        u.s_axi_awaddr.next = u64::from(addr).into();
        u.s_axi_wvalid.next = true;
        u.s_axi_wdata.next = u64::from(data).into();
        u.s_axi_wstrb.next = u64::from(strb).into();
        u.s_axi_bready.next = false;
        // Ready is combinational on valid: sample it before the edge.
        loop {
            crate::sim::settle(self.uut.as_mut());
            let taken = self.uut.s_axi_awready.val() && self.uut.s_axi_wready.val();
            self.step();
            if taken {
                break;
            }
            assert!(self.t < 10_000_000, "write never taken");
        }
        self.uut.s_axi_awvalid.next = false;
        self.uut.s_axi_wvalid.next = false;
        self.uut.s_axi_bready.next = true;
        loop {
            crate::sim::settle(self.uut.as_mut());
            let resp = self
                .uut
                .s_axi_bvalid
                .val()
                .then(|| self.uut.s_axi_bresp.val().to_u8());
            self.step();
            if let Some(r) = resp {
                self.uut.s_axi_bready.next = false;
                return r;
            }
        }
    }

    fn write(&mut self, addr: u32, data: u32) {
        assert_eq!(self.write_strb(addr, data, 0xF), 0, "write {addr:#x} OKAY");
    }

    /// An AXI4-Lite read (AR, then R); returns (RDATA, RRESP).
    fn read_resp(&mut self, addr: u32) -> (u32, u8) {
        self.uut.s_axi_arvalid.next = true;
        self.uut.s_axi_araddr.next = u64::from(addr).into();
        self.uut.s_axi_rready.next = false;
        loop {
            crate::sim::settle(self.uut.as_mut());
            let taken = self.uut.s_axi_arready.val();
            self.step();
            if taken {
                break;
            }
        }
        self.uut.s_axi_arvalid.next = false;
        self.uut.s_axi_rready.next = true;
        loop {
            crate::sim::settle(self.uut.as_mut());
            let r = self.uut.s_axi_rvalid.val().then(|| {
                (
                    self.uut.s_axi_rdata.val().to_u32(),
                    self.uut.s_axi_rresp.val().to_u8(),
                )
            });
            self.step();
            if let Some(r) = r {
                self.uut.s_axi_rready.next = false;
                return r;
            }
        }
    }

    fn read(&mut self, addr: u32) -> u32 {
        let (d, r) = self.read_resp(addr);
        assert_eq!(r, 0, "read {addr:#x} OKAY");
        d
    }

    /// Polls STATUS until `bit` is set.
    fn wait_status(&mut self, bit: u32) {
        let limit = self.t + 1_000_000;
        while self.read(reg::STATUS) & bit == 0 {
            assert!(self.t < limit, "STATUS bit {bit:#x} never set");
        }
    }

    fn drain(&mut self) {
        while self.nfc.iter().any(|q| !q.is_empty()) || !self.q.is_empty() || !self.topk.is_empty()
        {
            self.step();
        }
    }
}

/// A job: fp16 q (d), and the page rows (each `row_len` long, the first d
/// elements are the token's K or V row); `mask` says which rows are kept.
struct Job {
    d: usize,
    q: Vec<u16>,
    k: Vec<Vec<u16>>,
    v: Vec<Vec<u16>>,
    rows_per_page: usize,
    row_len: usize,
    mask: Vec<bool>,
}

impl Job {
    fn new(seed: u64, tokens: usize, d: usize, row_len: usize, rows_per_page: usize) -> Self {
        let (k, v) = structured_kv(seed, 1, tokens, d);
        let q = structured_query(seed, 1, d, 1);
        let h = |x: &[f32]| x.iter().map(|&y| f32_to_f16_bits(y)).collect::<Vec<u16>>();
        let mut rng = SplitMix64::new(seed ^ 0x55);
        let mut mask: Vec<bool> = (0..tokens)
            .map(|_| !rng.next_u64().is_multiple_of(3))
            .collect();
        mask[0] = true;
        Self {
            d,
            q: h(&q),
            k: k.chunks_exact(d).map(h).collect(),
            v: v.chunks_exact(d).map(h).collect(),
            rows_per_page,
            row_len,
            mask,
        }
    }

    fn kept(&self) -> usize {
        self.mask.iter().filter(|&&m| m).count()
    }

    fn model(&self) -> Vec<i32> {
        let sel = |rows: &[Vec<u16>]| -> Vec<u16> {
            rows.iter()
                .zip(&self.mask)
                .filter(|(_, m)| **m)
                .flat_map(|(r, _)| r.clone())
                .collect()
        };
        dense_group(
            &self.q,
            &sel(&self.k),
            &sel(&self.v),
            GroupShape {
                group: 1,
                head_dim: self.d,
            },
        )
        .expect("valid shape")
    }

    /// The pages' masks (4 words each) and NFC clocks; a row's elements
    /// past d are junk (+Inf), dropped by KEEP = d.
    fn pages(&self, rows: &[Vec<u16>]) -> Vec<([u64; 4], Vec<NfcIn>)> {
        let mut out = Vec::new();
        for (p, chunk) in rows.chunks(self.rows_per_page).enumerate() {
            let mut mask = [0u64; 4];
            let mut elems = Vec::new();
            for (i, row) in chunk.iter().enumerate() {
                if self.mask[p * self.rows_per_page + i] {
                    mask[i / 64] |= 1 << (i % 64);
                }
                elems.extend((0..self.row_len).map(|e| row.get(e).copied().unwrap_or(0x7C00)));
            }
            let clocks = elems
                .chunks_exact(8)
                .enumerate()
                .map(|(b, beat)| NfcIn {
                    start: b == 0,
                    valid: true,
                    data: beat.try_into().expect("rows of whole beats"),
                })
                .collect();
            out.push((mask, clocks));
        }
        out
    }
}

/// Programs kernel `k` and channel `c` for `job`, loads the query, starts.
fn program(tb: &mut Tb, job: &Job, k: u32, c: u32) {
    tb.write(reg::k_d(k), job.d as u32);
    tb.write(reg::k_s(k), job.kept() as u32);
    tb.write(reg::k_scale(k), dense_scale(job.d));
    tb.write(reg::rows(c), job.rows_per_page as u32);
    tb.write(reg::row_len(c), job.row_len as u32);
    tb.write(reg::keep(c), job.d as u32);
    for (i, &h) in job.q.iter().enumerate() {
        tb.q.push_back((k as u8, i as u8, fx(h)));
    }
    tb.drain();
    tb.write(reg::CTRL, bit::k_start(k) | bit::channel(c));
    assert_eq!(tb.read(reg::route(c)), 1 << k, "route set by START");
}

/// Streams `pages` through channel c: each page's mask through AXI (while
/// the previous page streams), then its elements.
fn stream(tb: &mut Tb, c: u32, pages: Vec<([u64; 4], Vec<NfcIn>)>) {
    for (mask, clocks) in pages {
        // The shadow mask may be rewritten while a page streams, once
        // every queued page has started (latched its mask).
        while tb.nfc[c as usize].iter().any(|x| x.start) {
            tb.step();
        }
        for (w, &m) in mask.iter().enumerate() {
            tb.write(reg::mask_lo(c, w as u32), m as u32);
            tb.write(reg::mask_hi(c, w as u32), (m >> 32) as u32);
        }
        tb.nfc[c as usize].extend(clocks);
    }
}

fn outputs(beats: &[Vec<i32>], d: usize) -> Vec<i32> {
    let mut o: Vec<i32> = beats.iter().flatten().copied().collect();
    o.truncate(d);
    o
}

#[test]
fn engine_registers() {
    big_stack(engine_registers_body);
}

fn engine_registers_body() {
    let mut tb = Tb::new();
    assert_eq!(tb.read(reg::ID), ID);
    assert_eq!(tb.read(reg::VERSION), VERSION);
    assert_eq!(
        tb.read(reg::CONFIG),
        CH as u32 | 2 << 8 | 8 << 12 | 32768 << 16
    );
    assert_eq!(tb.read(reg::STATUS), bit::IDLE_VALID, "idle, kernel 0 next");
    assert_eq!(tb.read(reg::CTRL), 0);
    for a in [
        reg::k_d(0),
        reg::k_s(0),
        reg::k_scale(0),
        reg::k_d(1),
        reg::k_s(1),
        reg::k_scale(1),
        reg::ARGTOPK_K,
    ] {
        assert_eq!(tb.read(a), 0, "reset value of {a:#x}");
    }
    for c in 0..CH as u32 {
        for a in [
            reg::rows(c),
            reg::row_len(c),
            reg::keep(c),
            reg::route(c),
            reg::mask_lo(c, 0),
            reg::mask_hi(c, 3),
        ] {
            assert_eq!(tb.read(a), 0, "reset value of {a:#x}");
        }
    }
    // Unmapped, unaligned, past the channels, read-only, partial writes.
    for a in [
        0x00C,
        0x018,
        0x058,
        0x100,
        0x3FC,
        0x410,
        0x41C,
        0x400 + 0x40 * CH as u32,
        0x800,
        0xFFC,
        0x001,
        0x022,
    ] {
        let (d, r) = tb.read_resp(a);
        assert_eq!((d, r), (0, 2), "read {a:#x} SLVERR");
        assert_eq!(tb.write_strb(a, 0x1234, 0xF), 2, "write {a:#x} SLVERR");
    }
    for a in [reg::ID, reg::VERSION, reg::CONFIG, reg::STATUS] {
        assert_eq!(tb.write_strb(a, 0, 0xF), 2, "write to RO {a:#x}");
    }
    assert_eq!(tb.read(reg::ID), ID);
    assert_eq!(tb.write_strb(reg::k_d(0), 7, 0x3), 2, "partial write");
    assert_eq!(tb.read(reg::k_d(0)), 0);
    // D and ROW_LEN take whole 8-element beats only.
    for v in [1, 12, 63, 0x1FF] {
        assert_eq!(tb.write_strb(reg::k_d(0), v, 0xF), 2, "D = {v}");
        assert_eq!(tb.write_strb(reg::k_d(1), v, 0xF), 2, "D = {v}");
        assert_eq!(tb.write_strb(reg::row_len(1), v, 0xF), 2, "ROW_LEN = {v}");
    }
    assert_eq!(tb.read(reg::k_d(0)), 0);
    assert_eq!(tb.read(reg::row_len(1)), 0);
    // Read back, widths.
    tb.write(reg::k_d(1), 0xFFFF_FFF8);
    tb.write(reg::k_s(0), 0xFFFF_FFFF);
    tb.write(reg::k_scale(1), 0xDEAD_BEEF);
    tb.write(reg::ARGTOPK_K, 0x1_0040);
    tb.write(reg::rows(1), 0x1FF);
    tb.write(reg::row_len(0), 0xFFF8);
    tb.write(reg::keep(1), 123);
    tb.write(reg::route(0), 7);
    assert_eq!(tb.read(reg::k_d(1)), 0x1F8);
    assert_eq!(tb.read(reg::k_s(0)), 0x3FFF);
    assert_eq!(tb.read(reg::k_scale(1)), 0xDEAD_BEEF);
    assert_eq!(tb.read(reg::ARGTOPK_K), 0x40);
    assert_eq!(tb.read(reg::rows(1)), 0x1FF);
    assert_eq!(tb.read(reg::row_len(0)), 0x3FF8);
    assert_eq!(tb.read(reg::keep(1)), 123);
    assert_eq!(tb.read(reg::route(0)), 3);
    // Soft reset.
    tb.write(reg::CTRL, bit::SOFT_RESET | bit::k_start(0));
    for a in [
        reg::k_d(1),
        reg::k_s(0),
        reg::k_scale(1),
        reg::ARGTOPK_K,
        reg::rows(1),
        reg::row_len(0),
        reg::keep(1),
        reg::route(0),
    ] {
        assert_eq!(tb.read(a), 0, "{a:#x} after soft reset");
    }
    assert_eq!(
        tb.read(reg::STATUS),
        bit::IDLE_VALID,
        "no start with soft reset"
    );
}

/// Runs one job on kernel k via channel c; returns clocks from the
/// kernel's start to its done, inclusive.
fn run_job(tb: &mut Tb, job: &Job, k: u32, c: u32) -> usize {
    program(tb, job, k, c);
    stream(tb, c, job.pages(&job.k));
    tb.drain();
    tb.wait_status(bit::k_vready(k));
    stream(tb, c, job.pages(&job.v));
    tb.wait_status(bit::k_done(k));
    let ku = k as usize;
    assert_eq!(tb.out[ku].len(), job.d.div_ceil(8), "output beats");
    assert_eq!(
        outputs(&tb.out[ku], job.d),
        job.model(),
        "kernel {k}, d = {}",
        job.d
    );
    assert_eq!(
        tb.beats_in[ku],
        2 * job.kept() * job.d.div_ceil(8),
        "only kept rows reach the kernel"
    );
    tb.done_at[ku][0] + 1 - tb.start_at[ku][0]
}

#[test]
fn engine_job_matches_dense_group() {
    big_stack(engine_job_matches_dense_group_body);
}

fn engine_job_matches_dense_group_body() {
    for (seed, tokens, d, row_len, rpp, k, c) in [
        (0xE0_0001u64, 24usize, 16usize, 16usize, 8usize, 0u32, 0u32),
        (0xE0_0002, 30, 8, 16, 16, 1, 1),
        (0xE0_0003, 9, 24, 32, 4, 0, 1),
        (0xE0_0004, 40, 64, 64, 16, 1, 0),
    ] {
        let mut tb = Tb::new();
        let job = Job::new(seed, tokens, d, row_len, rpp);
        let t0 = tb.t;
        let clocks = run_job(&mut tb, &job, k, c);
        let s = job.kept();
        let pages = tokens * row_len;
        eprintln!(
            "S = {s} kept of {tokens}, d = {d}, row_len = {row_len}: {clocks} clocks start→done \
             (kernel alone {}; K+V page elements {}), {} clocks incl. AXI programming",
            crate::kernel::cycles(s, d, 8),
            2 * pages,
            tb.t - t0
        );
        assert_eq!(
            tb.read(reg::STATUS) & (bit::k_done(k) | bit::k_busy(k)),
            bit::k_done(k)
        );
        assert!(tb.uut.irq.val());
    }
}

#[test]
fn engine_two_jobs_in_flight() {
    big_stack(engine_two_jobs_in_flight_body);
}

fn engine_two_jobs_in_flight_body() {
    let mut tb = Tb::new();
    let a = Job::new(0xE0_1001, 20, 16, 16, 8);
    let b = Job::new(0xE0_1002, 26, 16, 24, 32);
    // Scheduling on demand: the idle kernel from STATUS.
    let st = tb.read(reg::STATUS);
    assert_eq!(st & (bit::IDLE_VALID | bit::IDLE_KERNEL), bit::IDLE_VALID);
    program(&mut tb, &a, 0, 0);
    let st = tb.read(reg::STATUS);
    assert_eq!(
        st & (bit::IDLE_VALID | bit::IDLE_KERNEL | bit::k_busy(0)),
        bit::IDLE_VALID | bit::IDLE_KERNEL | bit::k_busy(0)
    );
    program(&mut tb, &b, 1, 1);
    let st = tb.read(reg::STATUS);
    assert_eq!(st & bit::IDLE_VALID, 0, "both busy");
    // A third START on a busy kernel is refused.
    tb.write(reg::CTRL, bit::k_start(0));
    assert_ne!(tb.read(reg::STATUS) & bit::ERR, 0);
    // Both K streams at once.
    stream(&mut tb, 0, a.pages(&a.k));
    stream(&mut tb, 1, b.pages(&b.k));
    tb.drain();
    tb.wait_status(bit::k_vready(0));
    stream(&mut tb, 0, a.pages(&a.v));
    tb.wait_status(bit::k_vready(1));
    stream(&mut tb, 1, b.pages(&b.v));
    tb.wait_status(bit::k_done(0));
    tb.wait_status(bit::k_done(1));
    assert_eq!(
        tb.start_at[0].len(),
        1,
        "the refused START did not restart kernel 0"
    );
    assert_eq!(outputs(&tb.out[0], a.d), a.model());
    assert_eq!(outputs(&tb.out[1], b.d), b.model());
    // The two jobs overlapped.
    assert!(tb.start_at[1][0] < tb.done_at[0][0]);
    // Kernel 0 again, right after: the next job goes to the idle kernel.
    let st = tb.read(reg::STATUS);
    assert_eq!(st & (bit::IDLE_VALID | bit::IDLE_KERNEL), bit::IDLE_VALID);
}

#[test]
fn engine_argtopk_matches_model() {
    big_stack(engine_argtopk_matches_model_body);
}

fn engine_argtopk_matches_model_body() {
    let mut tb = Tb::new();
    let mut rng = SplitMix64::new(0xE0_2001);
    for (n, k) in [(100usize, 10u16), (40, 64), (5, 1), (30, 0), (70, 70)] {
        let keys: Vec<u64> = (0..n).map(|_| rng.next_u64() % 16).collect();
        tb.write(reg::ARGTOPK_K, u32::from(k));
        tb.write(reg::CTRL, bit::TOPK_START);
        assert_ne!(tb.read(reg::STATUS) & bit::TOPK_BUSY, 0);
        tb.topk_out.clear();
        for &key in &keys {
            tb.topk.push_back((true, key, false));
        }
        tb.topk.push_back((false, 0, true));
        tb.drain();
        tb.wait_status(bit::TOPK_DONE);
        let mut want = Vec::new();
        model_argtopk(&keys, usize::from(k), &mut want);
        assert_eq!(tb.topk_out, want, "n = {n}, k = {k}");
    }
}

#[test]
fn engine_topk_through_registers_matches_model() {
    big_stack(engine_topk_through_registers_body);
}

/// Keys written through TOPK_KEY_LO/HI, CTRL.TOPK_FLUSH, the result read
/// back through TOPK_COUNT/RPTR/RESULT: what a CPU without a key stream
/// does (the OpenSSD boards' driver).
fn engine_topk_through_registers_body() {
    let mut tb = Tb::new();
    let mut rng = SplitMix64::new(0xE0_2002);
    for (n, k) in [(600usize, 75u16), (300, 300), (90, 1), (20, 0)] {
        let keys: Vec<u64> = (0..n)
            .map(|j| match j % 3 {
                0 => rng.next_u64(),
                1 => rng.next_u64() >> 30,
                _ => rng.next_u64() % 7,
            })
            .collect();
        tb.write(reg::ARGTOPK_K, u32::from(k));
        tb.write(reg::CTRL, bit::TOPK_START);
        tb.topk_out.clear();
        for &key in &keys {
            tb.write(reg::TOPK_KEY_LO, key as u32);
            tb.write(reg::TOPK_KEY_HI, (key >> 32) as u32);
        }
        tb.write(reg::CTRL, bit::TOPK_FLUSH);
        tb.wait_status(bit::TOPK_DONE);
        let mut want = Vec::new();
        model_argtopk(&keys, usize::from(k), &mut want);
        assert_eq!(tb.topk_out, want, "stream out, n = {n}, k = {k}");
        assert_eq!(tb.read(reg::TOPK_COUNT) as usize, want.len());
        assert_eq!(tb.read(reg::STATUS) & bit::TOPK_OVERFLOW, 0);
        let back: Vec<u32> = (0..want.len()).map(|_| tb.read(reg::TOPK_RESULT)).collect();
        assert_eq!(back, want, "read back, n = {n}, k = {k}");
        assert_eq!(tb.read(reg::TOPK_RPTR) as usize, want.len());
        // The pointer can be set back to reread.
        if !want.is_empty() {
            tb.write(reg::TOPK_RPTR, want.len() as u32 - 1);
            assert_eq!(tb.read(reg::TOPK_RESULT), want[want.len() - 1]);
        }
    }
}

#[test]
fn engine_verilog_generates() {
    big_stack(engine_verilog_generates_body);
}

fn engine_verilog_generates_body() {
    let mut e = Engine::<CH>::default();
    e.connect_all();
    let v = generate_verilog(&e);
    assert!(v.contains("module top("));
}

#[test]
fn engine_short_beat_sets_err() {
    big_stack(engine_short_beat_sets_err_body);
}

fn engine_short_beat_sets_err_body() {
    let mut tb = Tb::new();
    let job = Job::new(0xE0_3001, 8, 16, 16, 8);
    program(&mut tb, &job, 0, 1);
    assert_eq!(tb.read(reg::STATUS) & bit::ERR, 0);
    // KEEP = 13: each kept row leaves as a full beat and a 5-lane beat.
    tb.write(reg::keep(1), 13);
    stream(&mut tb, 1, job.pages(&job.k));
    tb.drain();
    assert_ne!(tb.read(reg::STATUS) & bit::ERR, 0, "short beat flagged");
    tb.write(reg::CTRL, bit::SOFT_RESET);
    assert_eq!(tb.read(reg::STATUS) & bit::ERR, 0, "cleared by soft reset");
}

/// The engine's register window as the OpenSSD boards' driver sees it.
struct Window<'a>(&'a mut Tb);

impl board_openssd::mmio::Regs for Window<'_> {
    fn read32(&mut self, offset: usize) -> u32 {
        self.0.read(offset as u32)
    }

    fn write32(&mut self, offset: usize, value: u32) {
        self.0.write(offset as u32, value);
    }
}

#[test]
fn the_boards_driver_runs_the_top_k_on_the_engine() {
    big_stack(the_boards_driver_runs_the_top_k_body);
}

/// `board_openssd`'s `HwEngine::top_k` against this engine, clock by
/// clock: the firmware's top-k on the OpenSSD boards, for SparF's k = S/8
/// and the dims' small k.
fn the_boards_driver_runs_the_top_k_body() {
    use board_openssd::engine::HwEngine;
    let mut tb = Tb::new();
    let mut hw = HwEngine::probe(Window(&mut tb)).expect("probe");
    assert_eq!(hw.config().topk_keys, 32768);
    let mut rng = SplitMix64::new(0xB0A2D);
    // Token keys (Q0.30 sums, the last 4 with the local bonus) for S = 512
    // at k = S/8 and S/16, and dim keys (Σ|q|) for d = 64 at r = 16.
    let token: Vec<u64> = (0..512)
        .map(|j| (rng.next_u64() >> 36) + if j >= 508 { 1 << 40 } else { 0 })
        .collect();
    let dims: Vec<u64> = (0..64).map(|_| rng.next_u64() >> 34).collect();
    for (keys, k) in [(&token, 64usize), (&token, 32), (&dims, 16), (&dims, 64)] {
        let mut got = Vec::new();
        hw.top_k(keys, k, &mut got).expect("top-k on the engine");
        let mut want = Vec::new();
        model_argtopk(keys, k, &mut want);
        assert_eq!(got, want, "n = {}, k = {k}", keys.len());
    }
}
