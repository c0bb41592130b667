//! The C ABI against the simulated board, bit for bit.
//!
//! A real workload runs through the host driver on the simulated board
//! and every command is recorded (SQE, the host memory it references
//! before, the CQE and that memory after). The vectors are written to
//! `<target>/cabi-harness/vectors.txt` and replayed (a) in-process through
//! [`instcsd_cabi::Instance`] and (b) by the C harness linked against the
//! static library; both must reproduce every CQE and every byte.

use std::process::Command;
use std::sync::OnceLock;

use crate::support::vectors::{self, Section};
use crate::support::workload::{Recorded, record};

/// The workload for both page sizes, recorded once per test binary.
fn recorded() -> &'static [Recorded] {
    static RECORDED: OnceLock<Vec<Recorded>> = OnceLock::new();
    RECORDED.get_or_init(|| {
        [4096, 16384]
            .into_iter()
            .map(|p| record(p).expect("workload on the simulated board"))
            .collect()
    })
}

fn sections() -> Vec<Section> {
    recorded().iter().map(|r| r.section.clone()).collect()
}

/// The sections with one written byte and one DW0 changed: a replay
/// must notice both.
fn tampered() -> Vec<Section> {
    let mut secs = sections();
    let recs = &mut secs[0].records;
    let with_post = recs
        .iter()
        .position(|r| !r.post.is_empty())
        .expect("a write");
    recs[with_post].post[0].1[17] ^= 0x40;
    recs[with_post + 1].cqe.dw0 ^= 1;
    secs
}

/// The vector file of `secs`, written and parsed back.
fn vector_file_of(secs: &[Section], name: &str) -> (std::path::PathBuf, Vec<Section>) {
    let text = vectors::to_text(secs);
    let file = format!("{name}-{}.txt", std::process::id());
    let path = crate::support::cbuild::out_dir().join(file);
    std::fs::write(&path, &text).expect("write the vectors");
    let parsed = vectors::parse(&text).expect("parse the vectors");
    (path, parsed)
}

fn vector_file() -> (std::path::PathBuf, Vec<Section>) {
    vector_file_of(&sections(), "vectors")
}

#[test]
fn the_workload_covers_every_command_and_error_path() {
    for r in recorded() {
        let recs = &r.section.records;
        let opcodes: std::collections::BTreeSet<u8> = recs.iter().map(|r| r.sqe[0]).collect();
        for op in [0x06, 0x80, 0x81, 0x84, 0x85, 0x86] {
            assert!(opcodes.contains(&op), "opcode {op:#x} recorded");
        }
        // DECODE_SUBMIT method ids (cdw12 bits 16-23) dense and SparF.
        let methods: std::collections::BTreeSet<u8> = recs
            .iter()
            .filter(|r| r.sqe[0] == 0x85)
            .map(|r| r.sqe[50])
            .collect();
        assert!(
            methods.contains(&proto::Method::DENSE.0) && methods.contains(&proto::Method::SPARF.0)
        );
        let errors = recs.iter().filter(|r| r.cqe.status != 0).count();
        assert!(errors >= 12, "{errors} error completions");
        let with_lists = recs.iter().filter(|r| r.pre.len() > 2).count();
        assert!(with_lists > 0, "PRP lists exercised");
        assert_eq!(r.stats.errors as usize, errors);
    }
}

#[test]
fn in_process_replay_matches_the_simulated_board() {
    let (path, parsed) = vector_file();
    assert_eq!(parsed, sections(), "the file round-trips");
    for (sec, rec) in parsed.iter().zip(recorded()) {
        let out = crate::support::replay::replay(sec);
        assert!(out.mismatches.is_empty(), "{:#?}", out.mismatches);
        assert_eq!(out.commands, rec.section.records.len());
        // Every counter agrees; the times are the boards' own.
        let untimed = |c: [u64; proto::StatsLog::COUNTERS]| {
            c.into_iter()
                .enumerate()
                .filter(|(i, _)| !proto::StatsLog::TIMES.contains(i))
                .map(|(_, v)| v)
                .collect::<Vec<_>>()
        };
        assert_eq!(untimed(out.stats.counters()), untimed(rec.stats.counters()));
        eprintln!(
            "page {}: {} commands replayed in-process, all matched",
            sec.device.page_size, out.commands
        );
    }
    let _ = std::fs::remove_file(path);
    let out = crate::support::replay::replay(&tampered()[0]);
    assert_eq!(out.mismatches.len(), 2, "{:#?}", out.mismatches);
}

#[test]
fn the_c_harness_matches_the_simulated_board() {
    if !testkit::require(
        testkit::tool::runs("gcc", "--version"),
        "gcc",
        "the C harness against the simulated board",
    ) {
        return;
    }
    let lib = crate::support::cbuild::staticlib().expect("static library");
    let exe = crate::support::cbuild::harness(&lib).expect("compile the harness");
    let (path, parsed) = vector_file();
    let total: usize = parsed.iter().map(|s| s.records.len()).sum();
    let out = Command::new(&exe)
        .arg(&path)
        .output()
        .expect("run the harness");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "harness failed: {}", out.status);
    let summary = format!("{total}/{total} commands matched");
    assert!(
        stdout.contains(&summary),
        "expected {summary:?} in {stdout:?}"
    );
    let _ = std::fs::remove_file(path);
}
