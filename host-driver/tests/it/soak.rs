//! Soak: 64 sequences × every layer of SmolLM2-135M's attention shape
//! (30 layers, 9 query / 3 KV heads, d = 64) decoding together on one
//! simulated drive with NAND faults on, for a bounded time
//! (`INSTINFER_SOAK_SECONDS`, default 15). Every step's outputs either
//! equal the host's engine-arithmetic model bit for bit or the step fails
//! with the drive's status (the sequence set then stops: failed loudly).
//! The backend runs the host policy (`backend::recovery`): retries on the
//! drive, then a recompute from its host copy;
//! no deadlock (every step returns), and the board's host memory and
//! sequence table come back to where they started (bounded memory).

use std::time::{Duration, Instant};

use board_sim::{NandFaults, SimConfig, SimCsd};
use host_driver::array::CsdArray;
use host_driver::backend::{BackendError, HostDense, InStorage, ModelShape};
use host_driver::csd::{Csd, CsdError};
use host_driver::transport::SimTransport;
use host_driver::vectors::DecodeWorkload;

const SEQS: u32 = 64;
const PROMPT: usize = 80;

#[test]
fn sixty_four_sequences_of_every_layer_under_faults() {
    let seconds: u64 = std::env::var("INSTINFER_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let shape = ModelShape {
        layers: 30,
        q_heads: 9,
        kv_heads: 3,
        head_dim: 64,
    };
    let mut cfg = SimConfig::new(4096);
    cfg.faults = NandFaults {
        seed: 11,
        read_ppm: 20_000,
        program_ppm: 2_000,
        erase_ppm: 2_000,
        slow_channel: Some((1, 3)),
    };
    let t = SimTransport::with_device(SimCsd::new(cfg).unwrap(), 64).unwrap();
    let mut csd = InStorage::new(CsdArray::new(vec![Csd::new(t).unwrap()]).unwrap(), 1);
    csd.keep_host_copy().unwrap();
    let mut host = HostDense::engine();
    let mapped = |b: &mut InStorage<SimTransport>| {
        b.array_mut().devices_mut()[0]
            .transport_mut()
            .device_mut()
            .host_memory()
            .mapped_pages()
    };
    let pages_before = mapped(&mut csd);
    let w = DecodeWorkload {
        seqs: SEQS,
        prompt: PROMPT,
        shape,
    };
    w.prefill(&mut csd).unwrap();
    w.prefill(&mut host).unwrap();
    let start = Instant::now();
    let (mut steps, mut outputs, mut failed) = (0usize, 0usize, None);
    while start.elapsed() < Duration::from_secs(seconds) {
        // The same seeded inputs to both: all layers of all sequences.
        let want = w.step(&mut host, steps, false).unwrap();
        match w.step(&mut csd, steps, false) {
            Ok(got) => {
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "step {steps}: an output differs from the model"
                );
                outputs += got.len() / (shape.q_heads * shape.head_dim);
            }
            Err(e) => {
                assert!(
                    matches!(e, BackendError::Device(CsdError::Status { .. })),
                    "a failure must carry the drive's status: {e}"
                );
                failed = Some(e.to_string());
                break;
            }
        }
        steps += 1;
    }
    let dev = csd.array().devices()[0].transport().device();
    let f = dev.fault_counters();
    eprintln!(
        "soak: {steps} steps x 30 layers x {SEQS} sequences in {:.1} s (wall), {outputs} outputs equal to the model, faults injected: {} reads, {} programs, {} erases; {}",
        start.elapsed().as_secs_f64(),
        f.reads,
        f.programs,
        f.erases,
        failed.as_deref().unwrap_or("no step failed")
    );
    eprintln!("soak: recovery {:?}", csd.recovery());
    assert!(steps > 0 || failed.is_some());
    w.close(&mut csd).unwrap();
    // Bounded memory: no sequence left, no staging page left behind, and
    // every flash block accounted for (free, or retired as bad).
    let stats = csd.array_mut().stats().unwrap();
    assert_eq!(stats[0].open_sequences, 0);
    assert_eq!(mapped(&mut csd), pages_before, "host pages leaked");
    let ftl = csd.array().devices()[0].transport().device().device().ftl();
    let g = *ftl.geometry();
    let (mut free, mut open, mut bad, mut lent) = (0u32, 0u32, 0u32, 0u32);
    for channel in 0..g.channels {
        for way in 0..g.ways {
            for block in 0..g.blocks_per_die {
                let b = ftl::BlockAddr {
                    channel,
                    way,
                    block,
                };
                let kinds = [
                    ftl.is_free_block(b),
                    ftl.is_open_block(b),
                    ftl.is_bad(b),
                    ftl.is_lent_block(b),
                ];
                assert_eq!(
                    kinds.iter().filter(|&&k| k).count(),
                    1,
                    "block {b:?} is not exactly one of free, open (write frontier), bad, lent to the journal: {kinds:?}"
                );
                free += u32::from(kinds[0]);
                open += u32::from(kinds[1]);
                bad += u32::from(kinds[2]);
                lent += u32::from(kinds[3]);
            }
        }
    }
    assert_eq!(lent, 1, "the journal holds one block");
    ftl.audit().expect("the FTL's own accounting");
    eprintln!(
        "soak: blocks {free} free + {open} open (write frontier) + {bad} retired + {lent} journal"
    );
    assert_eq!(
        ftl.stats().valid_pages,
        0,
        "pages still mapped after every close"
    );
}
