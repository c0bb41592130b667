//! Power loss at random points, 1000 seeded trials: a random script of
//! sequence commands runs until the simulated drive loses power after a
//! random number of flash commands (the last one torn); the drive boots
//! again from the same flash. After every restart:
//! - every block is accounted for: free, or retired / reserved (the
//!   journal's two blocks), and no page of the old life is mapped;
//! - every sequence the host saw open reports itself lost (SEQ_LOST)
//!   until closed, every other id answers SEQ_NOT_OPEN (only the command
//!   the power cut interrupted may go either way);
//! - a lost id, closed and opened again, sees only its new tokens: bit
//!   for bit what a drive that never held the old sequence returns.

use std::collections::BTreeSet;

use attention::testdata::SplitMix64;
use board_sim::{SimConfig, SimCsd};
use host_driver::transport::{IoData, IoRequest, SimTransport, Transport};
use proto::{
    DecodeFetch, DecodeFlags, DecodeSubmit, KvAppend, SeqClose, SeqOpen, SeqShape, Sqe, Status,
};

pub(crate) const SHAPE: SeqShape = SeqShape {
    layers: 1,
    kv_heads: 1,
    group: 1,
    head_dim: 64,
    dim_group: 1,
    rotated: false,
    placement: proto::Placement::TIME,
};

fn config() -> SimConfig {
    let mut c = SimConfig::new(4096);
    c.geometry = ftl::Geometry {
        channels: 2,
        ways: 2,
        blocks_per_die: 16,
        pages_per_block: 16,
        page_size: 4096,
    };
    c.max_sequences = 8;
    c.max_streams = 64;
    c.dram_budget = 1 << 20;
    c.journal = true;
    c
}

fn board() -> SimTransport {
    SimTransport::with_device(SimCsd::new(config()).unwrap(), 16).unwrap()
}

pub(crate) fn run(t: &mut SimTransport, sqe: Sqe, data: IoData) -> (Status, Vec<u8>) {
    t.submit(IoRequest { sqe, data }).expect("submit");
    let (_, r) = t.reap().expect("reap");
    (r.cqe.status(), r.data)
}

pub(crate) fn kv(seed: u64, tokens: u32) -> IoData {
    let mut r = SplitMix64::new(seed);
    IoData::ToDevice(
        (0..2 * tokens as usize * 64)
            .flat_map(|_| {
                let x = (r.below(2000) as f32 - 1000.0) / 500.0;
                half::f16::from_f32(x).to_bits().to_le_bytes()
            })
            .collect(),
    )
}

/// Open, append `tokens`, decode the last one: the fetched bytes.
pub(crate) fn fresh_sequence(t: &mut SimTransport, seq: u32, seed: u64, tokens: u32) -> Vec<u8> {
    assert!(
        run(t, SeqOpen::new(seq, SHAPE).to_sqe(), IoData::None)
            .0
            .is_success()
    );
    let a = KvAppend::new(seq, 0, 0, tokens, &SHAPE).unwrap();
    assert!(run(t, a.to_sqe(), kv(seed, tokens)).0.is_success());
    let d = DecodeSubmit::dense(seq, 0, tokens - 1, DecodeFlags::default(), &SHAPE);
    let q = kv(seed ^ 0xABCD, 1);
    let IoData::ToDevice(mut q) = q else {
        unreachable!()
    };
    q.truncate(128);
    assert!(run(t, d.to_sqe(), IoData::ToDevice(q)).0.is_success());
    let f = DecodeFetch::new(seq, 0, &SHAPE);
    let (s, data) = run(
        t,
        f.to_sqe(),
        IoData::FromDevice(DecodeFetch::payload_bytes(&SHAPE) as usize),
    );
    assert!(s.is_success(), "{s}");
    data
}

