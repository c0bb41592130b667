//! The bit-exact integer ENGINE MODEL: the one numeric truth that device
//! firmware, the simulator and a future FPGA must match bit for bit. Every
//! operation is defined on integers, deterministic, and independent of
//! summation order wherever it sums.
//!
//! # Formats
//!
//! | quantity            | type  | format                  | range / bound                         |
//! |---------------------|-------|-------------------------|---------------------------------------|
//! | storage (q, K, V)   | u16   | IEEE fp16 bits          | NaN → 0, ±Inf → ±65504                |
//! | `Fx` (q, v, output) | i32   | Q14 ([`FRAC`] = 14)     | \|x\| ≤ 65504·2^14 < 2^30             |
//! | `dot`               | i128  | Q28                     | \|·\| < 2^61 per term, < 2^69 (d ≤ 256)|
//! | scales `c`          | u32   | Q16                     | ≤ 2^16 (dense), ≤ 2^20 (approx)       |
//! | logits              | i32   | Q16                     | saturated to i32                      |
//! | log2 weight `y`     | i64   | Q16                     | ≤ 0                                   |
//! | weights `w`         | u32   | Q0.30                   | ≤ 2^30 = [`P_ONE`]                    |
//! | probabilities, α    | u32   | Q0.30                   | Σp ≤ 2^30                             |
//! | token keys          | u64   | Q0.30 sums + 2^40 bonus | < 2^41                                |
//! | value accumulators  | i64   | Q44 (Q30·Q14)           | \|acc\| ≤ 2^60                        |
//! | v̄ sums              | i64   | Q14                     | ≤ S·2^30 < 2^62                       |
//!
//! # Operations
//!
//! * [`fx`]: fp16 → Q14 with integer shifts, round half away from zero.
//! * [`dense_scale`]`(d)` = isqrt(⌊2^32/d⌋); [`approx_scale`] =
//!   min(isqrt(⌊(‖q‖₁·2^32) / (d·‖q_dims‖₁)⌋), 2^20), 0 if ‖q_dims‖₁ = 0.
//! * [`logit`] = sat_i32((dot · c) >> 28), floor shift.
//! * [`softmax`]: t = x − max; y = (t · [`LOG2E_Q16`]) >> 16; z = −y;
//!   w = P(z & 0xFFFF) >> (z >> 16) (0 if the shift ≥ 31); recip =
//!   ⌊2^62 / Σw⌋; p = (w · recip) >> 32. P is the degree-4 polynomial
//!   [`EXP2_POLY`] (Q30 coefficients 2^30, −744171376, 257114954,
//!   −57148825, 7335944; Horner with `>> 16` after each multiply; P(0) = 2^30
//!   exactly, so the max logit's weight is exactly 2^30; max relative error
//!   2.99e−6 over all 65536 inputs). Σp ≤ 2^30.
//! * [`argtopk`]: larger key first, **ties → lower index**, output ascending.
//! * [`select_dims`]: key_i = Σ_h |q_{h,i}|. [`token_keys`]: key_j = Σ_h
//!   p_{h,j} + [`LOCAL_BONUS`] (2^40) for j ≥ S − local.
//! * [`alpha`] = P_ONE if every token is selected, else min(P_ONE, Σ_sel p).
//! * [`accumulate`]: acc += p · fx(v); [`add_vsum`]/[`vmean`]: v̄ rounded
//!   half away from zero; [`finish`]: o = sat((acc + 2^29) >> 30), blended
//!   as sat((α·o + (P_ONE − α)·v̄ + 2^29) >> 30) unless α = P_ONE.
//!
//! # SparF of one KV group ([`sparf_group`])
//!
//! 1. qf = fx(q); dims = select_dims(qf, g, d, r).
//! 2. Per head h: c_h = approx_scale(qf_h, dims); approximate logits
//!    logit_dims over the chosen dims for all S tokens; softmax → p̂_h.
//! 3. keys = token_keys(p̂, g, S, local); tokens = argtopk(keys, k);
//!    α_h = alpha(p̂_h, tokens, S).
//! 4. Per head: logits with dense_scale(d) on the selected tokens only,
//!    softmax over them, accumulate their V rows.
//! 5. v̄ from all S value rows (add_vsum, vmean); finish with α_h.
//!
//! [`dense_group`] is step 4 over all tokens with α = P_ONE; with r = d and
//! k ≥ S, SparF reproduces it bit for bit (tested).
//!
//! [`sparf_plus_group`] (SparF+) runs steps 1–3 on q̃ and K̃ — the query
//! and keys in another basis, as a rotated sequence stores its dim-indexed
//! copy — and steps 4–5 on q, K, V; with a guard, step 3 repeats with k
//! doubled (capped) while min_h α_h is below the threshold
//! ([`select_guarded`]). [`sparf_group`] is the case q̃ = q, K̃ = K, no
//! guard.
//!
//! # Accuracy against the real-valued reference
//!
//! On the same fp16 inputs (the reference computes in f64), for d ∈ {64,
//! 128}, S ∈ {1, 15, 16, 17, 1000, 4096}, g ∈ {1, 3} on [`crate::testdata`]
//! data, the accuracy tests assert per output element:
//!
//! * practical bound: |engine − reference| ≤ ε·max|V| + 2^−13 with ε = 1e−4
//!   for dense and ε = 2e−4 for SparF, and |α_engine − α_ref| ≤ 1e−4
//!   (measured worst: 1.4e−4 and 1.7e−4 absolute at max|V| ≈ 4.3, i.e. about
//!   a quarter of the bound; α within 2e−5);
//! * worst-case bound from first principles: with E = ρ·L + 2^−16 +
//!   c·2^−15·(‖q‖₁ + max‖k‖₁) the logit error (ρ the relative error of the
//!   floored Q16 scale — 0 for d = 64, 1.1e−4 for d = 128, up to 2.5e−4 for
//!   other d — L the largest |logit|, c the real scale, the last term the
//!   Q14 rounding of fp16 inputs) and η = 1.4e−5 + 9.8e−6·L the relative
//!   error of an exponential weight, a softmax over n logits moves
//!   Σ|δp| ≤ D := e^(2(E+η)) − 1 + n·2^−29; dense error ≤ max|V|·D + 2^−13,
//!   SparF error ≤
//!   2·max|V|·D̂ + max|V|·D + 2^−12, where D̂ is D of the approximate pass
//!   (it bounds δα, and α multiplies o − v̄, |o − v̄| ≤ 2·max|V|).
//!
//! The worst-case bound is ~50× loose because logit errors are mostly a
//! common temperature change. Near-ties in SparF's top-k can legitimately
//! select different tokens; the test data has distinct heavy tokens and the
//! test asserts equal dims and token sets before comparing outputs.

