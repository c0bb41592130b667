//! NAND faults on the simulated board: seeded transient read failures
//! (retried by the firmware), program and erase failures (blocks retired,
//! data re-placed by the FTL), a slow channel, and pages that never read
//! back. Every decode either returns the fault-free bits or fails with a
//! status: never an output computed from bad data. The host's policy on
//! top (`host_driver::backend::recovery`): failed steps are retried on the
//! drive with the new token stored once, then recomputed from the host's
//! copy where it keeps one.

use attention::testdata::SplitMix64;
use board_sim::{NandFaults, SimConfig, SimCsd};
use host_driver::array::CsdArray;
use host_driver::backend::{BackendError, InStorage};
use host_driver::csd::{Csd, CsdError, RetryPolicy};
use host_driver::transport::SimTransport;
use host_driver::vectors::DecodeWorkload;

const STEPS: usize = 6;

/// About 2% of the blocks of `g`, factory bad, chosen from `seed`.
fn factory_bad(seed: u64, g: ftl::Geometry) -> Vec<ftl::BlockAddr> {
    let mut dice = SplitMix64::new(seed);
    let mut bad = Vec::new();
    for channel in 0..g.channels {
        for way in 0..g.ways {
            for block in 0..g.blocks_per_die {
                if dice.below(50) == 0 {
                    bad.push(ftl::BlockAddr {
                        channel,
                        way,
                        block,
                    });
                }
            }
        }
    }
    bad
}

/// A drive with `faults`; a faulty one (reads failing) also gets factory
/// bad blocks.
fn drive(faults: NandFaults) -> InStorage<SimTransport> {
    let mut cfg = SimConfig::new(4096);
    if faults.read_ppm > 0 {
        cfg.bad_blocks = factory_bad(faults.seed, cfg.geometry);
    }
    cfg.faults = faults;
    let t = SimTransport::with_device(SimCsd::new(cfg).unwrap(), 64).unwrap();
    let mut b = InStorage::new(CsdArray::new(vec![Csd::new(t).unwrap()]).unwrap(), 1);
    // The drive's own behaviour: no host retry unless a test asks.
    b.set_retry(RetryPolicy { attempts: 0 });
    b
}

