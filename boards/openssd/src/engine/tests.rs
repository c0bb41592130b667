//! The engine driver against a model of the slave's registers, and the
//! board engine against the engine model.

use std::vec;
use std::vec::Vec;

use engine_regs::{bit, reg};
use firmware::hal::{Engine, LogitJob, RowFilter, SoftEngine};

use super::*;
use crate::fake::{Access, Plain, Recorder, RegisterModel};

/// The slave as far as the driver can tell: ID, VERSION, CONFIG, a
/// scripted STATUS sequence (the last value repeats), plain RW registers,
/// and the top-k unit's registers over the engine model's selection
/// (`hdl`'s tests run the driver against the real unit).
struct Slave {
    id: u32,
    version: u32,
    config: u32,
    status: Vec<u32>,
    plain: Plain,
    topk: TopKRegs,
}

/// The top-k registers' state in [`Slave`].
#[derive(Default)]
struct TopKRegs {
    k: u32,
    key_lo: u32,
    keys: Vec<u64>,
    result: Vec<u32>,
    rptr: usize,
    done: bool,
    /// Added to TOPK_COUNT (a faulty unit).
    count_skew: u32,
}

impl Slave {
    /// 4 channels, 2 kernels, 8 lanes, 32K top-k keys: the synthesized
    /// engine.
    fn synthesized() -> Self {
        Self {
            id: engine_regs::ID,
            version: engine_regs::VERSION,
            config: 32768 << 16 | 8 << 12 | 2 << 8 | 4,
            status: vec![bit::IDLE_VALID],
            plain: Plain::default(),
            topk: TopKRegs::default(),
        }
    }
}

impl RegisterModel for Slave {
    fn read(&mut self, offset: usize) -> u32 {
        match offset as u32 {
            reg::ID => self.id,
            reg::VERSION => self.version,
            reg::CONFIG => self.config,
            reg::STATUS => {
                let s = if self.status.len() > 1 {
                    self.status.remove(0)
                } else {
                    self.status[0]
                };
                s | if self.topk.done { bit::TOPK_DONE } else { 0 }
            }
            reg::TOPK_COUNT => self.topk.result.len() as u32 + self.topk.count_skew,
            reg::TOPK_RESULT => {
                let r = self.topk.result.get(self.topk.rptr).copied().unwrap_or(0);
                self.topk.rptr += 1;
                r
            }
            _ => self.plain.read(offset),
        }
    }

    fn write(&mut self, offset: usize, value: u32) {
        let t = &mut self.topk;
        match offset as u32 {
            reg::ARGTOPK_K => t.k = value & 0xFFFF,
            reg::TOPK_KEY_LO => t.key_lo = value,
            reg::TOPK_KEY_HI => t.keys.push(u64::from(value) << 32 | u64::from(t.key_lo)),
            reg::TOPK_RPTR => t.rptr = value as usize,
            reg::CTRL if value & bit::TOPK_START != 0 => {
                t.keys.clear();
                t.result.clear();
                t.rptr = 0;
                t.done = false;
            }
            reg::CTRL if value & bit::TOPK_FLUSH != 0 => {
                SoftEngine::default().argtopk(&t.keys, t.k as usize, &mut t.result);
                t.done = true;
            }
            _ => {}
        }
        self.plain.write(offset, value);
    }
}

fn engine(slave: Slave) -> HwEngine<Recorder<Slave>> {
    let mut e = HwEngine::probe(Recorder::new(slave))
        .expect("probe")
        .with_spins(50);
    e.regs_mut().clear_log();
    e
}

fn writes(e: &mut HwEngine<Recorder<Slave>>) -> Vec<(u32, u32)> {
    e.regs_mut()
        .writes()
        .into_iter()
        .map(|(o, v)| (o as u32, v))
        .collect()
}

#[test]
fn probe_reads_the_instance_from_config() {
    let e = engine(Slave::synthesized());
    assert_eq!(
        e.config(),
        EngineConfig {
            channels: 4,
            kernels: 2,
            lanes: 8,
            topk_keys: 32768
        }
    );
}

