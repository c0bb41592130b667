//! The vector file: devices, and for each command the host memory it
//! references before it runs, its SQE, and the CQE and memory after it
//! ran on the simulated board. Text, one record per line, so that the C
//! harness reads it with `getline` and a person can read it too:
//!
//! ```text
//! instcsd-vectors 1
//! device <page_size> <ram_pages> <vendor_id hex> <serial hex> <model hex> <firmware_rev hex>
//! cmd <qid> <sqe: 64 bytes hex>
//! pre <addr hex> <bytes hex>          (any number: memory before)
//! cqe <dw0> <dw1> <sq_id> <cid> <status field, phase bit dropped>   (hex)
//! post <addr hex> <bytes hex>         (any number: memory after)
//! end                                  (closes the device)
//! ```

use std::fmt::Write as _;

/// Identify strings of a device, as the fixed fields of Identify.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceLine {
    pub page_size: u32,
    pub ram_pages: u64,
    pub vendor_id: u16,
    pub serial: [u8; 20],
    pub model: [u8; 40],
    pub firmware_rev: [u8; 8],
}

/// The parts of a CQE the device owns (SQ head and phase are the
/// emulator's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqeFields {
    pub dw0: u32,
    pub dw1: u32,
    pub sq_id: u16,
    pub cid: u16,
    /// Status field (bits 15:1 of the CQE's last half-word).
    pub status: u16,
}

impl CqeFields {
    pub fn of(cqe: &proto::Cqe) -> Self {
        Self {
            dw0: cqe.dw0,
            dw1: cqe.dw1,
            sq_id: cqe.sq_id,
            cid: cqe.cid,
            status: cqe.status >> 1,
        }
    }
}

/// One command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub qid: u16,
    pub sqe: [u8; 64],
    pub pre: Vec<(u64, Vec<u8>)>,
    pub cqe: CqeFields,
    pub post: Vec<(u64, Vec<u8>)>,
}

/// One device and its commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub device: DeviceLine,
    pub records: Vec<Record>,
}

const MAGIC: &str = "instcsd-vectors 1";

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd hex length {}", s.len()));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

fn fixed<const N: usize>(s: &str) -> Result<[u8; N], String> {
    unhex(s)?
        .try_into()
        .map_err(|v: Vec<u8>| format!("{} bytes, expected {N}", v.len()))
}

/// The file's text.
pub fn to_text(sections: &[Section]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{MAGIC}");
    for sec in sections {
        let d = &sec.device;
        let _ = writeln!(
            s,
            "device {} {} {:x} {} {} {}",
            d.page_size,
            d.ram_pages,
            d.vendor_id,
            hex(&d.serial),
            hex(&d.model),
            hex(&d.firmware_rev)
        );
        for r in &sec.records {
            let _ = writeln!(s, "cmd {} {}", r.qid, hex(&r.sqe));
            for (a, b) in &r.pre {
                let _ = writeln!(s, "pre {a:x} {}", hex(b));
            }
            let c = r.cqe;
            let _ = writeln!(
                s,
                "cqe {:x} {:x} {:x} {:x} {:x}",
                c.dw0, c.dw1, c.sq_id, c.cid, c.status
            );
            for (a, b) in &r.post {
                let _ = writeln!(s, "post {a:x} {}", hex(b));
            }
        }
        let _ = writeln!(s, "end");
    }
    s
}

fn num<T: TryFrom<u64>>(s: Option<&str>, radix: u32) -> Result<T, String> {
    let s = s.ok_or("missing field")?;
    let v = u64::from_str_radix(s, radix).map_err(|e| format!("{s}: {e}"))?;
    T::try_from(v).map_err(|_| format!("{s} out of range"))
}

fn mem_line(mut w: std::str::SplitWhitespace<'_>) -> Result<(u64, Vec<u8>), String> {
    let addr = num(w.next(), 16)?;
    Ok((addr, unhex(w.next().ok_or("missing bytes")?)?))
}

/// Parses the file's text.
pub fn parse(text: &str) -> Result<Vec<Section>, String> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, l)) if l == MAGIC => {}
        _ => return Err("not a vector file".into()),
    }
    let mut sections: Vec<Section> = Vec::new();
    let mut open = false;
    for (n, line) in lines {
        let err = |e: String| format!("line {}: {e}", n + 1);
        let mut w = line.split_whitespace();
        let kind = w.next().unwrap_or("");
        let records = sections.last_mut().map(|s| &mut s.records);
        match (kind, open, records) {
            ("device", false, _) => {
                sections.push(Section {
                    device: DeviceLine {
                        page_size: num(w.next(), 10).map_err(err)?,
                        ram_pages: num(w.next(), 10).map_err(err)?,
                        vendor_id: num(w.next(), 16).map_err(err)?,
                        serial: fixed(w.next().unwrap_or("")).map_err(err)?,
                        model: fixed(w.next().unwrap_or("")).map_err(err)?,
                        firmware_rev: fixed(w.next().unwrap_or("")).map_err(err)?,
                    },
                    records: Vec::new(),
                });
                open = true;
            }
            ("cmd", true, Some(records)) => records.push(Record {
                qid: num(w.next(), 10).map_err(err)?,
                sqe: fixed(w.next().unwrap_or("")).map_err(err)?,
                pre: Vec::new(),
                cqe: CqeFields {
                    dw0: 0,
                    dw1: 0,
                    sq_id: 0,
                    cid: 0,
                    status: 0,
                },
                post: Vec::new(),
            }),
            ("pre", true, Some(records)) => {
                let r = records
                    .last_mut()
                    .ok_or_else(|| err("pre before cmd".into()))?;
                r.pre.push(mem_line(w).map_err(err)?);
            }
            ("cqe", true, Some(records)) => {
                let r = records
                    .last_mut()
                    .ok_or_else(|| err("cqe before cmd".into()))?;
                r.cqe = CqeFields {
                    dw0: num(w.next(), 16).map_err(err)?,
                    dw1: num(w.next(), 16).map_err(err)?,
                    sq_id: num(w.next(), 16).map_err(err)?,
                    cid: num(w.next(), 16).map_err(err)?,
                    status: num(w.next(), 16).map_err(err)?,
                };
            }
            ("post", true, Some(records)) => {
                let r = records
                    .last_mut()
                    .ok_or_else(|| err("post before cmd".into()))?;
                r.post.push(mem_line(w).map_err(err)?);
            }
            ("end", true, _) => open = false,
            _ => return Err(err(format!("unexpected {kind:?}"))),
        }
    }
    if open {
        return Err("last device not closed".into());
    }
    Ok(sections)
}
