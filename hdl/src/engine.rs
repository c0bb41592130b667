//! `Engine`: the top level. `CH` per-channel [`NfcFilter`]s, one
//! [`SelectK`] (top-k of any k over up to 32K keys), two [`AttentionKernel<8>`](AttentionKernel)s
//! scheduled on demand, stream ports toward the NFCs and the DMA, and an
//! AXI4-Lite control slave. `CH` ≤ 16; 4 for Daisyplus ([`SYNTH_CHANNELS`]).
//!
//! # Data path
//!
//! * **NFC → filter** (per channel c): `nfc_start[c]` marks a page's first
//!   beat, `nfc_valid[c]`/`nfc_data[c]` one 128-bit beat of 8 fp16
//!   elements per clock (4.56 GB/s at 285 MHz, above a 1.4 GB/s channel).
//!   The filter's geometry (ROWS, ROW_LEN, KEEP) comes from channel c's
//!   registers and is latched at `nfc_start`; the mask words are written
//!   into the filter's shadow mask through AXI (LO then HI; the HI write
//!   commits the 64-bit word), so the next page's mask can be loaded while
//!   a page streams.
//! * **Filter → kernel**: channel c's ROUTE register (bit k: feed kernel k)
//!   sends its kept beats to kernel k. Rows are whole beats (D and ROW_LEN
//!   are multiples of 8; other values are refused with SLVERR), so a
//!   filter beat is a kernel beat: it goes to the kernel as both a key and
//!   a value beat; the kernel takes key beats in its K pass and value beats
//!   while `v_ready` (STATUS.K*_VREADY), and ignores them otherwise. A
//!   kernel takes whole rows (KEEP = ROW_LEN on token pages); a shorter
//!   beat (a KEEP prefix ending mid-beat) reaches it zero-padded and sets
//!   STATUS.ERR. One
//!   channel at a time should stream into a kernel; if two do in the same
//!   clock, the higher-numbered channel's beat is taken. The beat reaches
//!   the kernel 2 clocks after it entered (filter register, beat
//!   register).
//! * **DMA → query**: `q_we`/`q_kernel`/`q_addr`/`q_data` write query
//!   element `q_addr` (`Fx`, i32 bits) of kernel `q_kernel`; writes to a
//!   busy kernel are dropped (they would corrupt its running query).
//! * **Kernel → DMA**: one output stream per kernel (`out0_*`, `out1_*`,
//!   8 lanes of `Fx` per beat, ⌈d/8⌉ beats), since both may finish in the
//!   same clock.
//! * **Top-k** ([`SelectK`]): keys in by the stream port (`topk_valid`/
//!   `topk_key`, then `topk_flush`) or by registers (TOPK_KEY_LO, then
//!   TOPK_KEY_HI hands the key over; CTRL.TOPK_FLUSH); a key's index is its
//!   arrival order. The chosen indices leave ascending on
//!   `topk_out_valid`/`topk_out_index` and stay readable through
//!   TOPK_COUNT, TOPK_RPTR and TOPK_RESULT until the next TOPK_START.
//!   `start` and k come from CTRL.TOPK_START and ARGTOPK_K.
//! * `irq`: any sticky done bit (K0_DONE, K1_DONE, TOPK_DONE) is set.
//!
//! # Scheduling
//!
//! A job goes to whichever kernel is idle: STATUS.IDLE_VALID says one is,
//! STATUS.IDLE_KERNEL which (the lowest). The driver programs that
//! kernel's D, S, SCALE, loads its query through the DMA port, and writes
//! CTRL with the kernel's START bit and CTRL.CHANNELS, the channels that
//! will stream the job's rows: their ROUTE registers are set to that
//! kernel in the same write. A START for a busy kernel is ignored and sets
//! STATUS.ERR. It then streams the K pages, waits for K*_VREADY, streams
//! the V pages (the same rows kept), and collects the outputs; K*_DONE
//! (sticky, cleared by the next START of the kernel) follows the last
//! output beat.
//!
//! # AXI4-Lite slave
//!
//! 32-bit data, 12-bit byte addresses. A write is taken in the clock both
//! AWVALID and WVALID are high and no B response is pending (AWREADY =
//! WREADY high in that clock); BVALID rises the next clock and holds until
//! BREADY. A read is taken when ARVALID is high and no R response is
//! pending; RVALID rises the next clock with RDATA and holds until RREADY.
//! One outstanding transaction per direction. Responses: OKAY (0), or
//! SLVERR (2) for an unmapped or unaligned address, a write to a read-only
//! register, a partial write (WSTRB ≠ 0xF), or a D or ROW_LEN value that
//! is not a multiple of 8; such a write changes nothing. Reset values are all 0 except the read-only ID, VERSION and
//! CONFIG.
//!
//! | address            | name        | access | bits                                                                 |
//! |--------------------|-------------|--------|----------------------------------------------------------------------|
//! | 0x000              | ID          | R      | 0x49435344 ("ICSD")                                                   |
//! | 0x004              | VERSION     | R      | 0x00010001 (1.1)                                                     |
//! | 0x008              | CONFIG      | R      | `[7:0]` channels, `[11:8]` kernels (2), `[15:12]` lanes (8), `[31:16]` keys the top-k unit holds (32768; any k) |
//! | 0x010              | CTRL        | W (reads 0) | `[0]` K0_START, `[1]` K1_START, `[4]` TOPK_START, `[5]` TOPK_FLUSH, `[8+c]` CHANNELS: route channel c to the started kernel (kernel 1 if both start), `[31]` SOFT_RESET |
//! | 0x014              | STATUS      | R      | `[0]` K0_BUSY, `[1]` K1_BUSY, `[2]` K0_DONE, `[3]` K1_DONE, `[4]` K0_VREADY, `[5]` K1_VREADY, `[8]` TOPK_BUSY, `[9]` TOPK_DONE, `[10]` TOPK_OVERFLOW, `[12]` IDLE_VALID, `[13]` IDLE_KERNEL, `[16]` ERR |
//! | 0x020 + 0x10·k     | Kk_D        | RW     | `[8:0]` head dimension d (8..=256, a multiple of 8; else SLVERR)       |
//! | 0x024 + 0x10·k     | Kk_S        | RW     | `[13:0]` tokens S (1..=8192)                                           |
//! | 0x028 + 0x10·k     | Kk_SCALE    | RW     | `[31:0]` logit scale c (Q16, `dense_scale(d)`)                          |
//! | 0x040              | ARGTOPK_K   | RW     | `[15:0]` k                                                             |
//! | 0x044              | TOPK_KEY_LO | W (reads 0) | `[31:0]` the next key's low half (staged)                        |
//! | 0x048              | TOPK_KEY_HI | W (reads 0) | `[31:0]` its high half; hands the key to the top-k unit          |
//! | 0x04C              | TOPK_RESULT | R      | the chosen index at TOPK_RPTR; the read advances TOPK_RPTR             |
//! | 0x050              | TOPK_COUNT  | R      | `[15:0]` indices the last selection took                               |
//! | 0x054              | TOPK_RPTR   | RW     | `[15:0]` the result position (TOPK_START zeroes it)                    |
//! | 0x400 + 0x40·c     | Cc_ROWS     | RW     | `[8:0]` rows per page (≤ 256)                                          |
//! | 0x404 + 0x40·c     | Cc_ROW_LEN  | RW     | `[13:0]` elements per row (a multiple of 8; else SLVERR)               |
//! | 0x408 + 0x40·c     | Cc_KEEP     | RW     | `[13:0]` elements kept per kept row                                    |
//! | 0x40C + 0x40·c     | Cc_ROUTE    | RW     | `[0]` feed kernel 0, `[1]` feed kernel 1                                 |
//! | 0x420 + 0x40·c + 8·w | Cc_MASKw_LO | W (reads 0) | rows 64w .. 64w+31 (staged)                                  |
//! | 0x424 + 0x40·c + 8·w | Cc_MASKw_HI | W (reads 0) | rows 64w+32 .. 64w+63; commits the word to the shadow mask  |
//!
//! k ∈ {0, 1}, c < CH, w ∈ 0..4. SOFT_RESET (other CTRL bits ignored in
//! that write) returns every RW register, the routes and the
//! sticky bits to reset values; it does not abort a running kernel or
//! top-k unit (the blocks have no reset; their `start` restarts them).
//!
//! # Cycles
//!
//! Measured in the tests (`engine_job_matches_dense_group`): the K and V
//! passes each take the longer of the page stream (page elements / 8
//! clocks) and the GeMV (S·⌈d/8⌉ clocks for S kept rows), then softmax
//! adds 2S + 50 and the driver's reaction to K*_VREADY a few more: S = 25
//! kept of 40 tokens at d = 64 in 64-element rows takes 747 clocks from
//! START to K*_DONE (the kernel alone, fed back to back: 530; 745 and 527
//! before the logit stage was pipelined).

