//! [`FlashArray`] against a model controller that keeps pages in memory
//! and answers through the DMA window as the hardware does.

use std::collections::{BTreeMap, BTreeSet};
use std::vec;
use std::vec::Vec;

use firmware::hal::{Nand, NandCmd, NandStatus, RowFilter};
use ftl::{BlockAddr, Geometry, Ppa};

use super::*;
use crate::fake::SharedMem;

const BUS: u64 = 0x4010_0000;
const PAGE: usize = 16384;

fn geo() -> Geometry {
    Geometry {
        channels: 2,
        ways: 2,
        blocks_per_die: 8,
        pages_per_block: 256,
        page_size: PAGE as u32,
    }
}

/// A NAND array behind a controller: pages by (channel, way, row), a
/// number of "busy" status reports before each die is ready.
struct Model {
    mem: SharedMem,
    pages: BTreeMap<(u8, u8, u32), Vec<u8>>,
    busy_reports: u32,
    busy_left: BTreeMap<(u8, u8), u32>,
    fail_next: BTreeSet<(u8, u8)>,
    fail_rows: BTreeSet<u32>,
    /// Status reports never get written.
    silent: bool,
    /// Channels that refuse commands this many more times.
    refuse: u32,
    log: Vec<(u8, u8, NscCmd)>,
}

impl Model {
    fn new(mem: SharedMem) -> Self {
        Self {
            mem,
            pages: BTreeMap::new(),
            busy_reports: 2,
            busy_left: BTreeMap::new(),
            fail_next: BTreeSet::new(),
            fail_rows: BTreeSet::new(),
            silent: false,
            refuse: 0,
            log: Vec::new(),
        }
    }

    fn at(&self, bus: u32) -> usize {
        self.mem
            .offset_of(u64::from(bus))
            .expect("address in the window")
    }
}

impl Nsc for Model {
    fn can_issue(&mut self, _channel: u8) -> bool {
        if self.refuse > 0 {
            self.refuse -= 1;
            return false;
        }
        true
    }

    fn issue(&mut self, ch: u8, way: u8, cmd: NscCmd) {
        self.log.push((ch, way, cmd));
        let die = (ch, way);
        match cmd {
            NscCmd::ReadTrigger { .. } => {
                self.busy_left.insert(die, self.busy_reports);
            }
            NscCmd::Program { row, data, .. } => {
                let page = self.mem.peek(self.at(data), PAGE);
                self.pages.insert((ch, way, row), page);
                self.busy_left.insert(die, self.busy_reports);
                if self.fail_rows.contains(&row) {
                    self.fail_next.insert(die);
                }
            }
            NscCmd::Erase { row } => {
                self.pages
                    .retain(|&(c, w, r), _| !(c == ch && w == way && r / 256 == row / 256));
                self.busy_left.insert(die, self.busy_reports);
                if self.fail_rows.contains(&row) {
                    self.fail_next.insert(die);
                }
            }
            NscCmd::Status { report } => {
                if self.silent {
                    return;
                }
                let left = self.busy_left.entry(die).or_insert(0);
                let status = if *left > 0 {
                    *left -= 1;
                    0x40
                } else if self.fail_next.remove(&die) {
                    0x61
                } else {
                    0x60
                };
                let at = self.at(report);
                self.mem.poke(at, &(status << 1 | 1u32).to_le_bytes());
            }
            NscCmd::ReadTransfer {
                row,
                data,
                error_info,
                completion,
                ..
            } => {
                let (w0, w1) = match self.pages.get(&(ch, way, row)) {
                    Some(p) => {
                        self.mem.poke(self.at(data), &p.clone());
                        (1u32 << 28, u32::MAX)
                    }
                    // An erased page does not decode.
                    None => (0, 0),
                };
                let e = self.at(error_info);
                self.mem.poke(e, &w0.to_le_bytes());
                self.mem.poke(e + 4, &w1.to_le_bytes());
                self.mem.poke(self.at(completion), &1u32.to_le_bytes());
            }
        }
    }

    fn row(&self, ppa: Ppa) -> u32 {
        ppa.block * 256 + ppa.page
    }
}

fn array() -> FlashArray<Model, SharedMem> {
    let mem = SharedMem::new(BUS, slots::window_bytes(4));
    FlashArray::new(Model::new(mem.clone()), mem, geo())
        .expect("array")
        .with_max_polls(1000)
}

fn ppa(channel: u8, way: u8, block: u32, page: u32) -> Ppa {
    Ppa {
        channel,
        way,
        block,
        page,
    }
}

