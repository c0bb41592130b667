//! NandSim: commands, filters, queueing and timing together.

use std::collections::VecDeque;

use super::sweep::Command;
use super::*;
use ftl::{BlockAddr, Ppa};

const PAGE: usize = 4096;

/// A NAND with room for 16 queued commands per die (several commands on
/// one die in the tests below).
fn sim() -> NandSim {
    NandSim::new(
        Geometry::sim_default(PAGE as u32),
        NandTiming {
            queue_depth: 16,
            ..NandTiming::for_page_size(PAGE as u32)
        },
        &[],
    )
}

fn ppa(channel: u8, way: u8, block: u32, page: u32) -> Ppa {
    Ppa {
        channel,
        way,
        block,
        page,
    }
}

fn whole_page() -> RowFilter {
    RowFilter::first_rows(64, 64, 64)
}

fn poll(n: &mut NandSim) -> (NandDone, u64, Vec<u8>) {
    let mut out = vec![0u8; PAGE];
    let (done, t) = n.poll(&mut out).unwrap();
    out.truncate(done.bytes);
    (done, t, out)
}

#[test]
fn program_then_read_back_through_filter() {
    let mut n = sim();
    let data: Vec<u8> = (0..PAGE).map(|i| (i / 64) as u8).collect();
    n.submit(
        0,
        1,
        NandCmd::Program {
            ppa: ppa(0, 0, 0, 0),
            data: &data,
        },
    )
    .unwrap();
    let mut f = RowFilter::none(64, 64);
    f.keep(3);
    f.keep(10);
    f.keep_bytes = 8;
    n.submit(
        0,
        2,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 0),
            filter: f,
        },
    )
    .unwrap();
    let (d1, t1, _) = poll(&mut n);
    assert_eq!((d1.tag, d1.status), (1, NandStatus::Ok));
    let (d2, t2, out) = poll(&mut n);
    assert_eq!((d2.tag, d2.status, d2.bytes), (2, NandStatus::Ok, 16));
    assert_eq!(out, [[3u8; 8], [10u8; 8]].concat());
    assert!(t2 > t1, "the read waits for the program on its die");
    assert!(matches!(n.poll(&mut [0; PAGE]), Err(nb::Error::WouldBlock)));
}

#[test]
fn unwritten_pages_read_ff_and_erase_clears() {
    let mut n = sim();
    n.submit(
        0,
        0,
        NandCmd::Read {
            ppa: ppa(3, 1, 5, 7),
            filter: whole_page(),
        },
    )
    .unwrap();
    let (_, _, out) = poll(&mut n);
    assert_eq!(out, vec![0xFF; PAGE]);
    n.submit(
        0,
        1,
        NandCmd::Program {
            ppa: ppa(3, 1, 5, 0),
            data: &[0; PAGE],
        },
    )
    .unwrap();
    n.submit(
        0,
        2,
        NandCmd::Erase {
            block: BlockAddr {
                channel: 3,
                way: 1,
                block: 5,
            },
        },
    )
    .unwrap();
    n.submit(
        0,
        3,
        NandCmd::Read {
            ppa: ppa(3, 1, 5, 0),
            filter: whole_page(),
        },
    )
    .unwrap();
    let tags: Vec<u32> = (0..3).map(|_| poll(&mut n).0.tag).collect();
    assert_eq!(tags, [1, 2, 3]);
    n.submit(
        0,
        4,
        NandCmd::Read {
            ppa: ppa(3, 1, 5, 0),
            filter: whole_page(),
        },
    )
    .unwrap();
    assert_eq!(poll(&mut n).2, vec![0xFF; PAGE]);
    let c = n.counters();
    assert_eq!(
        (c.pages_read, c.pages_programmed, c.blocks_erased),
        (3, 1, 1)
    );
    assert_eq!(c.reads_per_channel[3], 3);
}