use rust_hdl::prelude::*;

use crate::nfc_filter::{LEN_BITS, ROW_BITS};
use crate::{AttentionKernel, NfcFilter, SelectK, select_k};

/// Channels of the synthesized top (Daisyplus).
pub const SYNTH_CHANNELS: usize = 4;
/// Kernel lanes.
pub const LANES: usize = 8;
// The register map (addresses, CTRL/STATUS bits, ID, VERSION, address
// width) lives in `engine-regs`, shared with the board drivers; the table
// above is its documentation.
pub use engine_regs::{ADDR_BITS, ID, VERSION, bit, reg};

/// The engine top level with `CH` channels; see the module docs.
#[derive(LogicBlock)]
pub struct Engine<const CH: usize> {
    /// Rising-edge clock.
    pub clock: Signal<In, Clock>,
    /// Channel c: first element of a page.
    pub nfc_start: [Signal<In, Bit>; CH],
    /// Channel c: an element arrives.
    pub nfc_valid: [Signal<In, Bit>; CH],
    /// Channel c: the beat, 8 fp16 elements (lane j in bits 16j..).
    pub nfc_data: [Signal<In, Bits<128>>; CH],
    /// DMA: write a query element.
    pub q_we: Signal<In, Bit>,
    /// DMA: of this kernel.
    pub q_kernel: Signal<In, Bits<1>>,
    /// DMA: element index.
    pub q_addr: Signal<In, Bits<8>>,
    /// DMA: element (`Fx`, i32 bits).
    pub q_data: Signal<In, Bits<32>>,
    /// Kernel 0 output beat.
    pub out0_valid: Signal<Out, Bit>,
    /// Kernel 0 output lanes.
    pub out0_data: [Signal<Out, Bits<32>>; LANES],
    /// Kernel 1 output beat.
    pub out1_valid: Signal<Out, Bit>,
    /// Kernel 1 output lanes.
    pub out1_data: [Signal<Out, Bits<32>>; LANES],
    /// Top-k: a key arrives (its index is the arrival order).
    pub topk_valid: Signal<In, Bit>,
    /// Top-k: the key.
    pub topk_key: Signal<In, Bits<64>>,
    /// Top-k: no more keys.
    pub topk_flush: Signal<In, Bit>,
    /// Top-k: a chosen index leaves (ascending).
    pub topk_out_valid: Signal<Out, Bit>,
    /// Top-k: the index.
    pub topk_out_index: Signal<Out, Bits<32>>,
    /// Any sticky done bit.
    pub irq: Signal<Out, Bit>,
    /// AXI write address valid.
    pub s_axi_awvalid: Signal<In, Bit>,
    /// AXI write address ready.
    pub s_axi_awready: Signal<Out, Bit>,
    /// AXI write address.
    pub s_axi_awaddr: Signal<In, Bits<ADDR_BITS>>,
    /// AXI write data valid.
    pub s_axi_wvalid: Signal<In, Bit>,
    /// AXI write data ready.
    pub s_axi_wready: Signal<Out, Bit>,
    /// AXI write data.
    pub s_axi_wdata: Signal<In, Bits<32>>,
    /// AXI write strobes (only 0xF is accepted).
    pub s_axi_wstrb: Signal<In, Bits<4>>,
    /// AXI write response valid.
    pub s_axi_bvalid: Signal<Out, Bit>,
    /// AXI write response ready.
    pub s_axi_bready: Signal<In, Bit>,
    /// AXI write response.
    pub s_axi_bresp: Signal<Out, Bits<2>>,
    /// AXI read address valid.
    pub s_axi_arvalid: Signal<In, Bit>,
    /// AXI read address ready.
    pub s_axi_arready: Signal<Out, Bit>,
    /// AXI read address.
    pub s_axi_araddr: Signal<In, Bits<ADDR_BITS>>,
    /// AXI read data valid.
    pub s_axi_rvalid: Signal<Out, Bit>,
    /// AXI read data ready.
    pub s_axi_rready: Signal<In, Bit>,
    /// AXI read data.
    pub s_axi_rdata: Signal<Out, Bits<32>>,
    /// AXI read response.
    pub s_axi_rresp: Signal<Out, Bits<2>>,
    filt: [NfcFilter; CH],
    kern0: AttentionKernel<LANES>,
    kern1: AttentionKernel<LANES>,
    topk: SelectK<{ select_k::SYNTH_ADDR_BITS }>,
    id_c: Constant<Bits<32>>,
    version_c: Constant<Bits<32>>,
    config_c: Constant<Bits<32>>,
    zero: Constant<Bits<32>>,
    onehot: [Constant<Bits<2>>; 2],
    // Registers.
    kd: [DFF<Bits<9>>; 2],
    ks: [DFF<Bits<14>>; 2],
    kc: [DFF<Bits<32>>; 2],
    topk_k: DFF<Bits<16>>,
    key_lo: DFF<Bits<32>>,
    akey: DFF<Bits<64>>,
    akey_v: DFF<Bit>,
    aflush: DFF<Bit>,
    rptr: DFF<Bits<16>>,
    rows: [DFF<Bits<ROW_BITS>>; CH],
    row_len: [DFF<Bits<LEN_BITS>>; CH],
    keep: [DFF<Bits<LEN_BITS>>; CH],
    route: [DFF<Bits<2>>; CH],
    mask_lo: [DFF<Bits<64>>; CH],
    start_p: [DFF<Bit>; 2],
    topk_start_p: DFF<Bit>,
    done_s: [DFF<Bit>; 2],
    topk_done_s: DFF<Bit>,
    err_s: DFF<Bit>,
    bvalid: DFF<Bit>,
    bresp: DFF<Bits<2>>,
    rvalid: DFF<Bit>,
    rresp: DFF<Bits<2>>,
    rdata: DFF<Bits<32>>,
    // The beat each kernel takes next (lanes 8k..8k+7 for kernel k).
    beat: [DFF<Bits<16>>; 16],
    beat_v: [DFF<Bit>; 2],
    // Locals.
    sel_v: [Signal<Local, Bit>; 2],
    sel_beat: [Signal<Local, Bits<128>>; 2],
    /// The written value is allowed in its register (D and ROW_LEN take
    /// whole 8-element beats only).
    w_val_ok: Signal<Local, Bit>,
    busy: [Signal<Local, Bit>; 2],
    /// Some kernel is idle (STATUS.IDLE_VALID). A signal of its own: as an
    /// inline `!a | !b` inside the 32-bit STATUS expression, the generated
    /// Verilog would widen `a` and `b` before inverting them and set
    /// STATUS[31:12] (found by the Verilog co-simulation).
    idle: Signal<Local, Bit>,
    status: Signal<Local, Bits<32>>,
    w_take: Signal<Local, Bit>,
    w_ok: Signal<Local, Bit>,
    w_glob: Signal<Local, Bit>,
    w_chan: Signal<Local, Bit>,
    w_word: Signal<Local, Bits<8>>,
    w_ch: Signal<Local, Bits<4>>,
    w_reg: Signal<Local, Bits<4>>,
    r_take: Signal<Local, Bit>,
    r_ok: Signal<Local, Bit>,
    r_glob: Signal<Local, Bit>,
    r_chan: Signal<Local, Bit>,
    r_word: Signal<Local, Bits<8>>,
    r_ch: Signal<Local, Bits<4>>,
    r_reg: Signal<Local, Bits<4>>,
    r_mux: Signal<Local, Bits<32>>,
    r_rows: Signal<Local, Bits<ROW_BITS>>,
    r_len: Signal<Local, Bits<LEN_BITS>>,
    r_keep: Signal<Local, Bits<LEN_BITS>>,
    r_route: Signal<Local, Bits<2>>,
    w_lo: Signal<Local, Bits<64>>,
    w_hi: Signal<Local, Bits<64>>,
    ctrl_we: Signal<Local, Bit>,
    soft_reset: Signal<Local, Bit>,
}

