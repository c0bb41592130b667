//! Power cuts while garbage collection copies live pages: 1000 seeded
//! trials on a drive small enough that a workload of long- and
//! short-lived sequences keeps its collector busy. A dry run of each
//! script finds the flash commands during which GC ran; the real run cuts
//! the power at a random one of them (the command torn). After the
//! restart nothing acknowledged is lost silently (every sequence the host
//! saw open answers Sequence Lost), no page of the old life is mapped, and
//! an id opened again decodes bit for bit what a never-used drive returns
//! (nothing stale is served). While the power is on, every decode output
//! of the dry run equals a drive that never collected.

use std::collections::BTreeSet;

use attention::testdata::SplitMix64;
use board_sim::{SimConfig, SimCsd};
use host_driver::transport::{IoData, SimTransport};
use proto::{DecodeFetch, DecodeFlags, DecodeSubmit, KvAppend, SeqClose, SeqOpen, Status};

use super::power_loss::{fresh_sequence, kv, run};

/// One head of d = 64; dim pages of 8 dims, so a tail flush of the dim
/// copy is 8 pages, not 64, on this small drive.
pub(super) const SHAPE: proto::SeqShape = proto::SeqShape {
    dim_group: 8,
    ..super::power_loss::SHAPE
};

pub(super) fn config() -> SimConfig {
    let mut c = SimConfig::new(4096);
    c.geometry = ftl::Geometry {
        channels: 2,
        ways: 1,
        blocks_per_die: 12,
        pages_per_block: 8,
        page_size: 4096,
    };
    c.max_sequences = 16;
    c.max_streams = 64;
    c.dram_budget = 256 << 10;
    // Collect early, as a drive serving long-lived sessions would.
    let mut gc = ftl::GcConfig::for_geometry(&c.geometry);
    gc.low_free = 6;
    gc.critical_free = 1;
    c.gc = Some(gc);
    c
}

fn board() -> SimTransport {
    SimTransport::with_device(SimCsd::new(config()).unwrap(), 16).unwrap()
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Open(u32),
    Append(u32, u32),
    Close(u32),
    Decode(u32),
}

/// A script: two long-lived sequences written between short-lived ones
/// that come and go, so blocks die around the long ones' pages.
fn script(seed: u64) -> Vec<Step> {
    let mut r = SplitMix64::new(seed);
    let mut s = vec![Step::Open(1), Step::Open(2)];
    let mut next = 3;
    let mut live: Vec<u32> = Vec::new();
    for _ in 0..50 {
        for long in [1, 2] {
            s.push(Step::Append(long, 4 + r.below(12) as u32));
        }
        if live.len() < 4 {
            s.push(Step::Open(next));
            live.push(next);
            next = 3 + (next - 2) % 12;
        }
        let pick = live[r.below(live.len() as u64) as usize];
        s.push(Step::Append(pick, 8 + r.below(32) as u32));
        if r.below(3) == 0 {
            let i = r.below(live.len() as u64) as usize;
            s.push(Step::Close(live.remove(i)));
        }
        s.push(Step::Decode(1 + r.below(2) as u32));
    }
    s
}

/// Runs `steps` on `t` until the power goes; the host's view: open ids,
/// lengths, the id of a command the cut interrupted, decode outputs, and
/// the flash-command ranges during which GC ran.
struct Outcome {
    open: BTreeSet<u32>,
    uncertain: Option<u32>,
    outputs: Vec<(usize, Vec<u8>)>,
    gc_windows: Vec<(u64, u64)>,
    /// Steps whose command failed, with the status.
    failed: Vec<(usize, Status)>,
}

fn play(t: &mut SimTransport, steps: &[Step]) -> Outcome {
    let mut o = Outcome {
        open: BTreeSet::new(),
        uncertain: None,
        outputs: Vec::new(),
        gc_windows: Vec::new(),
        failed: Vec::new(),
    };
    let mut len = [0u32; 16];
    for (n, &step) in steps.iter().enumerate() {
        if t.device().power_lost() {
            break;
        }
        let (ops0, gc0) = (
            t.device().nand_ops(),
            t.device().device().ftl().stats().gc_blocks,
        );
        let seq = match step {
            Step::Open(s) => {
                if run(t, SeqOpen::new(s, SHAPE).to_sqe(), IoData::None)
                    .0
                    .is_success()
                {
                    o.open.insert(s);
                    len[s as usize] = 0;
                }
                s
            }
            Step::Append(s, k) => {
                let a = KvAppend::new(s, 0, len[s as usize], k, &SHAPE).unwrap();
                let st = run(t, a.to_sqe(), kv(n as u64 * 7 + u64::from(s), k)).0;
                if st.is_success() {
                    len[s as usize] += k;
                } else {
                    o.failed.push((n, st));
                }
                s
            }
            Step::Close(s) => {
                if run(t, SeqClose { seq: s }.to_sqe(), IoData::None)
                    .0
                    .is_success()
                {
                    o.open.remove(&s);
                }
                s
            }
            Step::Decode(s) => {
                let l = len[s as usize];
                if l > 0 {
                    let d = DecodeSubmit::dense(s, 0, l - 1, DecodeFlags::default(), &SHAPE);
                    let IoData::ToDevice(mut q) = kv(n as u64, 1) else {
                        unreachable!()
                    };
                    q.truncate(128);
                    if run(t, d.to_sqe(), IoData::ToDevice(q)).0.is_success() {
                        let f = DecodeFetch::new(s, 0, &SHAPE);
                        let bytes = DecodeFetch::payload_bytes(&SHAPE) as usize;
                        let (st, mut data) = run(t, f.to_sqe(), IoData::FromDevice(bytes));
                        if st.is_success() {
                            // The outputs (Q14, one head of d = 64); the
                            // report after them is the drive's own.
                            data.truncate(4 * 64);
                            o.outputs.push((n, data));
                        }
                    }
                }
                s
            }
        };
        if t.device().power_lost() {
            o.uncertain = Some(seq);
            break;
        }
        if t.device().device().ftl().stats().gc_blocks > gc0 {
            o.gc_windows.push((ops0, t.device().nand_ops()));
        }
    }
    o
}

