//! NAND faults on the simulated board: seeded transient read failures
//! (retried by the firmware), program and erase failures (blocks retired,
//! data re-placed by the FTL), a slow channel, and pages that never read
//! back. Every decode either returns the fault-free bits or fails with a
//! status: never an output computed from bad data.

use board_sim::{NandFaults, SimConfig, SimCsd};
use host_driver::array::CsdArray;
use host_driver::backend::{BackendError, InStorage};
use host_driver::csd::{Csd, CsdError};
use host_driver::run::vectors::DecodeWorkload;
use host_driver::transport::SimTransport;

const STEPS: usize = 6;

fn drive(faults: NandFaults) -> InStorage<SimTransport> {
    let mut cfg = SimConfig::new(4096);
    cfg.faults = faults;
    let t = SimTransport::with_device(SimCsd::new(cfg).unwrap(), 64).unwrap();
    InStorage::new(CsdArray::new(vec![Csd::new(t).unwrap()]).unwrap(), 1)
}

/// Outcome of one faulty run against the fault-free reference.
#[derive(Debug, Default)]
struct Tally {
    injected: u64,
    /// Of which: program and erase failures (blocks retired).
    wear: u64,
    retried_reads: u64,
    steps_equal: usize,
    /// Steps that failed with a status (the run stops there).
    detected: usize,
    /// Steps that returned bits different from the reference: must be 0.
    silent: usize,
}

fn campaign(w: &DecodeWorkload, reference: &[Vec<f32>], faults: NandFaults) -> Tally {
    let mut b = drive(faults);
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
                if got
                    .iter()
                    .zip(want)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
                {
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
    t.wear = f.programs + f.erases;
    t.retried_reads = dev.nand_counters().uncorrectable_reads;
    t
}

#[test]
fn faults_are_recovered_or_reported_never_silent() {
    let w = DecodeWorkload::new(2, 400);
    let mut b = drive(NandFaults::default());
    w.prefill(&mut b).unwrap();
    let reference: Vec<Vec<f32>> = (0..STEPS)
        .map(|s| w.step(&mut b, s, s % 2 == 1).unwrap())
        .collect();
    let mut total = Tally::default();
    for seed in 0..6u64 {
        // Moderate: 2% of reads fail once, 0.5% of programs and erases
        // fail; channel 3 four times slower. Severe: a third of reads fail.
        for read_ppm in [20_000, 330_000] {
            let t = campaign(
                &w,
                &reference,
                NandFaults {
                    seed,
                    read_ppm,
                    program_ppm: 5_000,
                    erase_ppm: 5_000,
                    slow_channel: Some((3, 4)),
                },
            );
            assert_eq!(t.silent, 0, "seed {seed}: {t:?}");
            total.injected += t.injected;
            total.wear += t.wear;
            total.retried_reads += t.retried_reads;
            total.steps_equal += t.steps_equal;
            total.detected += t.detected;
        }
    }
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
    {
        let t = b.array_mut().devices_mut()[0].transport_mut();
        let nand = t
            .device_mut()
            .device_mut()
            .board_mut()
            .nand_mut()
            .array_mut();
        for ppa in nand.programmed() {
            nand.inject_uncorrectable(ppa);
        }
    }
    let e = w.step(&mut b, 0, false).unwrap_err();
    match e {
        BackendError::Device(CsdError::Status { status, .. }) => {
            assert_eq!(status, proto::Status::MEDIA_ERROR, "{e}");
        }
        other => panic!("expected the drive's media error, got {other}"),
    }
}