#[test]
fn misuse_is_an_error_not_a_panic() {
    let mut n = sim();
    let e = |r: nb::Result<(), NandError>| match r {
        Err(nb::Error::Other(e)) => e,
        other => panic!("{other:?}"),
    };
    let out_of_range = ppa(8, 0, 0, 0);
    assert!(matches!(
        e(n.submit(
            0,
            0,
            NandCmd::Read {
                ppa: out_of_range,
                filter: whole_page()
            }
        )),
        NandError::OutOfRange(_)
    ));
    assert!(matches!(
        e(n.submit(
            0,
            0,
            NandCmd::Program {
                ppa: ppa(0, 0, 0, 0),
                data: &[0; 10]
            }
        )),
        NandError::DataLength { .. }
    ));
    n.submit(
        0,
        0,
        NandCmd::Program {
            ppa: ppa(0, 0, 0, 1),
            data: &[0; PAGE],
        },
    )
    .unwrap();
    assert!(matches!(
        e(n.submit(
            0,
            0,
            NandCmd::Program {
                ppa: ppa(0, 0, 0, 0),
                data: &[0; PAGE]
            }
        )),
        NandError::OutOfOrder { page: 0, next: 2 }
    ));
    let too_big = RowFilter::first_rows(128, 64, 1);
    assert!(matches!(
        e(n.submit(
            0,
            0,
            NandCmd::Read {
                ppa: ppa(0, 0, 0, 1),
                filter: too_big
            }
        )),
        NandError::BadFilter(_)
    ));
    assert_eq!(n.in_flight(), 1);
    assert_eq!(poll(&mut n).0.tag, 0);
    // A poll buffer too small keeps the completion queued.
    n.submit(
        0,
        9,
        NandCmd::Read {
            ppa: ppa(1, 0, 0, 1),
            filter: whole_page(),
        },
    )
    .unwrap();
    assert!(matches!(
        n.poll(&mut [0; 8]),
        Err(nb::Error::Other(NandError::BufferTooSmall { .. }))
    ));
    assert_eq!(poll(&mut n).0.tag, 9);
}

#[test]
fn die_queue_depth_back_pressure() {
    let mut n = sim();
    let depth = n.timing().queue_depth;
    for i in 0..depth {
        n.submit(
            0,
            i as u32,
            NandCmd::Read {
                ppa: ppa(0, 0, 0, 0),
                filter: whole_page(),
            },
        )
        .unwrap();
    }
    let full = n.submit(
        0,
        99,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 0),
            filter: whole_page(),
        },
    );
    assert!(matches!(full, Err(nb::Error::WouldBlock)));
    // Another die is not affected.
    n.submit(
        0,
        100,
        NandCmd::Read {
            ppa: ppa(0, 1, 0, 0),
            filter: whole_page(),
        },
    )
    .unwrap();
    // The other die's page needs no cache register move, so it may come
    // back first; the full die takes a command once one of its own is done.
    while poll(&mut n).0.tag == 100 {}
    n.submit(
        0,
        99,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 0),
            filter: whole_page(),
        },
    )
    .unwrap();
}

#[test]
fn reads_on_two_channels_overlap_on_one_die_serialize() {
    let t = NandTiming::for_page_size(PAGE as u32);
    let one = t.t_read_ns + t.bus_ns(PAGE);
    let mut n = sim();
    n.submit(
        0,
        0,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 0),
            filter: whole_page(),
        },
    )
    .unwrap();
    n.submit(
        0,
        1,
        NandCmd::Read {
            ppa: ppa(1, 0, 0, 0),
            filter: whole_page(),
        },
    )
    .unwrap();
    assert_eq!(poll(&mut n).1, one);
    assert_eq!(poll(&mut n).1, one);

    let mut n = sim();
    n.submit(
        0,
        0,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 0),
            filter: whole_page(),
        },
    )
    .unwrap();
    n.submit(
        0,
        1,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 1),
            filter: whole_page(),
        },
    )
    .unwrap();
    assert_eq!(poll(&mut n).1, t.t_read_ns + t.t_cache_ns + t.bus_ns(PAGE));
    let second = poll(&mut n).1;
    assert_eq!(
        second,
        2 * t.t_read_ns + t.t_cache_ns + t.bus_ns(PAGE),
        "cache read: the second tR starts once the first page is in the cache register"
    );
    assert!(second >= 2 * t.t_read_ns);
}