impl<const CH: usize> Default for Engine<CH> {
    fn default() -> Self {
        assert!((1..=16).contains(&CH), "1 ≤ CH ≤ 16");
        let config =
            CH as u64 | (2 << 8) | ((LANES as u64) << 12) | ((select_k::SYNTH_N_MAX as u64) << 16);
        Self {
            clock: Default::default(),
            nfc_start: std::array::from_fn(|_| Default::default()),
            nfc_valid: std::array::from_fn(|_| Default::default()),
            nfc_data: std::array::from_fn(|_| Default::default()),
            q_we: Default::default(),
            q_kernel: Default::default(),
            q_addr: Default::default(),
            q_data: Default::default(),
            out0_valid: Default::default(),
            out0_data: Default::default(),
            out1_valid: Default::default(),
            out1_data: Default::default(),
            topk_valid: Default::default(),
            topk_key: Default::default(),
            topk_flush: Default::default(),
            topk_out_valid: Default::default(),
            topk_out_index: Default::default(),
            irq: Default::default(),
            s_axi_awvalid: Default::default(),
            s_axi_awready: Default::default(),
            s_axi_awaddr: Default::default(),
            s_axi_wvalid: Default::default(),
            s_axi_wready: Default::default(),
            s_axi_wdata: Default::default(),
            s_axi_wstrb: Default::default(),
            s_axi_bvalid: Default::default(),
            s_axi_bready: Default::default(),
            s_axi_bresp: Default::default(),
            s_axi_arvalid: Default::default(),
            s_axi_arready: Default::default(),
            s_axi_araddr: Default::default(),
            s_axi_rvalid: Default::default(),
            s_axi_rready: Default::default(),
            s_axi_rdata: Default::default(),
            s_axi_rresp: Default::default(),
            filt: std::array::from_fn(|_| Default::default()),
            kern0: Default::default(),
            kern1: Default::default(),
            topk: Default::default(),
            id_c: Constant::new(u64::from(ID).into()),
            version_c: Constant::new(u64::from(VERSION).into()),
            config_c: Constant::new(config.into()),
            zero: Constant::new(0.into()),
            onehot: [Constant::new(1.into()), Constant::new(2.into())],
            kd: Default::default(),
            ks: Default::default(),
            kc: Default::default(),
            topk_k: Default::default(),
            key_lo: Default::default(),
            akey: Default::default(),
            akey_v: Default::default(),
            aflush: Default::default(),
            rptr: Default::default(),
            rows: std::array::from_fn(|_| Default::default()),
            row_len: std::array::from_fn(|_| Default::default()),
            keep: std::array::from_fn(|_| Default::default()),
            route: std::array::from_fn(|_| Default::default()),
            mask_lo: std::array::from_fn(|_| Default::default()),
            start_p: Default::default(),
            topk_start_p: Default::default(),
            done_s: Default::default(),
            topk_done_s: Default::default(),
            err_s: Default::default(),
            bvalid: Default::default(),
            bresp: Default::default(),
            rvalid: Default::default(),
            rresp: Default::default(),
            rdata: Default::default(),
            beat: Default::default(),
            beat_v: Default::default(),
            sel_v: Default::default(),
            sel_beat: Default::default(),
            w_val_ok: Default::default(),
            busy: Default::default(),
            idle: Default::default(),
            status: Default::default(),
            w_take: Default::default(),
            w_ok: Default::default(),
            w_glob: Default::default(),
            w_chan: Default::default(),
            w_word: Default::default(),
            w_ch: Default::default(),
            w_reg: Default::default(),
            r_take: Default::default(),
            r_ok: Default::default(),
            r_glob: Default::default(),
            r_chan: Default::default(),
            r_word: Default::default(),
            r_ch: Default::default(),
            r_reg: Default::default(),
            r_mux: Default::default(),
            r_rows: Default::default(),
            r_len: Default::default(),
            r_keep: Default::default(),
            r_route: Default::default(),
            w_lo: Default::default(),
            w_hi: Default::default(),
            ctrl_we: Default::default(),
            soft_reset: Default::default(),
        }
    }
}

impl<const CH: usize> std::fmt::Debug for Engine<CH> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("channels", &CH).finish()
    }
}