#[test]
fn a_thousand_power_cuts() {
    let fetch = |t: &mut SimTransport, seq: u32| {
        let f = DecodeFetch::new(seq, 0, &SHAPE);
        let n = DecodeFetch::payload_bytes(&SHAPE) as usize;
        run(t, f.to_sqe(), IoData::FromDevice(n)).0
    };
    let (mut lost_seen, mut cut_mid_script) = (0usize, 0usize);
    for trial in 0..1000u64 {
        let mut rng = SplitMix64::new(trial);
        let mut t = board();
        t.device_mut().cut_power_after(rng.below(12));
        // What the host saw: sequences whose open succeeded and whose
        // close did not (yet).
        let mut open: BTreeSet<u32> = BTreeSet::new();
        let mut len = [0u32; 4];
        let mut uncertain = None;
        for step in 0..14u64 {
            if t.device().power_lost() {
                break;
            }
            let seq = 1 + rng.below(3) as u32;
            let i = seq as usize;
            match rng.below(4) {
                0 => {
                    if run(&mut t, SeqOpen::new(seq, SHAPE).to_sqe(), IoData::None)
                        .0
                        .is_success()
                    {
                        open.insert(seq);
                        len[i] = 0;
                    }
                }
                1 => {
                    let n = 1 + rng.below(48) as u32;
                    let a = KvAppend::new(seq, 0, len[i], n, &SHAPE).unwrap();
                    if run(&mut t, a.to_sqe(), kv(trial * 100 + step, n))
                        .0
                        .is_success()
                    {
                        len[i] += n;
                    }
                }
                2 => {
                    if run(&mut t, SeqClose { seq }.to_sqe(), IoData::None)
                        .0
                        .is_success()
                    {
                        open.remove(&seq);
                    }
                }
                _ => {
                    let _ = fetch(&mut t, seq);
                }
            }
            if t.device().power_lost() {
                // This command ran into the cut: its effect is unknown.
                uncertain = Some(seq);
                cut_mid_script += 1;
                break;
            }
        }
        let mut dev = t.into_device();
        if !dev.power_lost() {
            // The script ended first: the power goes while idle.
            dev.cut_power_after(0);
        }
        let mut t = SimTransport::with_device(dev.restart(config()).unwrap(), 16).unwrap();
        // Every block accounted for, nothing of the old life mapped.
        let ftl = t.device().device().ftl();
        let g = *ftl.geometry();
        let total = u64::from(g.channels) * u64::from(g.ways) * u64::from(g.blocks_per_die);
        let s = ftl.stats();
        // One block is lent to the journal: the new snapshot is in it.
        assert_eq!(s.free_blocks + s.bad_blocks + 1, total, "trial {trial}");
        assert_eq!(
            s.valid_pages, 0,
            "trial {trial}: pages of the old life still mapped"
        );
        for seq in 1..=3u32 {
            let st = fetch(&mut t, seq);
            let lost = st == Status::SEQ_LOST;
            if uncertain != Some(seq) {
                assert_eq!(lost, open.contains(&seq), "trial {trial} seq {seq}: {st}");
            }
            if lost {
                lost_seen += 1;
                // Nothing but a close is served; the close acknowledges.
                let a = KvAppend::new(seq, 0, 0, 1, &SHAPE).unwrap();
                assert_eq!(run(&mut t, a.to_sqe(), kv(1, 1)).0, Status::SEQ_LOST);
                assert!(
                    run(&mut t, SeqClose { seq }.to_sqe(), IoData::None)
                        .0
                        .is_success()
                );
            } else {
                assert!(
                    st.same_code(&Status::SEQ_NOT_OPEN),
                    "trial {trial} seq {seq}: {st}"
                );
            }
            // Opened again, the id sees only its new tokens.
            let again = fresh_sequence(&mut t, seq, trial, 9);
            let mut clean = board();
            assert_eq!(
                again,
                fresh_sequence(&mut clean, seq, trial, 9),
                "trial {trial} seq {seq}"
            );
        }
    }
    eprintln!(
        "power loss: 1000 trials, {cut_mid_script} cut mid-script, {lost_seen} lost sequences reported"
    );
    assert!(
        lost_seen > 100 && cut_mid_script > 100,
        "{lost_seen} {cut_mid_script}"
    );
}