#[test]
fn a_thousand_power_cuts_during_garbage_collection() {
    let (mut cuts_in_gc, mut lost_seen, mut moved) = (0usize, 0usize, 0u64);
    for trial in 0..1000u64 {
        let steps = script(trial % 50);
        // Dry run: where GC runs, and what the decodes return.
        let mut dry = board();
        let seen = play(&mut dry, &steps);
        moved = moved.max(dry.device().device().ftl().stats().gc_pages_moved);
        assert!(
            !seen.gc_windows.is_empty(),
            "trial {trial}: the script never collected"
        );
        // A drive that never collects returns the same outputs.
        if trial < 50 {
            let mut c = config();
            c.geometry.blocks_per_die = 64;
            c.gc = None;
            let mut roomy = SimTransport::with_device(SimCsd::new(c).unwrap(), 16).unwrap();
            let plain = play(&mut roomy, &steps);
            assert_eq!(roomy.device().device().ftl().stats().gc_blocks, 0);
            assert_eq!(plain.failed, seen.failed, "trial {trial}: commands failed");
            let first = plain
                .outputs
                .iter()
                .zip(&seen.outputs)
                .position(|(a, b)| a != b);
            assert_eq!(
                (plain.outputs.len(), first),
                (seen.outputs.len(), None),
                "trial {trial}: GC changed an output ({:?})",
                first.map(|i| (plain.outputs[i].0, seen.outputs[i].0))
            );
        }
        // The real run: cut inside one of the GC windows.
        let mut rng = SplitMix64::new(trial);
        let (a, b) = seen.gc_windows[rng.below(seen.gc_windows.len() as u64) as usize];
        let mut t = board();
        t.device_mut()
            .cut_power_after(a + rng.below((b - a).max(1)));
        let got = play(&mut t, &steps);
        let mut dev = t.into_device();
        if !dev.power_lost() {
            dev.cut_power_after(0);
        } else {
            cuts_in_gc += 1;
        }
        let mut t = SimTransport::with_device(dev.restart(config()).unwrap(), 16).unwrap();
        let ftl = t.device().device().ftl();
        assert_eq!(
            ftl.stats().valid_pages,
            0,
            "trial {trial}: old pages still mapped"
        );
        for seq in 1..16u32 {
            let f = DecodeFetch::new(seq, 0, &SHAPE);
            let n = DecodeFetch::payload_bytes(&SHAPE) as usize;
            let st = run(&mut t, f.to_sqe(), IoData::FromDevice(n)).0;
            let lost = st == Status::SEQ_LOST;
            if got.uncertain != Some(seq) {
                assert_eq!(
                    lost,
                    got.open.contains(&seq),
                    "trial {trial} seq {seq}: {st}"
                );
            }
            if lost {
                lost_seen += 1;
                assert!(
                    run(&mut t, SeqClose { seq }.to_sqe(), IoData::None)
                        .0
                        .is_success()
                );
            }
        }
        for seq in [1, 2] {
            let again = fresh_sequence(&mut t, seq, trial, 9);
            assert_eq!(
                again,
                fresh_sequence(&mut board(), seq, trial, 9),
                "trial {trial}"
            );
        }
    }
    eprintln!(
        "power loss during GC: 1000 trials, {cuts_in_gc} cut inside a GC run, {lost_seen} lost sequences reported, up to {moved} pages moved per script"
    );
    assert!(cuts_in_gc > 900, "{cuts_in_gc}");
}

#[test]
fn erase_counts_and_retired_blocks_outlive_a_power_cut() {
    let mut t = board();
    let seen = play(&mut t, &script(3));
    assert!(!seen.gc_windows.is_empty());
    let mut dev = t.into_device();
    let old = dev.device().ftl().wear_table();
    dev.cut_power_after(0);
    let dev = dev.restart(config()).unwrap();
    let physical = dev.erase_counts().to_vec();
    let new = dev.device().ftl().wear_table();
    let sum = |t: &[u32]| {
        t.iter()
            .filter(|&&c| c != ftl::RETIRED)
            .map(|&c| u64::from(c))
            .sum::<u64>()
    };
    // The journal's table is from its last move to a new block: no count
    // above what the flash saw (the boot's own erase of the journal's
    // block aside), and most of the wear carried over.
    for (i, (&n, &p)) in new.iter().zip(&physical).enumerate() {
        if n != ftl::RETIRED {
            assert!(n <= p + 1, "block {i}: restored {n}, flash {p}");
        }
    }
    assert!(
        sum(&new) * 10 >= sum(&physical) * 8,
        "restored {} of the flash's {} erases (the old life counted {})",
        sum(&new),
        sum(&physical),
        sum(&old)
    );
    // Retired blocks stay retired.
    for (i, &c) in old.iter().enumerate() {
        if c == ftl::RETIRED {
            assert_eq!(new[i], ftl::RETIRED, "block {i}");
        }
    }
    // One more cut at once: the counts carried over do not fall back.
    let mut dev = dev;
    dev.cut_power_after(0);
    let again = dev.restart(config()).unwrap();
    assert!(sum(&again.device().ftl().wear_table()) >= sum(&new));
}