#[test]
fn probe_refuses_what_is_not_this_engine() {
    let cases = [
        (
            Slave {
                id: 0,
                ..Slave::synthesized()
            },
            EngineError::NotAnEngine { id: 0 },
        ),
        (
            Slave {
                version: 0x0002_0000,
                ..Slave::synthesized()
            },
            EngineError::Version {
                version: 0x0002_0000,
            },
        ),
        (
            Slave {
                config: 64 << 16 | 3 << 8 | 4,
                ..Slave::synthesized()
            },
            EngineError::Config {
                config: 64 << 16 | 3 << 8 | 4,
            },
        ),
    ];
    for (slave, want) in cases {
        assert_eq!(HwEngine::probe(Recorder::new(slave)).err(), Some(want));
    }
}

#[test]
fn a_kernel_job_is_written_to_its_kernels_registers() {
    let mut e = engine(Slave::synthesized());
    let job = KernelJob {
        d: 64,
        s: 25,
        scale: 0x2000,
    };
    e.program_kernel(1, job).expect("program");
    assert_eq!(
        writes(&mut e),
        [
            (reg::k_d(1), 64),
            (reg::k_s(1), 25),
            (reg::k_scale(1), 0x2000)
        ]
    );
    for (k, job, err) in [
        (2, job, EngineError::NoSuchKernel(2)),
        (0, KernelJob { d: 60, ..job }, EngineError::BadD(60)),
        (0, KernelJob { s: 0, ..job }, EngineError::BadS(0)),
        (0, KernelJob { s: 8193, ..job }, EngineError::BadS(8193)),
    ] {
        assert_eq!(e.program_kernel(k, job), Err(err));
    }
    assert!(writes(&mut e).len() == 3, "refused jobs write nothing");
}

#[test]
fn a_filter_becomes_geometry_in_elements_then_low_high_mask_halves() {
    let mut e = engine(Slave::synthesized());
    let mut f = RowFilter::none(200, 128);
    f.keep_bytes = 96;
    for row in [0, 33, 64, 130, 199] {
        f.keep(row);
    }
    e.load_filter(2, &f).expect("load");
    assert_eq!(
        writes(&mut e),
        [
            (reg::rows(2), 200),
            (reg::row_len(2), 64),
            (reg::keep(2), 48),
            (reg::mask_lo(2, 0), 1),
            (reg::mask_hi(2, 0), 1 << 1),
            (reg::mask_lo(2, 1), 1),
            (reg::mask_hi(2, 1), 0),
            (reg::mask_lo(2, 2), 1 << 2),
            (reg::mask_hi(2, 2), 0),
            (reg::mask_lo(2, 3), 1 << 7),
            (reg::mask_hi(2, 3), 0),
        ]
    );
}

#[test]
fn filters_the_slave_would_refuse_are_refused_first() {
    let mut e = engine(Slave::synthesized());
    let partial_beats = RowFilter::first_rows(4, 24, 4);
    let mut odd_keep = RowFilter::first_rows(4, 32, 4);
    odd_keep.keep_bytes = 7;
    for f in [partial_beats, odd_keep] {
        assert!(matches!(
            e.load_filter(0, &f),
            Err(EngineError::BadFilter { .. })
        ));
    }
    assert_eq!(
        e.load_filter(4, &RowFilter::first_rows(4, 32, 4)),
        Err(EngineError::NoSuchChannel(4))
    );
    assert!(writes(&mut e).is_empty());
}

#[test]
fn start_routes_channels_and_refuses_a_busy_kernel() {
    let mut e = engine(Slave::synthesized());
    e.start(1, 0b1010).expect("start");
    assert_eq!(
        writes(&mut e),
        [(
            reg::CTRL,
            bit::k_start(1) | bit::channel(1) | bit::channel(3)
        )]
    );
    assert_eq!(e.start(0, 1 << 4), Err(EngineError::NoSuchChannel(4)));
    let mut busy = engine(Slave {
        status: vec![bit::k_busy(0)],
        ..Slave::synthesized()
    });
    assert_eq!(busy.start(0, 1), Err(EngineError::Busy(0)));
    assert!(writes(&mut busy).is_empty());
}