#[test]
fn bus_is_paid_per_kept_byte_array_per_page() {
    let t = NandTiming::for_page_size(PAGE as u32);
    let mut n = sim();
    let quarter = RowFilter::first_rows(64, 64, 16);
    n.submit(
        0,
        0,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 0),
            filter: quarter,
        },
    )
    .unwrap();
    n.submit(
        0,
        1,
        NandCmd::Read {
            ppa: ppa(1, 0, 0, 0),
            filter: RowFilter::none(64, 64),
        },
    )
    .unwrap();
    let (d, t0, _) = poll(&mut n);
    assert_eq!(d.bytes, 0);
    assert_eq!(
        t0,
        t.t_read_ns + t.cmd_overhead_ns,
        "nothing kept: overhead only"
    );
    let (d, t1, _) = poll(&mut n);
    assert_eq!(d.bytes, PAGE / 4);
    assert_eq!(t1, t.t_read_ns + t.bus_ns(PAGE / 4));
    let c = n.counters();
    assert_eq!(c.bus_bytes, (PAGE / 4) as u64);
    assert_eq!(
        c.array_busy_ns,
        2 * t.t_read_ns,
        "tR per page whatever the filter"
    );
    assert_eq!(c.bus_busy_ns, t.bus_ns(0) + t.bus_ns(PAGE / 4));
}

#[test]
fn injected_uncorrectable_read_carries_no_data() {
    let mut n = sim();
    n.array_mut().inject_uncorrectable(ppa(2, 2, 2, 2));
    n.submit(
        0,
        5,
        NandCmd::Read {
            ppa: ppa(2, 2, 2, 2),
            filter: whole_page(),
        },
    )
    .unwrap();
    let (d, _, _) = poll(&mut n);
    assert_eq!((d.status, d.bytes), (NandStatus::Uncorrectable, 0));
    assert_eq!(n.counters().uncorrectable_reads, 1);
}

/// A seeded workload over 8 channels × 4 ways, one queue per die: 2000
/// reads of whole and filtered pages (64, 16 or 4 of 64 rows), one
/// command in ten a program.
fn workload(seed: u64) -> Vec<VecDeque<Command>> {
    let mut rng = attention::testdata::SplitMix64::new(seed);
    let mut next_page = [0u32; 32];
    let mut queues = vec![VecDeque::new(); 32];
    for _ in 0..2000 {
        let (ch, way) = (rng.below(8) as u8, rng.below(4) as u8);
        let die = usize::from(way) * 8 + usize::from(ch);
        queues[die].push_back(if rng.below(10) == 0 {
            next_page[die] += 1;
            Command::Program {
                ppa: ppa(ch, way, 1, next_page[die] - 1),
            }
        } else {
            let rows = [64, 16, 4][rng.below(3) as usize];
            Command::Read {
                ppa: ppa(ch, way, 0, rng.below(64) as u32),
                filter: RowFilter::first_rows(64, 64, rows),
            }
        });
    }
    queues
}

/// Virtual ns of `queues` with `depth` commands per die.
fn run(queues: &[VecDeque<Command>], depth: usize, cache_read: bool) -> u64 {
    let timing = NandTiming {
        queue_depth: depth,
        cache_read,
        ..NandTiming::for_page_size(PAGE as u32)
    };
    let n = NandSim::new(Geometry::sim_default(PAGE as u32), timing, &[]);
    sweep::run(n, queues.to_vec()).unwrap()
}

#[test]
fn full_page_reads_meet_the_array_bound_when_the_bus_keeps_up() {
    // 4 KiB, 4 ways: 4 × 3.1 µs of bus per 36 µs tR, so a deep queue with
    // cache read keeps every array busy.
    let t = NandTiming::for_page_size(PAGE as u32);
    let ns = sweep::full_page_reads(Geometry::sim_default(PAGE as u32), t, 16).unwrap();
    let bound = 16 * t.t_read_ns;
    assert!(ns >= bound && ns < bound + bound / 10, "{ns} vs {bound}");
}

