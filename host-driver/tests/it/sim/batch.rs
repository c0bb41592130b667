//! Decode commands queued together run together on the drive: every
//! sequence's result is the engine model's (bit for bit) whatever the
//! batch, and a batch takes less virtual time than the same commands
//! admitted one at a time (a device-DRAM budget too small for two).

use super::{Problem, SimDevice, device_with};
use attention::shape::Method;
use board_sim::SimConfig;

const SEQS: usize = 8;

fn method(i: usize, p: &Problem) -> Method {
    if i.is_multiple_of(2) {
        Method::Dense
    } else {
        p.sparf_eighth()
    }
}

/// Stores every problem in its own sequence, submits one decode of each
/// before fetching any; returns the raw outputs and the virtual ns from the
/// first submit to the last fetch.
fn decode_together(dev: &mut SimDevice, problems: &[Problem]) -> (Vec<Vec<i32>>, u64) {
    for (i, p) in problems.iter().enumerate() {
        dev.open(i as u32, p.shape(2)).unwrap();
        dev.append(i as u32, 0, 0, &p.k, &p.v).unwrap();
    }
    let t0 = dev.device_time().unwrap().now_ns;
    let tickets: Vec<_> = problems
        .iter()
        .enumerate()
        .map(|(i, p)| {
            dev.submit_decode(i as u32, 0, (p.s - 1) as u32, &p.q, None, method(i, p))
                .unwrap()
        })
        .collect();
    let outs = dev.fetch_many(tickets).unwrap();
    let t1 = dev.device_time().unwrap().now_ns;
    (outs.into_iter().map(|o| o.raw).collect(), t1 - t0)
}

#[test]
fn a_batch_equals_the_model_and_overlaps_sequences() {
    let problems: Vec<Problem> = (0..SEQS)
        .map(|i| Problem::structured(40 + i as u64, 1, 2, 512, 64))
        .collect();
    let mut wide = device_with(SimConfig::new(4096));
    let (together, t_together) = decode_together(&mut wide, &problems);
    let mut cfg = SimConfig::new(4096);
    cfg.decode_dram_bytes = 1;
    let mut narrow = device_with(cfg);
    let (alone, t_alone) = decode_together(&mut narrow, &problems);
    eprintln!("{SEQS} decodes: batched {t_together} ns, one at a time {t_alone} ns (virtual)");
    for (i, p) in problems.iter().enumerate() {
        let want = p.engine(method(i, p));
        assert_eq!(together[i], want, "sequence {i} in a batch");
        assert_eq!(alone[i], want, "sequence {i} alone");
    }
    assert!(
        t_together * 10 < t_alone * 8,
        "a batch of {SEQS} takes {t_together} ns, one at a time {t_alone} ns (virtual)"
    );
}

#[test]
fn a_failed_command_in_a_batch_leaves_the_others() {
    let problems: Vec<Problem> = (0..3)
        .map(|i| Problem::structured(70 + i as u64, 2, 1, 300, 64))
        .collect();
    let mut dev = device_with(SimConfig::new(4096));
    for (i, p) in problems.iter().enumerate() {
        dev.open(i as u32, p.shape(2)).unwrap();
        dev.append(i as u32, 0, 0, &p.k, &p.v).unwrap();
    }
    let ok0 = dev
        .submit_decode(0, 0, 299, &problems[0].q, None, Method::Dense)
        .unwrap();
    // A position that is not the last stored token: POSITION_MISMATCH.
    let bad = dev
        .submit_decode(1, 0, 17, &problems[1].q, None, Method::Dense)
        .unwrap();
    let ok2 = dev
        .submit_decode(2, 0, 299, &problems[2].q, None, method(1, &problems[2]))
        .unwrap();
    let batch = dev.fetch_begin_each(vec![ok0, bad, ok2]);
    let mut got = dev.fetch_end_each(batch);
    let third = got.pop().unwrap().unwrap();
    assert!(got.pop().unwrap().is_err(), "the bad command fails");
    let first = got.pop().unwrap().unwrap();
    assert_eq!(first.raw, problems[0].engine(Method::Dense));
    assert_eq!(third.raw, problems[2].engine(method(1, &problems[2])));
}