impl<const CH: usize> Logic for Engine<CH> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            topk_k,
            key_lo,
            akey,
            akey_v,
            aflush,
            rptr,
            topk_start_p,
            topk_done_s,
            err_s,
            bvalid,
            bresp,
            rvalid,
            rresp,
            rdata
        );
        for k in 0..2 {
            self.kd[k].clock.next = self.clock.val();
            self.kd[k].d.next = self.kd[k].q.val();
            self.ks[k].clock.next = self.clock.val();
            self.ks[k].d.next = self.ks[k].q.val();
            self.kc[k].clock.next = self.clock.val();
            self.kc[k].d.next = self.kc[k].q.val();
            self.start_p[k].clock.next = self.clock.val();
            self.start_p[k].d.next = false;
            self.done_s[k].clock.next = self.clock.val();
            self.done_s[k].d.next = self.done_s[k].q.val();
            self.beat_v[k].clock.next = self.clock.val();
            self.beat_v[k].d.next = false;
        }
        for j in 0..16 {
            self.beat[j].clock.next = self.clock.val();
            self.beat[j].d.next = self.beat[j].q.val();
        }
        for c in 0..CH {
            self.rows[c].clock.next = self.clock.val();
            self.rows[c].d.next = self.rows[c].q.val();
            self.row_len[c].clock.next = self.clock.val();
            self.row_len[c].d.next = self.row_len[c].q.val();
            self.keep[c].clock.next = self.clock.val();
            self.keep[c].d.next = self.keep[c].q.val();
            self.route[c].clock.next = self.clock.val();
            self.route[c].d.next = self.route[c].q.val();
            self.mask_lo[c].clock.next = self.clock.val();
            self.mask_lo[c].d.next = self.mask_lo[c].q.val();
        }
        self.topk_start_p.d.next = false;
        self.akey_v.d.next = false;
        self.aflush.d.next = false;

        // AXI write: decode.
        self.w_take.next =
            self.s_axi_awvalid.val() & self.s_axi_wvalid.val() & !self.bvalid.q.val();
        self.s_axi_awready.next = self.w_take.val();
        self.s_axi_wready.next = self.w_take.val();
        self.w_word.next = self.s_axi_awaddr.val().get_bits::<8>(2);
        self.w_ch.next = self.s_axi_awaddr.val().get_bits::<4>(6);
        self.w_reg.next = self.s_axi_awaddr.val().get_bits::<4>(2);
        self.w_glob.next = (self.s_axi_awaddr.val().get_bits::<2>(10).index() == 0)
            & (self.s_axi_awaddr.val().get_bits::<2>(0).index() == 0)
            & (self.s_axi_wstrb.val().index() == 15);
        self.w_chan.next = false;
        for c in 0..CH {
            if self.w_ch.val().index() == c {
                self.w_chan.next = (self.s_axi_awaddr.val().get_bits::<2>(10).index() == 1)
                    & (self.s_axi_awaddr.val().get_bits::<2>(0).index() == 0)
                    & (self.s_axi_wstrb.val().index() == 15)
                    & ((self.w_reg.val().index() < 4) | (self.w_reg.val().index() >= 8));
            }
        }
        // D (words 8, 12) and ROW_LEN (channel register 1) take whole
        // 8-element beats only.
        self.w_val_ok.next = true;
        if self.w_glob.val()
            & ((self.w_word.val().index() == 8) | (self.w_word.val().index() == 12))
            & (self.s_axi_wdata.val().get_bits::<3>(0).index() != 0)
        {
            self.w_val_ok.next = false;
        }
        if self.w_chan.val()
            & (self.w_reg.val().index() == 1)
            & (self.s_axi_wdata.val().get_bits::<3>(0).index() != 0)
        {
            self.w_val_ok.next = false;
        }
        self.w_ok.next = self.w_val_ok.val()
            & (self.w_chan.val()
                | (self.w_glob.val()
                    & ((self.w_word.val().index() == 4)
                        | (self.w_word.val().index() == 8)
                        | (self.w_word.val().index() == 9)
                        | (self.w_word.val().index() == 10)
                        | (self.w_word.val().index() == 12)
                        | (self.w_word.val().index() == 13)
                        | (self.w_word.val().index() == 14)
                        | (self.w_word.val().index() == 16)
                        | (self.w_word.val().index() == 17)
                        | (self.w_word.val().index() == 18)
                        | (self.w_word.val().index() == 21))));
        self.ctrl_we.next =
            self.w_take.val() & self.w_glob.val() & (self.w_word.val().index() == 4);
        self.soft_reset.next = self.ctrl_we.val() & self.s_axi_wdata.val().get_bit(31);

        // Channel filters (the mask halves widened outside the loop:
        // rust-hdl evaluates `bit_cast` widths outside loop context).
        self.w_lo.next = bit_cast::<64, 32>(self.s_axi_wdata.val());
        self.w_hi.next = self.w_lo.val() << 32;
        for c in 0..CH {
            self.filt[c].clock.next = self.clock.val();
            self.filt[c].start.next = self.nfc_start[c].val();
            self.filt[c].in_valid.next = self.nfc_valid[c].val();
            self.filt[c].in_data.next = self.nfc_data[c].val();
            self.filt[c].rows.next = self.rows[c].q.val();
            self.filt[c].row_len.next = self.row_len[c].q.val();
            self.filt[c].keep.next = self.keep[c].q.val();
            self.filt[c].mask_we.next = false;
            self.filt[c].mask_addr.next = self.w_reg.val().get_bits::<2>(1);
            self.filt[c].mask_data.next = self.w_hi.val() | self.mask_lo[c].q.val();
        }

        // Routing: each kernel takes the beat of a channel routed to it,
        // registered once; a filter beat is a kernel beat (rows are whole
        // beats: D and ROW_LEN are multiples of 8).
        for k in 0..2 {
            self.sel_v[k].next = false;
            self.sel_beat[k].next = self.filt[0].out_data.val();
            for c in 0..CH {
                if self.filt[c].out_valid.val() & self.route[c].q.val().get_bit(k) {
                    self.sel_v[k].next = true;
                    self.sel_beat[k].next = self.filt[c].out_data.val();
                    // A short beat (a KEEP prefix ending mid-beat) is not a
                    // whole row: flag it.
                    if self.filt[c].out_count.val().index() != 8 {
                        self.err_s.d.next = true;
                    }
                }
            }
            self.beat_v[k].d.next = self.sel_v[k].val();
            if self.sel_v[k].val() {
                for j in 0..8 {
                    self.beat[k * 8 + j].d.next = self.sel_beat[k].val().get_bits::<16>(16 * j);
                }
            }
        }

        // Kernels.
        self.kern0.clock.next = self.clock.val();
        self.kern1.clock.next = self.clock.val();
        self.busy[0].next = self.kern0.busy.val() | self.start_p[0].q.val();
        self.busy[1].next = self.kern1.busy.val() | self.start_p[1].q.val();
        self.kern0.q_we.next =
            self.q_we.val() & (self.q_kernel.val().index() == 0) & !self.busy[0].val();
        self.kern1.q_we.next =
            self.q_we.val() & (self.q_kernel.val().index() == 1) & !self.busy[1].val();
        self.kern0.q_addr.next = self.q_addr.val();
        self.kern1.q_addr.next = self.q_addr.val();
        self.kern0.q_data.next = self.q_data.val();
        self.kern1.q_data.next = self.q_data.val();
        self.kern0.start.next = self.start_p[0].q.val();
        self.kern1.start.next = self.start_p[1].q.val();
        self.kern0.d.next = self.kd[0].q.val();
        self.kern1.d.next = self.kd[1].q.val();
        self.kern0.s.next = self.ks[0].q.val();
        self.kern1.s.next = self.ks[1].q.val();
        self.kern0.c.next = self.kc[0].q.val();
        self.kern1.c.next = self.kc[1].q.val();
        self.kern0.k_valid.next = self.beat_v[0].q.val();
        self.kern1.k_valid.next = self.beat_v[1].q.val();
        self.kern0.v_valid.next = self.beat_v[0].q.val();
        self.kern1.v_valid.next = self.beat_v[1].q.val();
        for j in 0..8 {
            self.kern0.k_data[j].next = self.beat[j].q.val();
            self.kern0.v_data[j].next = self.beat[j].q.val();
            self.kern1.k_data[j].next = self.beat[8 + j].q.val();
            self.kern1.v_data[j].next = self.beat[8 + j].q.val();
            self.out0_data[j].next = self.kern0.out_data[j].val();
            self.out1_data[j].next = self.kern1.out_data[j].val();
        }
        self.out0_valid.next = self.kern0.out_valid.val();
        self.out1_valid.next = self.kern1.out_valid.val();
        if self.kern0.done.val() {
            self.done_s[0].d.next = true;
        }
        if self.kern1.done.val() {
            self.done_s[1].d.next = true;
        }
        for k in 0..2 {
            if self.start_p[k].q.val() {
                self.done_s[k].d.next = false;
            }
        }

        // Top-k.
        self.topk.clock.next = self.clock.val();
        self.topk.start.next = self.topk_start_p.q.val();
        self.topk.k.next = self.topk_k.q.val();
        // Keys from the stream port, or the one TOPK_KEY_HI handed over
        // (the stream wins a shared clock; a driver uses one or the other).
        self.topk.in_valid.next = self.topk_valid.val() | self.akey_v.q.val();
        self.topk.in_key.next = self.topk_key.val();
        if !self.topk_valid.val() {
            self.topk.in_key.next = self.akey.q.val();
        }
        self.topk.flush.next = self.topk_flush.val() | self.aflush.q.val();
        self.topk.res_addr.next = self.rptr.q.val();
        self.topk_out_valid.next = self.topk.out_valid.val();
        self.topk_out_index.next = self.topk.out_index.val();
        if self.topk.done.val() {
            self.topk_done_s.d.next = true;
        }
        if self.topk_start_p.q.val() {
            self.topk_done_s.d.next = false;
        }
        self.idle.next = !self.busy[0].val() | !self.busy[1].val();
        self.irq.next = self.done_s[0].q.val() | self.done_s[1].q.val() | self.topk_done_s.q.val();

        // STATUS.
        self.status.next = self
            .zero
            .val()
            .replace_bit(0, self.busy[0].val())
            .replace_bit(1, self.busy[1].val())
            .replace_bit(2, self.done_s[0].q.val())
            .replace_bit(3, self.done_s[1].q.val())
            .replace_bit(4, self.kern0.v_ready.val())
            .replace_bit(5, self.kern1.v_ready.val())
            .replace_bit(8, self.topk.busy.val())
            .replace_bit(9, self.topk_done_s.q.val())
            .replace_bit(10, self.topk.overflow.val())
            .replace_bit(12, self.idle.val())
            .replace_bit(13, self.busy[0].val() & !self.busy[1].val())
            .replace_bit(16, self.err_s.q.val());

        // AXI write: effects.
        if self.w_take.val() & self.w_glob.val() & self.w_val_ok.val() {
            if self.w_word.val().index() == 8 {
                self.kd[0].d.next = self.s_axi_wdata.val().get_bits::<9>(0);
            }
            if self.w_word.val().index() == 9 {
                self.ks[0].d.next = self.s_axi_wdata.val().get_bits::<14>(0);
            }
            if self.w_word.val().index() == 10 {
                self.kc[0].d.next = self.s_axi_wdata.val();
            }
            if self.w_word.val().index() == 12 {
                self.kd[1].d.next = self.s_axi_wdata.val().get_bits::<9>(0);
            }
            if self.w_word.val().index() == 13 {
                self.ks[1].d.next = self.s_axi_wdata.val().get_bits::<14>(0);
            }
            if self.w_word.val().index() == 14 {
                self.kc[1].d.next = self.s_axi_wdata.val();
            }
            if self.w_word.val().index() == 16 {
                self.topk_k.d.next = self.s_axi_wdata.val().get_bits::<16>(0);
            }
            if self.w_word.val().index() == 17 {
                self.key_lo.d.next = self.s_axi_wdata.val();
            }
            if self.w_word.val().index() == 18 {
                self.akey.d.next = (bit_cast::<64, 32>(self.s_axi_wdata.val()) << 32)
                    | bit_cast::<64, 32>(self.key_lo.q.val());
                self.akey_v.d.next = true;
            }
            if self.w_word.val().index() == 21 {
                self.rptr.d.next = self.s_axi_wdata.val().get_bits::<16>(0);
            }
        }
        if self.ctrl_we.val() & !self.soft_reset.val() {
            for k in 0..2 {
                if self.s_axi_wdata.val().get_bit(k) {
                    if self.busy[k].val() {
                        self.err_s.d.next = true;
                    } else {
                        self.start_p[k].d.next = true;
                        for c in 0..CH {
                            if self.s_axi_wdata.val().get_bit(8 + c) {
                                self.route[c].d.next = self.onehot[k].val();
                            }
                        }
                    }
                }
            }
            if self.s_axi_wdata.val().get_bit(4) {
                self.topk_start_p.d.next = true;
                self.rptr.d.next = 0.into();
            }
            if self.s_axi_wdata.val().get_bit(5) {
                self.aflush.d.next = true;
            }
        }
        for c in 0..CH {
            if self.w_take.val()
                & self.w_chan.val()
                & self.w_val_ok.val()
                & (self.w_ch.val().index() == c)
            {
                if self.w_reg.val().index() == 0 {
                    self.rows[c].d.next = self.s_axi_wdata.val().get_bits::<ROW_BITS>(0);
                }
                if self.w_reg.val().index() == 1 {
                    self.row_len[c].d.next = self.s_axi_wdata.val().get_bits::<LEN_BITS>(0);
                }
                if self.w_reg.val().index() == 2 {
                    self.keep[c].d.next = self.s_axi_wdata.val().get_bits::<LEN_BITS>(0);
                }
                if self.w_reg.val().index() == 3 {
                    self.route[c].d.next = self.s_axi_wdata.val().get_bits::<2>(0);
                }
                if self.w_reg.val().get_bit(3) {
                    if self.w_reg.val().get_bit(0) {
                        self.filt[c].mask_we.next = true;
                    } else {
                        self.mask_lo[c].d.next = self.w_lo.val();
                    }
                }
            }
        }
        if self.w_take.val() {
            self.bvalid.d.next = true;
            if self.w_ok.val() {
                self.bresp.d.next = 0.into();
            } else {
                self.bresp.d.next = 2.into();
            }
        } else if self.s_axi_bready.val() {
            self.bvalid.d.next = false;
        }
        self.s_axi_bvalid.next = self.bvalid.q.val();
        self.s_axi_bresp.next = self.bresp.q.val();

        // AXI read.
        self.r_take.next = self.s_axi_arvalid.val() & !self.rvalid.q.val();
        self.s_axi_arready.next = self.r_take.val();
        self.r_word.next = self.s_axi_araddr.val().get_bits::<8>(2);
        self.r_ch.next = self.s_axi_araddr.val().get_bits::<4>(6);
        self.r_reg.next = self.s_axi_araddr.val().get_bits::<4>(2);
        self.r_glob.next = (self.s_axi_araddr.val().get_bits::<2>(10).index() == 0)
            & (self.s_axi_araddr.val().get_bits::<2>(0).index() == 0);
        self.r_chan.next = false;
        self.r_rows.next = self.rows[0].q.val();
        self.r_len.next = self.row_len[0].q.val();
        self.r_keep.next = self.keep[0].q.val();
        self.r_route.next = self.route[0].q.val();
        for c in 0..CH {
            if self.r_ch.val().index() == c {
                self.r_chan.next = (self.s_axi_araddr.val().get_bits::<2>(10).index() == 1)
                    & (self.s_axi_araddr.val().get_bits::<2>(0).index() == 0)
                    & ((self.r_reg.val().index() < 4) | (self.r_reg.val().index() >= 8));
                self.r_rows.next = self.rows[c].q.val();
                self.r_len.next = self.row_len[c].q.val();
                self.r_keep.next = self.keep[c].q.val();
                self.r_route.next = self.route[c].q.val();
            }
        }
        self.r_mux.next = self.zero.val();
        if self.r_chan.val() {
            if self.r_reg.val().index() == 0 {
                self.r_mux.next = bit_cast::<32, ROW_BITS>(self.r_rows.val());
            }
            if self.r_reg.val().index() == 1 {
                self.r_mux.next = bit_cast::<32, LEN_BITS>(self.r_len.val());
            }
            if self.r_reg.val().index() == 2 {
                self.r_mux.next = bit_cast::<32, LEN_BITS>(self.r_keep.val());
            }
            if self.r_reg.val().index() == 3 {
                self.r_mux.next = bit_cast::<32, 2>(self.r_route.val());
            }
        }
        self.r_ok.next = self.r_chan.val()
            | (self.r_glob.val()
                & ((self.r_word.val().index() <= 2)
                    | (self.r_word.val().index() == 4)
                    | (self.r_word.val().index() == 5)
                    | (self.r_word.val().index() == 8)
                    | (self.r_word.val().index() == 9)
                    | (self.r_word.val().index() == 10)
                    | (self.r_word.val().index() == 12)
                    | (self.r_word.val().index() == 13)
                    | (self.r_word.val().index() == 14)
                    | ((self.r_word.val().index() >= 16) & (self.r_word.val().index() <= 21))));
        if self.r_glob.val() {
            if self.r_word.val().index() == 0 {
                self.r_mux.next = self.id_c.val();
            }
            if self.r_word.val().index() == 1 {
                self.r_mux.next = self.version_c.val();
            }
            if self.r_word.val().index() == 2 {
                self.r_mux.next = self.config_c.val();
            }
            if self.r_word.val().index() == 5 {
                self.r_mux.next = self.status.val();
            }
            if self.r_word.val().index() == 8 {
                self.r_mux.next = bit_cast::<32, 9>(self.kd[0].q.val());
            }
            if self.r_word.val().index() == 9 {
                self.r_mux.next = bit_cast::<32, 14>(self.ks[0].q.val());
            }
            if self.r_word.val().index() == 10 {
                self.r_mux.next = self.kc[0].q.val();
            }
            if self.r_word.val().index() == 12 {
                self.r_mux.next = bit_cast::<32, 9>(self.kd[1].q.val());
            }
            if self.r_word.val().index() == 13 {
                self.r_mux.next = bit_cast::<32, 14>(self.ks[1].q.val());
            }
            if self.r_word.val().index() == 14 {
                self.r_mux.next = self.kc[1].q.val();
            }
            if self.r_word.val().index() == 16 {
                self.r_mux.next = bit_cast::<32, 16>(self.topk_k.q.val());
            }
            if self.r_word.val().index() == 19 {
                self.r_mux.next = self.topk.res_index.val();
            }
            if self.r_word.val().index() == 20 {
                self.r_mux.next = bit_cast::<32, 16>(self.topk.selected.val());
            }
            if self.r_word.val().index() == 21 {
                self.r_mux.next = bit_cast::<32, 16>(self.rptr.q.val());
            }
        }
        if self.r_take.val() & self.r_glob.val() & (self.r_word.val().index() == 19) {
            self.rptr.d.next = self.rptr.q.val() + 1;
        }
        if self.r_take.val() {
            self.rvalid.d.next = true;
            self.rdata.d.next = self.r_mux.val();
            if self.r_ok.val() {
                self.rresp.d.next = 0.into();
            } else {
                self.rresp.d.next = 2.into();
                self.rdata.d.next = 0.into();
            }
        } else if self.s_axi_rready.val() {
            self.rvalid.d.next = false;
        }
        self.s_axi_rvalid.next = self.rvalid.q.val();
        self.s_axi_rdata.next = self.rdata.q.val();
        self.s_axi_rresp.next = self.rresp.q.val();

        // Soft reset: registers, routes, sticky bits.
        if self.soft_reset.val() {
            for k in 0..2 {
                self.kd[k].d.next = 0.into();
                self.ks[k].d.next = 0.into();
                self.kc[k].d.next = 0.into();
                self.done_s[k].d.next = false;
            }
            for c in 0..CH {
                self.rows[c].d.next = 0.into();
                self.row_len[c].d.next = 0.into();
                self.keep[c].d.next = 0.into();
                self.route[c].d.next = 0.into();
                self.mask_lo[c].d.next = 0.into();
            }
            self.topk_k.d.next = 0.into();
            self.key_lo.d.next = 0.into();
            self.rptr.d.next = 0.into();
            self.topk_done_s.d.next = false;
            self.err_s.d.next = false;
        }
    }
}