/// Makes every page the drive has programmed fail ECC on every read
/// (`broken`), or read again (`!broken`).
fn break_pages(b: &mut InStorage<SimTransport>, broken: bool) {
    let t = b.array_mut().devices_mut()[0].transport_mut();
    let nand = t
        .device_mut()
        .device_mut()
        .board_mut()
        .nand_mut()
        .array_mut();
    for ppa in nand.programmed() {
        if broken {
            nand.inject_uncorrectable(ppa);
        } else {
            nand.clear_uncorrectable(ppa);
        }
    }
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// The fault-free outputs of `steps` steps (odd steps SparF).
fn reference(w: &DecodeWorkload, steps: usize) -> Vec<Vec<f32>> {
    let mut b = drive(NandFaults::default());
    w.prefill(&mut b).unwrap();
    (0..steps)
        .map(|s| w.step(&mut b, s, s % 2 == 1).unwrap())
        .collect()
}

/// Outcome of one faulty run against the fault-free reference.
#[derive(Debug, Default)]
struct Tally {
    injected: u64,
    /// Factory bad blocks.
    factory_bad: u64,
    /// Of which: program and erase failures (blocks retired).
    wear: u64,
    retried_reads: u64,
    steps_equal: usize,
    /// Steps that failed with a status (the run stops there).
    detected: usize,
    /// Steps that returned bits different from the reference: must be 0.
    silent: usize,
    /// Host policy: drive commands run again, steps of failed batches
    /// that completed on the drive, steps computed on the host.
    host_retries: u64,
    recovered: u64,
    recomputed: u64,
}

fn campaign(
    w: &DecodeWorkload,
    reference: &[Vec<f32>],
    faults: NandFaults,
    host_policy: bool,
) -> Tally {
    let mut b = drive(faults);
    if host_policy {
        b.set_retry(RetryPolicy::default());
        b.keep_host_copy().unwrap();
    }
    let mut t = Tally::default();
    let prefill = w.prefill(&mut b);
    let mut ok = prefill.is_ok();
    if prefill.is_err() {
        t.detected += 1;
    }
    for (step, want) in reference.iter().enumerate() {
        if !ok {
            break;
        }
        match w.step(&mut b, step, step % 2 == 1) {
            Ok(got) => {
                if same_bits(&got, want) {
                    t.steps_equal += 1;
                } else {
                    t.silent += 1;
                }
            }
            Err(e) => {
                // Loud: a status from the drive, never a wrong output.
                let status = matches!(e, BackendError::Device(CsdError::Status { .. }));
                assert!(status, "a failed step must carry the drive's status: {e}");
                t.detected += 1;
                ok = false;
            }
        }
    }
    let dev = b.array().devices()[0].transport().device();
    let f = dev.fault_counters();
    t.injected = f.reads + f.programs + f.erases;
    t.factory_bad = factory_bad(faults.seed, SimConfig::new(4096).geometry).len() as u64;
    t.wear = f.programs + f.erases;
    t.retried_reads = dev.nand_counters().uncorrectable_reads;
    let r = b.recovery();
    t.recovered = r.steps_recovered;
    t.host_retries = r.retries;
    t.recomputed = r.steps_recomputed + r.steps_on_host;
    t
}

impl Tally {
    fn add(&mut self, t: &Tally) {
        self.injected += t.injected;
        self.factory_bad += t.factory_bad;
        self.wear += t.wear;
        self.retried_reads += t.retried_reads;
        self.steps_equal += t.steps_equal;
        self.detected += t.detected;
        self.silent += t.silent;
        self.host_retries += t.host_retries;
        self.recovered += t.recovered;
        self.recomputed += t.recomputed;
    }
}

/// Every seed of `seeds` at every read-failure rate of `read_ppm`, with
/// 0.5% of programs and erases failing and channel 3 four times slower;
/// `check` sees each run's tally; returns the sum.
fn campaigns(
    seeds: std::ops::Range<u64>,
    read_ppm: [u32; 2],
    host_policy: bool,
    check: impl Fn(u64, &Tally),
) -> Tally {
    let w = DecodeWorkload::new(2, 400);
    let reference = reference(&w, STEPS);
    let mut total = Tally::default();
    for seed in seeds {
        for read_ppm in read_ppm {
            let faults = NandFaults {
                seed,
                read_ppm,
                program_ppm: 5_000,
                erase_ppm: 5_000,
                slow_channel: Some((3, 4)),
            };
            let t = campaign(&w, &reference, faults, host_policy);
            check(seed, &t);
            total.add(&t);
        }
    }
    total
}

#[test]
fn faults_are_recovered_or_reported_never_silent() {
    // Moderate: 2% of reads fail once. Severe: a third of reads fail.
    let total = campaigns(0..6, [20_000, 330_000], false, |seed, t| {
        assert_eq!(t.silent, 0, "seed {seed}: {t:?}");
    });
    assert!(total.injected > 100 && total.wear > 0, "{total:?}");
    assert!(total.steps_equal > 0, "{total:?}");
    assert!(
        total.detected > 0,
        "the severe runs must fail some reads for good: {total:?}"
    );
    eprintln!("fault campaign: {total:?}");
}

#[test]
fn a_page_that_never_reads_back_fails_the_decode_with_a_media_error() {
    let w = DecodeWorkload::new(1, 600);
    let mut b = drive(NandFaults::default());
    w.prefill(&mut b).unwrap();
    // Every programmed page now fails ECC on every read.
    break_pages(&mut b, true);
    let e = w.step(&mut b, 0, false).unwrap_err();
    match e {
        BackendError::Device(CsdError::Status { status, .. }) => {
            assert_eq!(status, proto::Status::MEDIA_ERROR, "{e}");
        }
        other => panic!("expected the drive's media error, got {other}"),
    }
}

#[test]
fn a_failed_step_run_again_finds_its_token_stored_and_stores_it_once() {
    let w = DecodeWorkload::new(1, 600);
    let want = reference(&w, 2);
    let mut b = drive(NandFaults::default());
    w.prefill(&mut b).unwrap();
    break_pages(&mut b, true);
    // The firmware appends the token, then fails its reads.
    assert!(w.step(&mut b, 0, false).is_err());
    assert_eq!(b.recovery().failed, 1, "{:?}", b.recovery());
    // The fault passes; the same step again. The drive refuses a second
    // copy of the token (Position Mismatch) and the retry runs the decode
    // without it.
    break_pages(&mut b, false);
    let got = w.step(&mut b, 0, false).unwrap();
    assert!(same_bits(&got, &want[0]));
    let r = b.recovery();
    assert!(r.batches_failed >= 2 && r.steps_recovered >= 1, "{r:?}");
    // A token stored twice would change every later step's attention.
    let got = w.step(&mut b, 1, true).unwrap();
    assert!(same_bits(&got, &want[1]));
}

#[test]
fn with_a_host_copy_a_page_that_never_reads_back_is_recomputed_bit_for_bit() {
    let w = DecodeWorkload::new(2, 600);
    let want = reference(&w, 4);
    let mut b = drive(NandFaults::default());
    b.set_retry(RetryPolicy::default());
    b.keep_host_copy().unwrap();
    w.prefill(&mut b).unwrap();
    break_pages(&mut b, true);
    for (step, want) in want.iter().enumerate() {
        let got = w.step(&mut b, step, step % 2 == 1).unwrap();
        assert!(same_bits(&got, want), "step {step}");
    }
    let r = b.recovery();
    // The first step: both sequences fail on the drive (retried twice
    // each), are recomputed on the host and move there for good.
    assert_eq!(r.sequences_moved, 2, "{r:?}");
    assert!(r.retries >= 2 && r.steps_recomputed >= 2, "{r:?}");
    assert!(r.steps_on_host > 0 && r.failed == 0, "{r:?}");
    assert!(b.is_moved(0) && b.is_moved(1));
    // Their pages on the drive were released.
    assert!(b.array().head_ranges(0).is_none());
    w.close(&mut b).unwrap();
    // A copy cannot start once sequences are open.
    let mut late = drive(NandFaults::default());
    w.prefill(&mut late).unwrap();
    assert!(late.keep_host_copy().is_err());
}

#[test]
fn under_the_host_policy_every_step_returns_the_fault_free_bits() {
    // 10% of reads failing: the host's retries are enough. 33%: some
    // sequences fail for good on the drive and move to the host.
    let total = campaigns(0..3, [100_000, 330_000], true, |seed, t| {
        assert_eq!((t.silent, t.detected), (0, 0), "seed {seed}: {t:?}");
        assert_eq!(t.steps_equal, STEPS, "seed {seed}: {t:?}");
    });
    assert!(total.recovered > 0 && total.recomputed > 0, "{total:?}");
    eprintln!("fault campaign under the host policy: {total:?}");
}