#[test]
fn a_deeper_queue_is_never_slower() {
    for seed in [1, 2, 3] {
        let ops = workload(seed);
        for cache_read in [false, true] {
            let times: Vec<u64> = [1, 2, 4, 8, 16, 32]
                .iter()
                .map(|&d| run(&ops, d, cache_read))
                .collect();
            assert!(
                times.windows(2).all(|w| w[1] <= w[0]),
                "seed {seed}, cache read {cache_read}: {times:?}"
            );
            if cache_read {
                // A second queued read lets the array overlap the bus.
                assert!(times[1] < times[0], "depth pays: {times:?}");
            }
        }
    }
}

#[test]
fn cache_read_is_never_slower_on_the_workload() {
    let ops = workload(4);
    for depth in [2, 8, 32] {
        assert!(
            run(&ops, depth, true) <= run(&ops, depth, false),
            "depth {depth}"
        );
    }
}

#[test]
fn a_slow_channel_stretches_its_commands() {
    let t = NandTiming::for_page_size(PAGE as u32);
    let mut n = sim();
    n.set_faults(NandFaults {
        slow_channel: Some((1, 3)),
        ..NandFaults::default()
    });
    for (tag, ch) in [(0, 1), (1, 0)] {
        n.submit(
            0,
            tag,
            NandCmd::Read {
                ppa: ppa(ch, 0, 0, 0),
                filter: whole_page(),
            },
        )
        .unwrap();
    }
    let one = t.t_read_ns + t.bus_ns(PAGE);
    assert_eq!(poll(&mut n).1, one);
    assert_eq!(poll(&mut n).1, 3 * one);
    assert_eq!(n.counters().array_busy_ns, 4 * t.t_read_ns);
}

/// A read queued before an erase of its block hands back the data the
/// page held (the die reads before it erases), although the erase is
/// submitted, and takes effect on the array, before the read completes;
/// a read queued after the erase sees an erased page.
#[test]
fn a_read_in_flight_keeps_its_page_through_an_erase() {
    let mut n = sim();
    let data: Vec<u8> = (0..PAGE).map(|i| (i % 251) as u8).collect();
    let at = ppa(1, 2, 3, 0);
    n.submit(
        0,
        1,
        NandCmd::Program {
            ppa: at,
            data: &data,
        },
    )
    .unwrap();
    assert_eq!(poll(&mut n).0.status, NandStatus::Ok);
    let read = |n: &mut NandSim, tag| {
        n.submit(
            0,
            tag,
            NandCmd::Read {
                ppa: at,
                filter: whole_page(),
            },
        )
        .unwrap()
    };
    read(&mut n, 2);
    n.submit(0, 3, NandCmd::Erase { block: at.block() })
        .unwrap();
    read(&mut n, 4);
    let mut got = Vec::new();
    for _ in 0..3 {
        let (done, _, out) = poll(&mut n);
        got.push((done.tag, done.status, out));
    }
    got.sort_by_key(|g| g.0);
    assert_eq!(got[0], (2, NandStatus::Ok, data));
    assert_eq!((got[1].0, got[1].1), (3, NandStatus::Ok));
    assert_eq!(got[2], (4, NandStatus::Ok, vec![0xFF; PAGE]));
}