#[test]
fn start_topk_takes_what_argtopk_k_holds() {
    let mut e = engine(Slave::synthesized());
    e.start_topk(4096).expect("k = S/8 at 32K");
    assert_eq!(
        writes(&mut e),
        [(reg::ARGTOPK_K, 4096), (reg::CTRL, bit::TOPK_START)]
    );
    for k in [0, 0x1_0000] {
        assert_eq!(
            e.start_topk(k),
            Err(EngineError::TopKTooLarge { k, max: 0xFFFF })
        );
    }
}

#[test]
fn top_k_goes_through_the_key_and_result_registers() {
    let mut e = engine(Slave::synthesized());
    let keys: Vec<u64> = (0..300u64).map(|i| (i * 7919 % 301) << 33 | i).collect();
    let mut got = Vec::new();
    e.top_k(&keys, 40, &mut got).expect("top-k");
    let mut want = Vec::new();
    SoftEngine::default().argtopk(&keys, 40, &mut want);
    assert_eq!(got, want);
    let w = writes(&mut e);
    assert_eq!(w[..2], [(reg::ARGTOPK_K, 40), (reg::CTRL, bit::TOPK_START)]);
    assert_eq!(w[2], (reg::TOPK_KEY_LO, keys[0] as u32));
    assert_eq!(w[3], (reg::TOPK_KEY_HI, (keys[0] >> 32) as u32));
    assert_eq!(
        w.len(),
        2 + 2 * keys.len() + 2,
        "start, keys, flush, pointer"
    );
    assert_eq!(w[w.len() - 2], (reg::CTRL, bit::TOPK_FLUSH));
    // k ≥ n asks for n; k = 0 touches nothing.
    e.regs_mut().clear_log();
    e.top_k(&keys[..5], 9, &mut got).expect("all");
    assert_eq!(got, [0, 1, 2, 3, 4]);
    assert_eq!(writes(&mut e)[0], (reg::ARGTOPK_K, 5));
    e.regs_mut().clear_log();
    e.top_k(&keys, 0, &mut got).expect("none");
    assert!(got.is_empty() && writes(&mut e).is_empty());
}

#[test]
fn top_k_refuses_what_the_unit_cannot_do() {
    // More keys than CONFIG says the unit holds: refused, nothing written.
    let mut small = engine(Slave {
        config: 100 << 16 | 8 << 12 | 2 << 8 | 4,
        ..Slave::synthesized()
    });
    let keys = vec![1u64; 101];
    let mut out = vec![7];
    assert_eq!(
        small.top_k(&keys, 3, &mut out),
        Err(EngineError::TooManyKeys { n: 101, max: 100 })
    );
    assert_eq!(out, [7]);
    assert!(writes(&mut small).is_empty());
    // A 1.0 engine has no key registers.
    let old = engine(Slave {
        version: 0x0001_0000,
        config: 64 << 16 | 8 << 12 | 2 << 8 | 4,
        ..Slave::synthesized()
    });
    assert_eq!(old.config().topk_keys, 0);
    // A unit that reports a wrong count is a hardware error.
    let mut bad = engine(Slave {
        topk: TopKRegs {
            count_skew: 1,
            ..TopKRegs::default()
        },
        ..Slave::synthesized()
    });
    assert_eq!(
        bad.top_k(&keys, 3, &mut out),
        Err(EngineError::TopKCount { count: 4, want: 3 })
    );
}

#[test]
fn wait_polls_until_done_and_reports_err_and_timeouts() {
    let mut e = engine(Slave {
        status: vec![
            bit::k_busy(0),
            bit::k_busy(0),
            bit::k_done(0) | bit::IDLE_VALID,
        ],
        ..Slave::synthesized()
    });
    assert_eq!(e.wait(bit::k_done(0)), Ok(bit::k_done(0) | bit::IDLE_VALID));
    let reads = e
        .regs_mut()
        .log
        .iter()
        .filter(|a| matches!(a, Access::Read(o, _) if *o == reg::STATUS as usize))
        .count();
    assert_eq!(reads, 3);
    let mut err = engine(Slave {
        status: vec![bit::ERR],
        ..Slave::synthesized()
    });
    assert_eq!(
        err.wait(bit::k_done(0)),
        Err(EngineError::Hardware { status: bit::ERR })
    );
    let mut stuck = engine(Slave {
        status: vec![bit::k_busy(1)],
        ..Slave::synthesized()
    });
    assert_eq!(
        stuck.wait(bit::k_done(1)),
        Err(EngineError::Timeout {
            bits: bit::k_done(1)
        })
    );
}

