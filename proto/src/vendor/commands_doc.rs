//! `docs/vendor-commands.md`, rendered from the layouts and the builders.
//! The test fails while the checked-in file differs, and rewrites it under
//! `UPDATE_DOCS=1`.

use std::fmt::Write;
use std::string::String;

use super::*;
use crate::{CapabilityBlock, StatsLog, Status, log::LID_STATS};

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/vendor-commands.md");
const REGENERATE: &str = "UPDATE_DOCS=1 cargo test -p proto vendor_commands_doc";

/// The example of the recipes: 1 layer, 3 KV heads × 3 query heads each,
/// d = 64, m = 1.
const SHAPE: SeqShape = SeqShape {
    layers: 1,
    kv_heads: 3,
    group: 3,
    head_dim: 64,
    dim_group: 1,
    rotated: false,
    placement: crate::vendor::Placement::TIME,
};
const SEQ: u32 = 1;
const PROMPT: u32 = 16;

/// The flags with their names and what they do; together they are
/// [`DecodeFlags::ALL`] (checked).
const FLAGS: [(DecodeFlags, &str, &str); 5] = [
    (
        DecodeFlags::APPEND_KV,
        "APPEND_KV",
        "k_new and v_new follow q and are stored at `position` before attending",
    ),
    (
        DecodeFlags::GUARD,
        "GUARD",
        "sparf only: the adaptive guardrail; its parameters end the payload",
    ),
    (
        DecodeFlags::FILL,
        "FILL",
        "pages only: the pages not read join the softmax as their mean key and mean value",
    ),
    (
        DecodeFlags::MEAN,
        "MEAN",
        "pages only: pages scored by their mean key (plus ln of their rows), not the min/max bound",
    ),
    (
        DecodeFlags::SKETCH,
        "SKETCH",
        "pages only: pages scored by their tokens' attention mass under the DRAM key sketch (SEQ_OPEN `sketch_bits`); over MEAN",
    ),
];

fn status(s: Status) -> String {
    std::format!("{} (status {:#06x})", s.name().unwrap_or("?"), s.to_field())
}

fn render() -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(
        w,
        "<!-- Generated from proto/src/vendor.rs by `{REGENERATE}`; edit that, not this. -->"
    );
    let _ = writeln!(w, "# InstCSD vendor commands\n");
    let _ = writeln!(
        w,
        "The drive's own I/O commands, sent to namespace {VENDOR_NSID} on an I/O queue. \
         Outside cdw10..cdw15 each is a plain NVMe command: cdw0 holds the opcode and the \
         command id, fuse and PSDT are 0 (PRPs only), cdw2, cdw3 and the metadata pointer \
         are zero. Every bit of cdw10..cdw15 not named below is reserved and must be zero. \
         The drive answers a reserved bit set, like a value out of range, with {}; a \
         command that does not fit its sequence's shape (layer, NDT, sparf's `r`) with {}.\n",
        status(Status::INVALID_FIELD),
        status(Status::SHAPE_MISMATCH),
    );
    let _ = writeln!(
        w,
        "Everything here is rendered from `proto::vendor`, where each command's fields \
         are declared once (`LAYOUTS`, `LayoutTable`); builders, parsers and \
         reserved-bit checks follow from the same declaration.\n"
    );

    let _ = writeln!(w, "## Commands\n");
    let _ = writeln!(w, "| opcode | command | data | payload |");
    let _ = writeln!(w, "| --- | --- | --- | --- |");
    for c in LAYOUTS {
        let dir = match c.opcode.direction() {
            crate::DataDirection::None => "none",
            crate::DataDirection::HostToDevice => "host→device",
            crate::DataDirection::DeviceToHost => "device→host",
            crate::DataDirection::Bidirectional => "both",
        };
        let _ = writeln!(
            w,
            "| {:02X}h | {} | {dir} | {} |",
            c.opcode.0,
            c.name(),
            table::Cell(c.data)
        );
    }
    let _ = writeln!(
        w,
        "\nElement data is little-endian. `ndt` counts the payload in dwords; the \
         payload follows from the sequence's shape. The guard trailer is \
         `proto::GuardTrailer` ({} bytes), the decode report `proto::DecodeReport` \
         ({} bytes).\n",
        GuardTrailer::SIZE,
        DecodeReport::SIZE
    );

    let _ = writeln!(w, "## Dword layout\n");
    let _ = writeln!(w, "{LayoutTable}");
    let _ = writeln!(w, "`method` values:\n");
    let _ = writeln!(w, "| value | method |\n| --- | --- |");
    for m in (0..=u8::MAX).map(Method).filter(|m| m.is_known()) {
        let _ = writeln!(w, "| {} | {m} |", m.0);
    }
    let _ = writeln!(w, "\n`flags` bits:\n");
    let _ = writeln!(w, "| bit | flag | meaning |\n| --- | --- | --- |");
    for (flag, name, meaning) in FLAGS {
        let _ = writeln!(w, "| {} | {name} | {meaning} |", flag.0.trailing_zeros());
    }

    let _ = writeln!(w, "\n## Sending them by hand (`nvme-cli`)\n");
    let _ = writeln!(
        w,
        "Every vendor command is an ordinary NVMe passthrough, so `nvme io-passthru` \
         reaches it. The example is sequence {SEQ} with {} layer, {} KV heads × {} query \
         heads per group, d = {}, m = {}, {PROMPT} prompt tokens. The dword values are \
         what `proto`'s builders encode; a dword not given is zero.\n",
        SHAPE.layers, SHAPE.kv_heads, SHAPE.group, SHAPE.head_dim, SHAPE.dim_group
    );
    let _ = writeln!(w, "```sh");
    let _ = writeln!(
        w,
        "nvme id-ctrl /dev/nvme0 -b | xxd -s {} -l {}   # the InstCSD capability block",
        CapabilityBlock::OFFSET,
        CapabilityBlock::SIZE
    );
    passthru(w, &SeqOpen::new(SEQ, SHAPE).to_sqe(), "", "", Data::None);
    let append = KvAppend::new(SEQ, 0, 0, PROMPT, &SHAPE).unwrap_or_else(|e| panic!("{e}"));
    passthru(
        w,
        &append.to_sqe(),
        "",
        "kv.bin: K then V",
        Data::Write("kv.bin"),
    );
    let last = PROMPT - 1;
    let dense = DecodeSubmit::dense(SEQ, 0, last, DecodeFlags::NONE, &SHAPE);
    passthru(
        w,
        &dense.to_sqe(),
        "dense",
        "q.bin: q",
        Data::Write("q.bin"),
    );
    let sparf = DecodeSubmit::sparf(SEQ, 0, last, DecodeFlags::NONE, 8, 1, 4, &SHAPE);
    passthru(w, &sparf.to_sqe(), "sparf", "", Data::Write("q.bin"));
    let guard = GuardTrailer {
        alpha_min_milli: 600,
        k_cap: 8,
    };
    let mut trailer = String::new();
    for b in guard.to_bytes() {
        let _ = write!(trailer, " {b:02x}");
    }
    let guarded = DecodeSubmit::sparf(SEQ, 0, last, DecodeFlags::GUARD, 8, 1, 4, &SHAPE);
    let trailer = std::format!(
        "q_guard.bin: q, then the trailer (alpha_min_milli {}, k_cap {}):{trailer}",
        guard.alpha_min_milli,
        guard.k_cap
    );
    let title = "sparf with the guardrail";
    passthru(
        w,
        &guarded.to_sqe(),
        title,
        &trailer,
        Data::Write("q_guard.bin"),
    );
    let _ = writeln!(
        w,
        "# A rotated sequence (SEQ_OPEN rotated = 1) takes K, V, K̃ in KV_APPEND and q, q̃ \
         in a SparF\n# DECODE_SUBMIT (and k_new, v_new, k̃_new with APPEND_KV)."
    );
    let fetch = DecodeFetch::new(SEQ, 0, &SHAPE);
    let out = "out.bin: the i32 outputs, then the report";
    passthru(w, &fetch.to_sqe(), "", out, Data::Read("out.bin"));
    let _ = writeln!(
        w,
        "nvme get-log /dev/nvme0 --log-id={LID_STATS:#x} --log-len={} -b | xxd | head   \
         # the statistics log",
        StatsLog::SIZE
    );
    passthru(w, &SeqClose { seq: SEQ }.to_sqe(), "", "", Data::None);
    let _ = writeln!(w, "```\n");
    let _ = writeln!(
        w,
        "A drive without the engine answers each of these with {}.",
        status(Status::INVALID_OPCODE)
    );
    o
}