/// `poll_done` hands back only what has finished by the clock it is
/// given, and asking changes nothing: reads submitted after a `poll_done`
/// that found nothing finish exactly when they do without the question.
#[test]
fn poll_done_takes_only_finished_reads_and_decides_nothing_early() {
    let data = vec![7u8; PAGE];
    // Two pages on dies of one channel, so their transfers share a bus.
    let at = [ppa(2, 0, 1, 0), ppa(2, 1, 1, 0)];
    let read = |n: &mut NandSim, now, tag, p| {
        n.submit(
            now,
            tag,
            NandCmd::Read {
                ppa: p,
                filter: whole_page(),
            },
        )
        .unwrap()
    };
    let run = |ask: bool| {
        let mut n = sim();
        for (i, &p) in at.iter().enumerate() {
            n.submit(
                0,
                10 + i as u32,
                NandCmd::Program {
                    ppa: p,
                    data: &data,
                },
            )
            .unwrap();
        }
        let mut t0 = 0;
        for _ in 0..2 {
            t0 = t0.max(poll(&mut n).1);
        }
        read(&mut n, t0, 1, at[0]);
        let mut buf = vec![0u8; PAGE];
        let later = t0 + 1_000;
        if ask {
            // Nothing has finished 1 µs after the read went out.
            assert!(matches!(
                n.poll_done(later, &mut buf),
                Err(nb::Error::WouldBlock)
            ));
        }
        read(&mut n, later, 2, at[1]);
        let (d1, f1, _) = poll(&mut n);
        let (d2, f2, _) = poll(&mut n);
        (d1.tag, f1, d2.tag, f2)
    };
    assert_eq!(run(true), run(false));
    // And a finished read is handed back by `poll_done` at its time (a
    // twin of the drive, polled, says when that is).
    let written_then_read = || {
        let mut n = sim();
        n.submit(
            0,
            1,
            NandCmd::Program {
                ppa: at[0],
                data: &data,
            },
        )
        .unwrap();
        let (_, t0, _) = poll(&mut n);
        read(&mut n, t0, 2, at[0]);
        n
    };
    let (mut n, mut probe) = (written_then_read(), written_then_read());
    let (_, finish, _) = poll(&mut probe);
    let mut buf = vec![0u8; PAGE];
    assert!(matches!(
        n.poll_done(finish - 1, &mut buf),
        Err(nb::Error::WouldBlock)
    ));
    let (done, t) = n.poll_done(finish, &mut buf).unwrap();
    assert_eq!(
        (done.tag, t, &buf[..], n.in_flight()),
        (2, finish, &data[..], 0)
    );
}

/// A read of an erased page queued before a program of that page hands
/// back 0xFF, not the data programmed after it.
#[test]
fn a_read_in_flight_of_an_erased_page_misses_a_later_program() {
    let mut n = sim();
    let at = ppa(3, 1, 2, 0);
    n.submit(
        0,
        1,
        NandCmd::Read {
            ppa: at,
            filter: whole_page(),
        },
    )
    .unwrap();
    let data = vec![0x5Au8; PAGE];
    n.submit(
        0,
        2,
        NandCmd::Program {
            ppa: at,
            data: &data,
        },
    )
    .unwrap();
    let mut got = [poll(&mut n), poll(&mut n)];
    got.sort_by_key(|g| g.0.tag);
    assert_eq!(
        (got[0].0.status, &got[0].2[..]),
        (NandStatus::Ok, &[0xFFu8; PAGE][..])
    );
    assert_eq!(got[1].0.status, NandStatus::Ok);
}

#[test]
fn after_a_power_cut_nothing_completes_and_the_torn_page_does_not_read() {
    let mut n = sim();
    let page = vec![5u8; PAGE];
    n.submit(
        0,
        1,
        NandCmd::Program {
            ppa: ppa(0, 0, 0, 0),
            data: &page,
        },
    )
    .unwrap();
    poll(&mut n);
    n.cut_power_after(1);
    // The last command before the cut is accepted and torn...
    n.submit(
        0,
        2,
        NandCmd::Program {
            ppa: ppa(0, 0, 0, 1),
            data: &page,
        },
    )
    .unwrap();
    assert!(n.power_lost());
    // ...but its completion never reaches the firmware, nor anything later.
    let mut out = vec![0u8; PAGE];
    assert!(matches!(
        n.poll(&mut out),
        Err(nb::Error::Other(NandError::PowerLost))
    ));
    assert!(matches!(
        n.submit(
            0,
            3,
            NandCmd::Erase {
                block: ppa(0, 0, 1, 0).block()
            }
        ),
        Err(nb::Error::Other(NandError::PowerLost))
    ));
    n.restore_power();
    assert_eq!(n.in_flight(), 0);
    n.submit(
        0,
        4,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 1),
            filter: whole_page(),
        },
    )
    .unwrap();
    assert_eq!(poll(&mut n).0.status, NandStatus::Uncorrectable);
    n.submit(
        0,
        5,
        NandCmd::Read {
            ppa: ppa(0, 0, 0, 0),
            filter: whole_page(),
        },
    )
    .unwrap();
    let (done, _, data) = poll(&mut n);
    assert_eq!((done.status, data[0]), (NandStatus::Ok, 5));
}