mod bound;
mod fixed;
mod guard;
mod heads;
mod kernels;
mod model;
mod pages;
mod radix;
mod softmax;
mod topk;

#[cfg(test)]
mod accuracy;

pub use bound::{ALPHA_EPS, DENSE_EPS, ROUNDING, SPARF_EPS, error_bound};
pub use fixed::{
    APPROX_SCALE_MAX, FRAC, FX_MAX, approx_scale, dense_scale, dot, dot_fx, dot_fx_i64,
    f32_to_f16_bits, fx, fx_to_f32, isqrt, logit, logit_dims, scale_dot, sums_fit_i64,
};
pub use guard::{alpha_threshold, select_guarded, select_guarded_with};
pub use heads::attend_heads;
pub use kernels::{accumulate, accumulate_fx, add_vsum, alpha, finish, vmean};
pub use model::{PlusInputs, SparfOutput, dense_group, sparf_group, sparf_plus_group};
pub use pages::{
    LAYOUT_ROUNDS, PagesOutput, bound_row, layout_order, ln_q16, mean_from_sums, mean_logit,
    page_logits, page_span, page_tokens, pages_group, select_pages, select_pages_from_keys,
    select_pages_from_probs, select_pages_with, shortlist_params, shortlist_rows, shortlist_split,
    shortlist_stand_ins, shortlist_union, sketch_code, sketch_level, sketch_levels, sketch_pack,
    sketch_row, sketch_rows, span_masses, summarize,
};
pub use radix::{DIGIT_BITS, RadixPlan, radix_plan};
pub use softmax::{EXP2_POLY, LOG2E_Q16, P_ONE, exp2_frac, softmax, weight};
pub use topk::{LOCAL_BONUS, argtopk, select_dims, token_keys};