enum Data {
    None,
    Write(&'static str),
    Read(&'static str),
}

/// One `nvme io-passthru` command for `sqe`, after a comment naming the
/// command (and `title`), its field values and `data_note`. A dword
/// holding one field is written in decimal, one holding several in hex.
fn passthru(w: &mut String, sqe: &Sqe, title: &str, data_note: &str, data: Data) {
    let layout = VendorCommand::parse(sqe)
        .unwrap_or_else(|e| panic!("example {}: {e}", sqe.opcode()))
        .layout();
    let dwords = layout::dwords(sqe);
    let _ = write!(w, "# {}", layout.name());
    if !title.is_empty() {
        let _ = write!(w, ", {title}");
    }
    w.push(':');
    for f in layout.fields {
        let v = f.bits.get(dwords[(f.dword - layout::FIRST_DWORD) as usize]);
        let _ = write!(w, " {}={v}", f.name);
    }
    if !data_note.is_empty() {
        let _ = write!(w, "\n# {data_note}");
    }
    let mut args = std::vec![std::format!("--opcode={:#04x}", layout.opcode.0)];
    for (i, v) in dwords.into_iter().enumerate() {
        let dword = layout::FIRST_DWORD + i as u8;
        if v == 0 {
            continue;
        }
        if layout.fields.iter().filter(|f| f.dword == dword).count() == 1 {
            args.push(std::format!("--cdw{dword}={v}"));
        } else {
            args.push(std::format!("--cdw{dword}={v:#010x}"));
        }
    }
    let bytes = u64::from(sqe.cdw10) * 4;
    match data {
        Data::None => {}
        Data::Write(file) => {
            args.push(std::format!("--data-len={bytes}"));
            args.push(std::format!("--input-file={file} -w"));
        }
        Data::Read(file) => {
            args.push(std::format!("--data-len={bytes}"));
            args.push(std::format!("-r -b > {file}"));
        }
    }
    let mut line = String::from("\nnvme io-passthru /dev/ng0n1");
    for arg in args {
        if line.len() + 1 + arg.len() > 80 {
            w.push_str(&line);
            w.push_str(" \\");
            line = String::from("\n   ");
        }
        line.push(' ');
        line.push_str(&arg);
    }
    w.push_str(&line);
    w.push('\n');
}

#[test]
fn flags_table_names_every_flag() {
    let all = FLAGS.iter().fold(0, |a, (f, ..)| a | f.0);
    assert_eq!(all, DecodeFlags::ALL.0);
}

#[test]
fn vendor_commands_doc() {
    let want = render();
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::write(PATH, &want).unwrap_or_else(|e| panic!("{PATH}: {e}"));
        return;
    }
    let have = std::fs::read_to_string(PATH).unwrap_or_default();
    assert!(
        have == want,
        "docs/vendor-commands.md differs from what proto renders; run `{REGENERATE}`"
    );
}