fn page_pattern(seed: u8) -> Vec<u8> {
    (0..PAGE)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Polls until one command finishes.
fn wait(a: &mut FlashArray<Model, SharedMem>, out: &mut [u8]) -> Result<NandDone, FlashError> {
    for _ in 0..10_000 {
        match a.poll(out) {
            Ok(d) => return Ok(d),
            Err(nb::Error::Other(e)) => return Err(e),
            Err(nb::Error::WouldBlock) => {}
        }
    }
    panic!("nothing finished");
}

#[test]
fn a_programmed_page_reads_back_through_the_row_filter() {
    let mut a = array();
    let data = page_pattern(7);
    let p = ppa(1, 1, 3, 9);
    a.submit(
        1,
        NandCmd::Program {
            ppa: p,
            data: &data,
        },
    )
    .expect("program");
    let mut out = vec![0u8; PAGE];
    let done = wait(&mut a, &mut out).expect("done");
    assert_eq!((done.tag, done.status), (1, NandStatus::Ok));

    // 128 rows of 128 bytes; keep rows 2 and 100, 64 bytes of each.
    let mut f = RowFilter::none(128, 128);
    f.keep(2);
    f.keep(100);
    f.keep_bytes = 64;
    a.submit(2, NandCmd::Read { ppa: p, filter: f })
        .expect("read");
    let done = wait(&mut a, &mut out).expect("done");
    assert_eq!(
        (done.tag, done.status, done.bytes),
        (2, NandStatus::Ok, 128)
    );
    assert_eq!(&out[..64], &data[2 * 128..2 * 128 + 64]);
    assert_eq!(&out[64..128], &data[100 * 128..100 * 128 + 64]);
    assert_eq!(a.in_flight(), 0);
}

#[test]
fn a_read_triggers_waits_for_ready_then_transfers_into_its_die_slot() {
    let mut a = array();
    let p = ppa(0, 1, 2, 5);
    a.submit(
        1,
        NandCmd::Read {
            ppa: p,
            filter: RowFilter::first_rows(1, 16, 1),
        },
    )
    .expect("read");
    let mut out = vec![0u8; PAGE];
    let _ = wait(&mut a, &mut out);
    let die = geo().die_index(0, 1) as usize;
    let base = BUS as u32 + (die * slots::SLOT) as u32;
    let cmds: Vec<NscCmd> = a.nsc_mut().log.iter().map(|&(_, _, c)| c).collect();
    let row = 2 * 256 + 5;
    let report = NscCmd::Status {
        report: base + slots::REPORT as u32,
    };
    assert_eq!(
        cmds,
        [
            NscCmd::ReadTrigger { row },
            report,
            report,
            report,
            NscCmd::ReadTransfer {
                row,
                data: base,
                spare: base + slots::SPARE as u32,
                error_info: base + slots::ERROR_INFO as u32,
                completion: base + slots::COMPLETION as u32,
            },
        ]
    );
    assert!(a.nsc_mut().log.iter().all(|&(c, w, _)| (c, w) == (0, 1)));
}

#[test]
fn media_failures_are_statuses() {
    let mut a = array();
    let mut out = vec![0u8; PAGE];
    // Never programmed: the page does not decode.
    a.submit(
        1,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 0),
            filter: RowFilter::first_rows(4, 16, 4),
        },
    )
    .expect("read");
    let d = wait(&mut a, &mut out).expect("done");
    assert_eq!((d.status, d.bytes), (NandStatus::Uncorrectable, 0));

    a.nsc_mut().fail_rows.insert(256 + 1);
    let data = page_pattern(1);
    a.submit(
        2,
        NandCmd::Program {
            ppa: ppa(1, 0, 1, 1),
            data: &data,
        },
    )
    .expect("program");
    assert_eq!(
        wait(&mut a, &mut out).expect("done").status,
        NandStatus::ProgramFailed
    );

    a.nsc_mut().fail_rows.insert(4 * 256);
    a.submit(
        3,
        NandCmd::Erase {
            block: BlockAddr {
                channel: 1,
                way: 1,
                block: 4,
            },
        },
    )
    .expect("erase");
    assert_eq!(
        wait(&mut a, &mut out).expect("done").status,
        NandStatus::EraseFailed
    );
}

#[test]
fn erase_drops_the_blocks_pages() {
    let mut a = array();
    let mut out = vec![0u8; PAGE];
    let data = page_pattern(3);
    let p = ppa(0, 1, 6, 0);
    a.submit(
        1,
        NandCmd::Program {
            ppa: p,
            data: &data,
        },
    )
    .expect("program");
    wait(&mut a, &mut out).expect("done");
    a.submit(2, NandCmd::Erase { block: p.block() })
        .expect("erase");
    assert_eq!(wait(&mut a, &mut out).expect("done").status, NandStatus::Ok);
    let cmd = a
        .nsc_mut()
        .log
        .iter()
        .rev()
        .find(|(_, _, c)| matches!(c, NscCmd::Erase { .. }))
        .map(|&(_, _, c)| c);
    assert_eq!(cmd, Some(NscCmd::Erase { row: 6 * 256 }));
    a.submit(
        3,
        NandCmd::Read {
            ppa: p,
            filter: RowFilter::first_rows(1, 16, 1),
        },
    )
    .expect("read");
    assert_eq!(
        wait(&mut a, &mut out).expect("done").status,
        NandStatus::Uncorrectable
    );
}

