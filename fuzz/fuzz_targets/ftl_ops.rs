//! The FTL under arbitrary operation sequences: open streams of any shape,
//! append any number of tokens (with or without a dim copy), flush by
//! draining the flash operations, close, reopen; a small DRAM budget so
//! that budget pressure is reached. Every call returns a value or an
//! error; the FTL's own counters stay consistent.
#![no_main]

use ftl::{Ftl, FtlConfig, Geometry, StreamShape};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A small array (2 channels × 2 ways × 4 blocks × 8 pages) and a
    // 16 KiB DRAM budget: capacity and budget run out within one input.
    let geo = Geometry {
        channels: 2,
        ways: 2,
        blocks_per_die: 4,
        pages_per_block: 8,
        page_size: 4096,
    };
    let Ok(mut f) = Ftl::new(FtlConfig {
        geometry: geo,
        dram_budget: 16 << 10,
        max_streams: 8,
        bad_blocks: Vec::new(),
    }) else {
        return;
    };
    let mut streams = Vec::new();
    // At most 64 operations an input: short sequences, run often.
    for op in data.chunks(4).take(64) {
        let &[kind, a, b, c] = op else { break };
        match kind % 5 {
            0 => {
                // Head dims up to 126 (odd and zero ones are refused), dim
                // groups 0..=9 (out-of-range ones are refused).
                let shape = StreamShape {
                    head_dim: u16::from(a % 128),
                    dim_group: b % 10,
                };
                if let Ok(id) = f.open_stream(shape) {
                    streams.push((id, shape));
                }
            }
            1 | 2 => {
                let Some(&(id, shape)) = streams.get(usize::from(a) % streams.len().max(1)) else {
                    continue;
                };
                // Up to 12 tokens an append (partial pages, page fills).
                let n = usize::from(b % 13) * usize::from(shape.head_dim);
                let k: Vec<u16> = (0..n).map(|i| i as u16 ^ u16::from(c)).collect();
                let v = k.clone();
                if kind % 5 == 1 {
                    let _ = f.append(id, &k, &v);
                } else {
                    let _ = f.append_with_dim_copy(id, &k, &v, &k);
                }
            }
            3 => {
                let _ = f.drain_ops();
            }
            _ => {
                if !streams.is_empty() {
                    let i = usize::from(a) % streams.len();
                    let (id, _) = streams.swap_remove(i);
                    let _ = f.close_stream(id);
                    // Closed: every query about it is an error now.
                    assert!(f.len(id).is_err());
                }
            }
        }
    }
    for &(id, _) in &streams {
        let _ = f.len(id);
        let _ = f.stream_pages(id);
    }
    let _ = f.stats();
});