#[test]
fn idle_kernel_decodes_status() {
    let mut e = engine(Slave {
        status: vec![bit::IDLE_VALID | bit::IDLE_KERNEL, 0],
        ..Slave::synthesized()
    });
    assert_eq!(e.idle_kernel(), Some(1));
    assert_eq!(e.idle_kernel(), None);
}

#[test]
fn the_board_engine_computes_what_the_model_computes() {
    let mut board = BoardEngine::probe(Recorder::new(Slave::synthesized()));
    assert!(board.hardware().is_some());
    assert_eq!(board.fallback(), Fallback::NoStreamPath);
    let mut soft = SoftEngine::default();
    let (w, n) = (16usize, 5usize);
    let queries: Vec<i32> = (0..2 * w as i32).map(|i| (i - 16) * 1000).collect();
    let scales = [1 << 14, 3 << 13];
    let rows: Vec<u16> = (0..(n * w) as u16).map(|i| 0x3C00 ^ (i * 37)).collect();
    let mut out_board = vec![0i32; 2 * n];
    let mut out_soft = vec![0i32; 2 * n];
    for (e, out) in [
        (&mut board as &mut dyn Engine, &mut out_board),
        (&mut soft as &mut dyn Engine, &mut out_soft),
    ] {
        e.logits(LogitJob {
            queries: &queries,
            scales: &scales,
            rows: &rows,
            width: w,
            out,
            out_stride: n,
            out_offset: 0,
        });
    }
    assert_eq!(out_board, out_soft);
    assert_eq!(board.work(), soft.work, "the same work is counted");
    // The top-k runs on the unit (here the slave model), with every k.
    let keys: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % 1009).collect();
    for k in [1, 10, 125, 999, 1000, 4000] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        board.argtopk(&keys, k, &mut a);
        soft.argtopk(&keys, k, &mut b);
        assert_eq!(a, b, "k = {k}");
    }
    let c = board.topk_counts();
    assert_eq!((c.hardware, c.software, c.errors), (6, 0, 0));
}

#[test]
fn the_board_engine_falls_back_to_software_for_the_top_k() {
    let keys: Vec<u64> = (0..200u64).map(|i| i % 13).collect();
    let mut want = Vec::new();
    SoftEngine::default().argtopk(&keys, 20, &mut want);
    // A 1.0 engine, a unit too small, a faulty unit: the same indices.
    let slaves = [
        Slave {
            version: 0x0001_0000,
            ..Slave::synthesized()
        },
        Slave {
            config: 100 << 16 | 8 << 12 | 2 << 8 | 4,
            ..Slave::synthesized()
        },
        Slave {
            topk: TopKRegs {
                count_skew: 1,
                ..TopKRegs::default()
            },
            ..Slave::synthesized()
        },
    ];
    let mut counts = Vec::new();
    for slave in slaves {
        let mut board = BoardEngine::probe(Recorder::new(slave));
        let mut got = Vec::new();
        board.argtopk(&keys, 20, &mut got);
        assert_eq!(got, want);
        let c = board.topk_counts();
        counts.push((c.hardware, c.software, c.errors));
    }
    assert_eq!(counts, [(0, 1, 0), (0, 1, 0), (0, 0, 1)]);
}

#[test]
fn a_board_without_the_engine_still_computes() {
    let mut board = BoardEngine::probe(Recorder::new(Plain::default()));
    assert!(board.hardware().is_none());
    assert_eq!(
        board.fallback(),
        Fallback::NotPresent(EngineError::NotAnEngine { id: 0 })
    );
    let mut probs = [0u32; 3];
    board.softmax(&[0, 0, 0], &mut probs);
    assert!(probs.iter().all(|&p| p == probs[0] && p > 0));
}