pub mod cosim {
    //! Co-simulation support: drives an [`Engine<SYNTH_CHANNELS>`] (the
    //! synthesized top) through one attention job clock by clock, the way a
    //! driver would (AXI4-Lite handshakes, query loads, NFC pages), and
    //! records every clock's inputs and sampled outputs, so that the
    //! generated Verilog can be run on the same inputs
    //! (`tests/verilog_cosim.rs`, `tb/engine_tb.v`) and compared line for
    //! line.

    use std::collections::VecDeque;

    use rust_hdl::prelude::*;

    use super::{Engine, SYNTH_CHANNELS, bit, reg};
    use crate::nfc_filter::beat_bits;

    /// One NFC page: its 256-row mask and its elements in stream order.
    #[derive(Clone, Debug)]
    pub struct Page {
        /// Rows kept (bit r of word r/64).
        pub mask: [u64; 4],
        /// The page's elements (fp16 bits), 8 per clock; `len() % 8 == 0`.
        pub data: Vec<u16>,
    }

    /// One job on kernel `kernel` fed through channel `channel`.
    #[derive(Clone, Debug)]
    pub struct Job {
        /// The kernel (0 or 1).
        pub kernel: u32,
        /// The channel (< [`SYNTH_CHANNELS`]).
        pub channel: u32,
        /// Head dimension d (= the channel's KEEP).
        pub d: u32,
        /// Kept tokens S.
        pub s: u32,
        /// Logit scale (Q16).
        pub scale: u32,
        /// The query (`Fx`, i32 bits), d elements.
        pub q: Vec<i32>,
        /// Rows per page.
        pub rows_per_page: u32,
        /// Elements per row.
        pub row_len: u32,
        /// The K pages.
        pub k_pages: Vec<Page>,
        /// The V pages.
        pub v_pages: Vec<Page>,
    }

