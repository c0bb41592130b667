//! The in-storage attention engine of InstInfer in rust-hdl, bit-exact with
//! the integer engine model (`attention::engine`).
//!
//! Every block is a rust-hdl [`LogicBlock`](rust_hdl::prelude::LogicBlock)
//! with a single rising-edge `clock`, co-simulated against the model in
//! its own tests and, as generated Verilog, under Icarus Verilog
//! (`tests/verilog_cosim.rs`, `cargo xtask hdl sim`).
//!
//! | block                      | file            | function                                                        | rate                         |
//! |----------------------------|-----------------|-----------------------------------------------------------------|------------------------------|
//! | [`NfcFilter`]              | `nfc_filter.rs` | drops unselected rows / row tails of a page as it streams past  | 1 element (16 bit) per clock |
//! | [`ArgTopK`]                | `argtopk.rs`    | top-k of (u64 key, u32 index); larger key, ties → lower index   | 1 key per clock; n + 2·min(k,n) + 4 clocks from `start` to `done` |
//! | [`LogitScale`]             | `logit_scale.rs`| sat_i32((dot · c) >> 28) of a 70-bit dot: the GeMV's last stages, the dim scores' output | 1 logit per clock; 8 clocks latency |
//! | [`SelectK`]                | `select_k.rs`   | top-k of any k over n ≤ 32K u64 keys (index = arrival order), radix select in block RAM; the same order and ties as `ArgTopK` | 1 key per clock in; ≈ (3 + passes)·n clocks, passes from the keys (`select_k::cycles`) |
//! | [`FxMul`]                  | `fx_mul.rs`     | term = ±x·fx(h) in W bits (x u32, fx(h) = ±m·2^sh from `FxDecode`): the multiply stage of `GemvUnit` and `WeightedSum` | 1 term per clock; out 2 clock edges after its inputs |
//! | [`GemvUnit`]               | `gemv.rs`       | logit = sat_i32((Σ q·fx(k) · c) >> 28) per fp16 key row, q ≤ 256 | 8 lanes (fp16) per clock; ⌈d/8⌉ clocks per row + 12 clocks latency |
//! | [`Softmax`]                | `softmax.rs`    | Q16 logits → Q0.30 probabilities (n ≤ 8192, logits in BRAM)     | 1 logit per clock in and out; 3n + 51 clocks from `start` to `done` |
//! | [`WeightedSum`]            | `weighted_sum.rs` | acc_i += p·fx(v_i) per row (d ≤ 256, i64 sums), then `finish` with α, v̄ | 8 lanes (fp16) per clock; ⌈d/8⌉ clocks per row; finish ⌈d/8⌉ clocks + 6 latency, 8 outputs per clock |
//! | [`BoundRow`]               | `bound_row.rs`  | PAGES's bound row: per lane `max` where q ≥ 0, `min` where q < 0, from a page summary, in front of the GeMV lanes | 8 lanes (fp16) per clock; 1 clock latency |
//! | [`DimScore`]               | `dim_score.rs`  | SparF's approximate-score pass: the chosen dims' rows of the dim-indexed K copy (8 tokens of one dim per beat) → a running dot per token in block RAM → `sat_i32((dot·c) >> 28)` per token (S ≤ 32K) | 8 MACs (one beat) per clock; s + 15 clocks from `flush` to `done` |
//! | [`SketchRow`]              | `sketch_row.rs` | PAGES's sketch row: per lane the level its 1- or 2-bit code picks from the page's level table, in front of the GeMV lanes | 8 lanes (fp16) per clock; 1 clock latency |
//! | [`AttentionKernel`]        | `kernel.rs`     | one head's dense attention: K rows → GeMV → softmax → p RAM, V rows → weighted sum → d outputs (S ≤ 8192, d ≤ 256) | 8 lanes (fp16) per clock; 2·S·⌈d/8⌉ + 2S + ⌈d/8⌉ + 72 clocks from `start` to `done` |
//!
//! | [`Engine`]                 | `engine.rs`     | top level: `CH` channel filters → per-kernel packers → two kernels (on demand), the top-k (`SelectK`), DMA streams, AXI4-Lite registers (map in [`engine`]) | 1 element per clock per channel; a job ≈ K + V page elements + 2S + ⌈d/8⌉ + ~75 clocks |
//!
//! [`fx::FxDecode`] (`fx.rs`) is the fp16 → Fx decoder that `GemvUnit`
//! and `WeightedSum` share, in front of [`FxMul`].
//!
//! The Verilog of each block (`cargo xtask hdl gen`, from the `hdl-gen`
//! binary) is a module named after the block in `target/hdl/<block>.v`; see [`blocks`].
//!
//! | module | owns |
//! | --- | --- |
//! | [`nfc_filter`] | [`NfcFilter`]: the row filter in every NAND flash controller |
//! | [`argtopk`] | [`ArgTopK`]: streaming top-k of (key, index) pairs |
//! | [`select_k`] | [`SelectK`]: the top-k for any k, a radix select over keys in block RAM |
//! | [`fx`] | [`fx::FxDecode`]: the fp16 → Fx decoder of the blocks that take fp16 values |
//! | [`fx_mul`] | [`FxMul`]: the multiply stage (x · fx(h)) shared by the GeMV lanes and the weighted sum |
//! | [`gemv`] | [`GemvUnit`]: the GeMV lanes of the attention kernel |
//! | [`logit_scale`] | [`LogitScale`]: `sat_i32((dot · c) >> 28)`, the logit of a dot product (the GeMV's last stages, the dim scores' output) |
//! | [`bound_row`] | [`BoundRow`]: the multiplexer that turns a page summary into the row that scores the page (PAGES) |
//! | [`dim_score`] | [`DimScore`]: the SparF approximate-score pass over dim pages |
//! | [`sketch_row`] | [`SketchRow`]: the multiplexer that decodes a page sketch's codes into key rows (PAGES) |
//! | [`softmax`] | [`Softmax`]: the softmax unit of the attention kernel |
//! | [`weighted_sum`] | [`WeightedSum`]: the value side of an attention kernel for one query head |
//! | [`kernel`] | [`AttentionKernel`]: one query head's dense attention |
//! | [`engine`] | [`Engine`]: the top level, with its AXI4-Lite register map |
//! | [`sim`] | a cycle stepper for rust-hdl blocks, without the threaded simulator |
//!
//! The crate imports `attention` only in tests (`docs/ARCHITECTURE.md`).

