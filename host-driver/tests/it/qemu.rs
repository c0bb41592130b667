//! The firmware under QEMU runs the end-to-end vectors and gets the same
//! bits as the simulated board. Runs for each board whose firmware ELF is
//! found (`cargo xtask qemu --board B --test` builds it and sets
//! `INSTINFER_QEMU_REQUIRED=B`, which turns a missing firmware or QEMU into
//! a failure); otherwise prints a note and skips.

use host_driver::csd::Csd;
use host_driver::transport::{QemuBoard, QemuTransport, SimTransport};
use host_driver::vectors;

/// The firmware's defmt frames as text, decoded against its ELF (what
/// `defmt-print -e <elf>` prints).
fn decode_log(elf: &std::path::Path, frames: &[u8]) -> Vec<String> {
    let bytes = std::fs::read(elf).expect("read ELF");
    let table = defmt_decoder::Table::parse(&bytes)
        .expect("defmt table")
        .expect("the ELF has defmt data");
    let mut dec = table.new_stream_decoder();
    dec.received(frames);
    let mut out = Vec::new();
    loop {
        match dec.decode() {
            Ok(f) => out.push(f.display_message().to_string()),
            Err(defmt_decoder::DecodeError::UnexpectedEof) => break,
            Err(e) => panic!("bad log frame: {e:?}"),
        }
    }
    out
}

fn required(board: QemuBoard) -> bool {
    std::env::var("INSTINFER_QEMU_REQUIRED").is_ok_and(|v| v.split(',').any(|b| b == board.name()))
}

#[test]
fn qemu_boards_match_the_simulated_board() {
    for board in QemuBoard::ALL {
        let elf = match board.find_firmware() {
            Ok(p) if p.is_file() => p,
            Ok(_) | Err(_) if required(board) => panic!("{} firmware not built", board.name()),
            _ => {
                eprintln!(
                    "skipped: {} under QEMU (no firmware; cargo xtask qemu --board {} --test)",
                    board.name(),
                    board.name()
                );
                continue;
            }
        };
        for page_size in [4096u32, 16384] {
            let t = match QemuTransport::spawn(board, &elf, page_size) {
                Ok(t) => t,
                Err(e) if !required(board) => {
                    testkit::require(false, "QEMU", &format!("{} under QEMU ({e})", board.name()));
                    break;
                }
                Err(e) => panic!("{}: {e}", board.name()),
            };
            let start = std::time::Instant::now();
            let mut csd = Csd::new(t).expect("identify under QEMU");
            let mut got = vectors::run(&mut csd).expect("vectors under QEMU");
            got.extend(vectors::run_pages(&mut csd).expect("pages vectors under QEMU"));
            let wall = start.elapsed();
            let mut sim =
                Csd::new(SimTransport::new(page_size).expect("sim")).expect("sim identify");
            let mut want = vectors::run(&mut sim).expect("vectors on the simulated board");
            want.extend(
                vectors::run_pages(&mut sim).expect("pages vectors on the simulated board"),
            );
            assert_eq!(
                vectors::first_difference(&got, &want),
                None,
                "{} with {page_size} B pages",
                board.name()
            );
            let exit = csd.into_transport().finish().expect("stop");
            let (status, console) = (exit.status, &exit.console);
            assert!(
                status.success(),
                "{}: QEMU exited {status}; console:\n{console}",
                board.name()
            );
            assert!(console.contains("host said stop"), "console:\n{console}");
            let log = decode_log(&elf, &exit.log_frames);
            assert!(
                log.iter().any(|l| l.contains("device core up")),
                "log: {log:?}"
            );
            assert!(
                log.iter().any(|l| l.contains("host said stop")),
                "log: {log:?}"
            );
            let commands = log.iter().filter(|l| l.contains(" opcode ")).count();
            assert!(commands > 20, "{commands} command log lines");
            eprintln!(
                "{} log ({} frames), first lines: {:?}",
                board.name(),
                log.len(),
                &log[..3.min(log.len())]
            );
            eprintln!(
                "{} ({page_size} B pages): {} decodes bit-exact with the simulated board, {:.2} s wall",
                board.name(),
                got.len(),
                wall.as_secs_f64()
            );
        }
    }
}

/// A panic, a CPU exception and bad boot arguments each end QEMU with a
/// non-zero status and say why on the console.
#[test]
fn qemu_failures_exit_non_zero() {
    for board in QemuBoard::ALL {
        let Ok(elf) = board.find_firmware() else {
            assert!(!required(board), "{} firmware not built", board.name());
            eprintln!("skipped: {}'s failure exits (no firmware)", board.name());
            continue;
        };
        let dir = std::env::temp_dir().join(format!("instinfer-qemu-fail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        for (append, says) in [
            ("selftest=panic", "deliberate panic"),
            ("selftest=undef", "undefined instruction"),
            ("page_size=512", "bad boot arguments"),
        ] {
            let console = dir.join(format!("{}-{}.log", board.name(), append.replace('=', "-")));
            let mut cmd = board.command(&elf, &console, append);
            let status = match cmd.stderr(std::process::Stdio::piped()).output() {
                Ok(o) => o.status,
                Err(e) if !required(board) => {
                    testkit::require(
                        false,
                        "QEMU",
                        &format!("{}'s failure exits ({e})", board.name()),
                    );
                    break;
                }
                Err(e) => panic!("{e}"),
            };
            let text = std::fs::read_to_string(&console).unwrap_or_default();
            assert!(
                !status.success(),
                "{} {append}: exited {status}",
                board.name()
            );
            if append != "selftest=panic" {
                assert!(
                    text.contains(says),
                    "{} {append}: console {text:?}",
                    board.name()
                );
            }
            eprintln!("{} {append}: {status}", board.name());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