    /// The engine's inputs in one clock.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct EngineIn {
        /// `nfc_start`, bit c for channel c.
        pub nfc_start: u8,
        /// `nfc_valid`, bit c for channel c.
        pub nfc_valid: u8,
        /// `nfc_data`, lane by lane.
        pub nfc_data: [[u16; 8]; SYNTH_CHANNELS],
        /// `q_we`.
        pub q_we: bool,
        /// `q_kernel`.
        pub q_kernel: u8,
        /// `q_addr`.
        pub q_addr: u8,
        /// `q_data`.
        pub q_data: u32,
        /// `topk_valid`.
        pub topk_valid: bool,
        /// `topk_key`.
        pub topk_key: u64,
        /// `topk_flush`.
        pub topk_flush: bool,
        /// `s_axi_awvalid`.
        pub awvalid: bool,
        /// `s_axi_awaddr`.
        pub awaddr: u16,
        /// `s_axi_wvalid`.
        pub wvalid: bool,
        /// `s_axi_wdata`.
        pub wdata: u32,
        /// `s_axi_wstrb`.
        pub wstrb: u8,
        /// `s_axi_bready`.
        pub bready: bool,
        /// `s_axi_arvalid`.
        pub arvalid: bool,
        /// `s_axi_araddr`.
        pub araddr: u16,
        /// `s_axi_rready`.
        pub rready: bool,
    }

    impl EngineIn {
        /// The clock as a `tb/engine_tb.v` vector line (hex fields).
        pub fn vector_line(&self) -> String {
            let b = u8::from;
            format!(
                "{:x} {:x} {:032x} {:032x} {:032x} {:032x} {:x} {:x} {:02x} {:08x} {:x} {:016x} {:x} \
                 {:x} {:03x} {:x} {:08x} {:x} {:x} {:x} {:03x} {:x}",
                self.nfc_start,
                self.nfc_valid,
                beat_bits(&self.nfc_data[0]),
                beat_bits(&self.nfc_data[1]),
                beat_bits(&self.nfc_data[2]),
                beat_bits(&self.nfc_data[3]),
                b(self.q_we),
                self.q_kernel,
                self.q_addr,
                self.q_data,
                b(self.topk_valid),
                self.topk_key,
                b(self.topk_flush),
                b(self.awvalid),
                self.awaddr,
                b(self.wvalid),
                self.wdata,
                self.wstrb,
                b(self.bready),
                b(self.arvalid),
                self.araddr,
                b(self.rready),
            )
        }
    }

    /// What a job's run recorded.
    #[derive(Clone, Debug, Default)]
    pub struct Trace {
        /// Each clock's inputs.
        pub inputs: Vec<EngineIn>,
        /// Each clock's outputs after the edge, as `tb/engine_tb.v` writes
        /// them (payloads zeroed while their valid is low).
        pub outputs: Vec<String>,
        /// The AXI reads: (address, RDATA, RRESP).
        pub reads: Vec<(u32, u32, u8)>,
        /// Kernel 0's output beats.
        pub out0: Vec<Vec<i32>>,
        /// Clocks at which `irq` was high.
        pub irq_clocks: usize,
    }

    struct Tb {
        uut: Box<Engine<SYNTH_CHANNELS>>,
        cur: EngineIn,
        nfc: [VecDeque<(bool, [u16; 8])>; SYNTH_CHANNELS],
        q: VecDeque<(u8, u8, i32)>,
        trace: Trace,
    }

    impl Tb {
        fn apply(&mut self) {
            let (u, x) = (&mut self.uut, &self.cur);
            for c in 0..SYNTH_CHANNELS {
                u.nfc_start[c].next = x.nfc_start >> c & 1 == 1;
                u.nfc_valid[c].next = x.nfc_valid >> c & 1 == 1;
                u.nfc_data[c].next = beat_bits(&x.nfc_data[c]).to_bits();
            }
            u.q_we.next = x.q_we;
            u.q_kernel.next = u64::from(x.q_kernel).into();
            u.q_addr.next = u64::from(x.q_addr).into();
            u.q_data.next = u64::from(x.q_data).into();
            u.topk_valid.next = x.topk_valid;
            u.topk_key.next = x.topk_key.into();
            u.topk_flush.next = x.topk_flush;
            u.s_axi_awvalid.next = x.awvalid;
            u.s_axi_awaddr.next = u64::from(x.awaddr).into();
            u.s_axi_wvalid.next = x.wvalid;
            u.s_axi_wdata.next = u64::from(x.wdata).into();
            u.s_axi_wstrb.next = u64::from(x.wstrb).into();
            u.s_axi_bready.next = x.bready;
            u.s_axi_arvalid.next = x.arvalid;
            u.s_axi_araddr.next = u64::from(x.araddr).into();
            u.s_axi_rready.next = x.rready;
        }

        /// The combinational outputs under the current inputs, before the
        /// edge.
        fn settle(&mut self) {
            self.apply();
            crate::sim::settle(self.uut.as_mut());
        }

        fn step(&mut self) {
            self.cur.nfc_start = 0;
            self.cur.nfc_valid = 0;
            for c in 0..SYNTH_CHANNELS {
                let x = self.nfc[c].pop_front();
                let valid = x.is_some();
                let (start, data) = x.unwrap_or_default();
                self.cur.nfc_start |= u8::from(start) << c;
                self.cur.nfc_valid |= u8::from(valid) << c;
                self.cur.nfc_data[c] = if valid { data } else { [0; 8] };
            }
            let q = self.q.pop_front();
            self.cur.q_we = q.is_some();
            let (k, a, v) = q.unwrap_or_default();
            self.cur.q_kernel = k;
            self.cur.q_addr = a;
            self.cur.q_data = v as u32;
            self.apply();
            crate::sim::tick(self.uut.as_mut(), |u| &mut u.clock);
            let u = &self.uut;
            let h = |s: &Signal<Out, Bit>| u8::from(s.val());
            let gate = |v: bool, x: u64| if v { x } else { 0 };
            let mut line = format!(
                "{:x} {:x} {:x} {:x} {:x} {:x} {:08x} {:x}",
                h(&u.s_axi_awready),
                h(&u.s_axi_wready),
                h(&u.s_axi_bvalid),
                gate(u.s_axi_bvalid.val(), u.s_axi_bresp.val().to_u64()),
                h(&u.s_axi_arready),
                h(&u.s_axi_rvalid),
                gate(u.s_axi_rvalid.val(), u.s_axi_rdata.val().to_u64()),
                gate(u.s_axi_rvalid.val(), u.s_axi_rresp.val().to_u64()),
            );
            for (v, data) in [(&u.out0_valid, &u.out0_data), (&u.out1_valid, &u.out1_data)] {
                line.push_str(&format!(" {:x}", h(v)));
                for x in data {
                    line.push_str(&format!(" {:08x}", gate(v.val(), x.val().to_u64())));
                }
            }
            line.push_str(&format!(
                " {:x} {:08x} {:x}",
                h(&u.topk_out_valid),
                gate(u.topk_out_valid.val(), u.topk_out_index.val().to_u64()),
                h(&u.irq)
            ));
            if u.out0_valid.val() {
                self.trace.out0.push(
                    u.out0_data
                        .iter()
                        .map(|x| x.val().to_u32() as i32)
                        .collect(),
                );
            }
            self.trace.irq_clocks += usize::from(u.irq.val());
            self.trace.inputs.push(self.cur);
            self.trace.outputs.push(line);
        }

        /// An AXI4-Lite write (AW and W together, then B); returns BRESP.
        fn write(&mut self, addr: u32, data: u32) -> u8 {
            self.cur.awvalid = true;
            self.cur.awaddr = addr as u16;
            self.cur.wvalid = true;
            self.cur.wdata = data;
            self.cur.wstrb = 0xF;
            self.cur.bready = false;
            loop {
                self.settle();
                let taken = self.uut.s_axi_awready.val() && self.uut.s_axi_wready.val();
                self.step();
                if taken {
                    break;
                }
            }
            self.cur.awvalid = false;
            self.cur.wvalid = false;
            self.cur.bready = true;
            loop {
                self.settle();
                let resp = self
                    .uut
                    .s_axi_bvalid
                    .val()
                    .then(|| self.uut.s_axi_bresp.val().to_u8());
                self.step();
                if let Some(r) = resp {
                    self.cur.bready = false;
                    return r;
                }
            }
        }

        /// An AXI4-Lite read (AR, then R); returns RDATA.
        fn read(&mut self, addr: u32) -> u32 {
            self.cur.arvalid = true;
            self.cur.araddr = addr as u16;
            self.cur.rready = false;
            loop {
                self.settle();
                let taken = self.uut.s_axi_arready.val();
                self.step();
                if taken {
                    break;
                }
            }
            self.cur.arvalid = false;
            self.cur.rready = true;
            loop {
                self.settle();
                let r = self.uut.s_axi_rvalid.val().then(|| {
                    (
                        self.uut.s_axi_rdata.val().to_u32(),
                        self.uut.s_axi_rresp.val().to_u8(),
                    )
                });
                self.step();
                if let Some((d, resp)) = r {
                    self.cur.rready = false;
                    self.trace.reads.push((addr, d, resp));
                    return d;
                }
            }
        }

        fn wait_status(&mut self, b: u32) {
            let limit = self.trace.inputs.len() + 1_000_000;
            while self.read(reg::STATUS) & b == 0 {
                assert!(
                    self.trace.inputs.len() < limit,
                    "STATUS bit {b:#x} never set"
                );
            }
        }

        fn drain(&mut self) {
            while self.nfc.iter().any(|q| !q.is_empty()) || !self.q.is_empty() {
                self.step();
            }
        }

        /// Each page's mask through AXI once the queued pages have started,
        /// then its elements.
        fn stream(&mut self, c: u32, pages: &[Page]) {
            for p in pages {
                while self.nfc[c as usize].iter().any(|x| x.0) {
                    self.step();
                }
                for (w, &m) in p.mask.iter().enumerate() {
                    self.write(reg::mask_lo(c, w as u32), m as u32);
                    self.write(reg::mask_hi(c, w as u32), (m >> 32) as u32);
                }
                assert!(p.data.len() % 8 == 0, "pages of whole beats");
                self.nfc[c as usize].extend(
                    p.data
                        .chunks_exact(8)
                        .enumerate()
                        .map(|(i, x)| (i == 0, x.try_into().expect("8 lanes"))),
                );
            }
        }
    }

    /// Runs `job` on a fresh engine: reads ID and VERSION, programs the
    /// kernel and channel, loads the query, starts, streams the K pages,
    /// waits for K*_VREADY, streams the V pages, waits for K*_DONE, reads
    /// STATUS. Runs on a thread with a large stack (the engine is big).
    ///
    /// # Panics
    ///
    /// If the engine never reaches VREADY or DONE, or a write is refused.
    pub fn run_job(job: &Job) -> Trace {
        let job = job.clone();
        std::thread::Builder::new()
            .stack_size(512 << 20)
            .spawn(move || run_job_body(&job))
            .expect("spawn")
            .join()
            .expect("engine run")
    }

    fn run_job_body(job: &Job) -> Trace {
        let mut uut = Box::new(Engine::<SYNTH_CHANNELS>::default());
        crate::sim::prepare(uut.as_mut());
        let mut tb = Tb {
            uut,
            cur: EngineIn::default(),
            nfc: Default::default(),
            q: VecDeque::new(),
            trace: Trace::default(),
        };
        let (k, c) = (job.kernel, job.channel);
        tb.read(reg::ID);
        tb.read(reg::VERSION);
        for (a, v) in [
            (reg::k_d(k), job.d),
            (reg::k_s(k), job.s),
            (reg::k_scale(k), job.scale),
            (reg::rows(c), job.rows_per_page),
            (reg::row_len(c), job.row_len),
            (reg::keep(c), job.d),
        ] {
            assert_eq!(tb.write(a, v), 0, "write {a:#x}");
        }
        for (i, &x) in job.q.iter().enumerate() {
            tb.q.push_back((k as u8, i as u8, x));
        }
        tb.drain();
        assert_eq!(tb.write(reg::CTRL, bit::k_start(k) | bit::channel(c)), 0);
        tb.stream(c, &job.k_pages);
        tb.drain();
        tb.wait_status(bit::k_vready(k));
        tb.stream(c, &job.v_pages);
        tb.wait_status(bit::k_done(k));
        tb.read(reg::STATUS);
        tb.trace
    }
}

#[cfg(test)]
mod tests;