// The crate by its own name, so test support shared with the integration
// tests can say `hdl::…` in both.
extern crate self as hdl;

pub mod argtopk;
pub mod bound_row;
pub mod dim_score;
pub mod engine;
pub mod fx;
pub mod fx_mul;
pub mod gemv;
pub mod kernel;
pub mod logit_scale;
pub mod nfc_filter;
pub mod select_k;
pub mod sim;
pub mod sketch_row;
pub mod softmax;
pub mod weighted_sum;

pub use argtopk::ArgTopK;
pub use bound_row::BoundRow;
pub use dim_score::DimScore;
pub use engine::Engine;
pub use fx_mul::FxMul;
pub use gemv::GemvUnit;
pub use kernel::AttentionKernel;
pub use logit_scale::LogitScale;
pub use nfc_filter::NfcFilter;
pub use select_k::SelectK;
pub use sketch_row::SketchRow;
pub use softmax::Softmax;
pub use weighted_sum::WeightedSum;

/// The blocks, by name (the Verilog file stem).
pub const BLOCKS: [&str; 12] = [
    "nfc_filter",
    "argtopk",
    "select_k",
    "fx_mul",
    "gemv",
    "bound_row",
    "sketch_row",
    "dim_score",
    "softmax",
    "weighted_sum",
    "kernel",
    "engine",
];

/// The generated Verilog of block `name` at the size that is synthesized,
/// or `None` for an unknown name. Generated on a thread with a large stack:
/// the engine's block structure is too big for a default 2 MiB stack.
pub fn block(name: &str) -> Option<String> {
    let name: &'static str = BLOCKS.iter().copied().find(|n| *n == name)?;
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(move || generate(name))
        .ok()?
        .join()
        .ok()
}

/// Each block's name and its generated Verilog.
pub fn blocks() -> Vec<(&'static str, String)> {
    BLOCKS
        .iter()
        .filter_map(|&n| block(n).map(|v| (n, v)))
        .collect()
}

fn generate(name: &'static str) -> String {
    use rust_hdl::prelude::*;
    fn verilog<B: Block>(mut b: B, name: &str) -> String {
        b.connect_all();
        name_top(&generate_verilog(&b), name)
    }
    match name {
        "nfc_filter" => verilog(NfcFilter::default(), name),
        "argtopk" => verilog(ArgTopK::<{ argtopk::SYNTH_K_MAX }>::default(), name),
        "select_k" => verilog(SelectK::<{ select_k::SYNTH_ADDR_BITS }>::default(), name),
        "fx_mul" => verilog(FxMul::<{ fx_mul::SYNTH_BITS }>::default(), name),
        "gemv" => verilog(GemvUnit::<{ gemv::SYNTH_LANES }>::default(), name),
        "bound_row" => verilog(BoundRow::<{ bound_row::SYNTH_LANES }>::default(), name),
        "sketch_row" => verilog(SketchRow::<{ sketch_row::SYNTH_LANES }>::default(), name),
        "dim_score" => verilog(DimScore::<{ dim_score::SYNTH_WORD_BITS }>::default(), name),
        "softmax" => verilog(Softmax::<{ softmax::SYNTH_ADDR_BITS }>::default(), name),
        "weighted_sum" => verilog(
            WeightedSum::<{ weighted_sum::SYNTH_LANES }>::default(),
            name,
        ),
        "kernel" => verilog(AttentionKernel::<{ kernel::SYNTH_LANES }>::default(), name),
        _ => verilog(Engine::<{ engine::SYNTH_CHANNELS }>::default(), name),
    }
}

/// rust-hdl names the top module `top`; give it the block's name (its
/// submodules keep their `top$…` names, which are unique per block).
fn name_top(verilog: &str, name: &str) -> String {
    verilog.replacen("module top(", &format!("module {name}("), 1)
}
