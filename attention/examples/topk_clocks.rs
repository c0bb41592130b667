//! Clocks of the engine's hardware top-k (`hdl::SelectK`, the radix
//! select whose plan `attention::engine::radix_plan` gives) on SparF token
//! keys: softmax probabilities of random logits plus the local window's
//! bonus, at k = S/8 and S/16, for S from 1K to 32K.
//!
//! `cargo run --release -p attention --example topk_clocks`

use attention::engine::{radix_plan, softmax, token_keys};
use attention::testdata::SplitMix64;

fn main() {
    let mut rng = SplitMix64::new(1);
    println!(
        "| S | logit spread | k | skipped bits | passes | clocks | clocks per key | µs at 285 MHz |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in [1024usize, 2048, 4096, 8192, 32768] {
        for sigma in [2.0f64, 4.0] {
            // Roughly normal logits (a sum of four uniforms), Q16.
            let logits: Vec<i32> = (0..s)
                .map(|_| {
                    let u: f64 = (0..4)
                        .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
                        .sum::<f64>()
                        - 2.0;
                    (u * sigma * 65536.0) as i32
                })
                .collect();
            let mut p = vec![0u32; s];
            softmax(&logits, &mut p);
            let mut keys = Vec::new();
            token_keys(&p, 1, s, 64, &mut keys);
            for k in [s / 8, s / 16] {
                let plan = radix_plan(&keys, k);
                let clocks = plan.clocks();
                println!(
                    "| {s} | ±{sigma} | {k} | {} | {} | {clocks} | {:.2} | {:.1} |",
                    plan.shifts,
                    plan.passes,
                    clocks as f64 / s as f64,
                    clocks as f64 / 285.0
                );
            }
        }
    }
}