#[test]
fn dies_work_in_parallel_and_queues_are_bounded() {
    let mut a = array().with_depth(2);
    let data = page_pattern(9);
    for (tag, (c, w)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
        a.submit(
            tag as u32,
            NandCmd::Program {
                ppa: ppa(c, w, 0, 0),
                data: &data,
            },
        )
        .expect("program");
    }
    let p = ppa(0, 0, 0, 1);
    a.submit(
        9,
        NandCmd::Program {
            ppa: p,
            data: &data,
        },
    )
    .expect("second on die 0");
    assert!(matches!(
        a.submit(
            10,
            NandCmd::Program {
                ppa: p,
                data: &data
            }
        ),
        Err(nb::Error::WouldBlock)
    ));
    assert_eq!(a.in_flight(), 5);
    let mut out = vec![0u8; PAGE];
    let mut tags: Vec<u32> = (0..5)
        .map(|_| wait(&mut a, &mut out).expect("done").tag)
        .collect();
    // The four first commands finish before die 0's second one.
    assert_eq!(tags.pop(), Some(9));
    tags.sort_unstable();
    assert_eq!(tags, [0, 1, 2, 3]);
    assert_eq!(a.in_flight(), 0);
}

#[test]
fn a_busy_channel_delays_but_does_not_lose_commands() {
    let mut a = array();
    a.nsc_mut().refuse = 5;
    let data = page_pattern(2);
    a.submit(
        4,
        NandCmd::Program {
            ppa: ppa(1, 1, 1, 1),
            data: &data,
        },
    )
    .expect("program");
    let mut out = vec![0u8; PAGE];
    assert_eq!(wait(&mut a, &mut out).expect("done").tag, 4);
}

#[test]
fn a_die_that_never_answers_times_out() {
    let mut a = array();
    a.nsc_mut().silent = true;
    a.submit(
        7,
        NandCmd::Erase {
            block: BlockAddr {
                channel: 0,
                way: 1,
                block: 2,
            },
        },
    )
    .expect("erase");
    let mut out = vec![0u8; PAGE];
    assert_eq!(
        wait(&mut a, &mut out),
        Err(FlashError::Timeout {
            channel: 0,
            way: 1,
            tag: 7
        })
    );
    assert_eq!(a.in_flight(), 0);
}

#[test]
fn misuse_is_refused_up_front() {
    let mut a = array();
    let data = page_pattern(0);
    let cases: [(NandCmd<'_>, FlashError); 4] = [
        (
            NandCmd::Program {
                ppa: ppa(2, 0, 0, 0),
                data: &data,
            },
            FlashError::BadAddress,
        ),
        (
            NandCmd::Program {
                ppa: ppa(0, 0, 0, 0),
                data: &data[..100],
            },
            FlashError::WrongLength { len: 100 },
        ),
        (
            NandCmd::Read {
                ppa: ppa(0, 0, 0, 0),
                filter: RowFilter::first_rows(2, 12, 2),
            },
            FlashError::BadFilter,
        ),
        (
            NandCmd::Erase {
                block: BlockAddr {
                    channel: 0,
                    way: 0,
                    block: 8,
                },
            },
            FlashError::BadAddress,
        ),
    ];
    for (cmd, err) in cases {
        assert_eq!(a.submit(0, cmd), Err(nb::Error::Other(err)));
    }
    assert_eq!(a.in_flight(), 0);
    // A poll buffer too small for a read's kept bytes.
    a.submit(
        1,
        NandCmd::Program {
            ppa: ppa(0, 0, 0, 0),
            data: &data,
        },
    )
    .expect("program");
    let mut big = vec![0u8; PAGE];
    wait(&mut a, &mut big).expect("done");
    a.submit(
        2,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 0),
            filter: RowFilter::first_rows(2, 64, 2),
        },
    )
    .expect("read");
    let mut small = [0u8; 100];
    assert_eq!(
        wait(&mut a, &mut small),
        Err(FlashError::BufferTooSmall { needed: 128 })
    );
    assert_eq!(wait(&mut a, &mut big).expect("then it is there").bytes, 128);
}

#[test]
fn the_window_must_hold_every_die() {
    let mem = SharedMem::new(BUS, slots::window_bytes(3));
    let e = FlashArray::new(Model::new(mem.clone()), mem, geo()).err();
    assert_eq!(
        e,
        Some(FlashError::WindowTooSmall {
            needed: slots::window_bytes(4),
            have: slots::window_bytes(3)
        })
    );
}
