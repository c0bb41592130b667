//! The schedule alone: arbitration, cache read, die occupancy, causality.

use super::*;

const PAGE: usize = 4096;
const READ: Work = Work::Read { kept_bytes: PAGE };

fn timing(cache_read: bool) -> NandTiming {
    NandTiming {
        cache_read,
        ..NandTiming::for_page_size(PAGE as u32)
    }
}

fn timer(cache_read: bool) -> NandTimer {
    NandTimer::new(timing(cache_read), 8, 4)
}

/// Every completion, earliest first: `(id, finish)`. Checks on the way
/// that no event ran at or after the completion handed back.
fn drain(t: &mut NandTimer) -> Vec<(u64, u64)> {
    let mut v = Vec::new();
    while let Some((id, finish)) = t.next_done() {
        assert!(
            t.horizon < finish,
            "event at {} ran before completion at {finish}",
            t.horizon
        );
        t.take_done();
        v.push((id, finish));
    }
    v
}

fn finish_of(done: &[(u64, u64)], id: u64) -> u64 {
    done.iter().find(|d| d.0 == id).map(|d| d.1).unwrap()
}

#[test]
fn different_channels_overlap_same_die_serializes() {
    let t = timing(false);
    let one = t.t_read_ns + t.bus_ns(PAGE);
    let mut a = timer(false);
    a.submit(0, 0, 0, 0, READ, 1);
    a.submit(0, 1, 1, 0, READ, 1);
    assert_eq!(drain(&mut a), [(0, one), (1, one)], "channels in parallel");
    let mut b = timer(false);
    b.submit(0, 0, 0, 0, READ, 1);
    b.submit(0, 1, 0, 0, READ, 1);
    assert_eq!(
        drain(&mut b),
        [(0, one), (1, 2 * one)],
        "same die serializes"
    );
}

#[test]
fn same_channel_other_die_shares_only_the_bus_lower_way_first() {
    let t = timing(true);
    let mut a = timer(true);
    // Way 1 is queued first; both pages are ready at tR: the tie goes to
    // the lower way.
    a.submit(0, 0, 0, 1, READ, 1);
    a.submit(0, 1, 0, 0, READ, 1);
    let first = t.t_read_ns + t.bus_ns(PAGE);
    assert_eq!(drain(&mut a), [(1, first), (0, first + t.bus_ns(PAGE))]);
}

#[test]
fn bus_goes_in_data_ready_order_not_submit_order() {
    let t = timing(false);
    let bus = t.bus_ns(PAGE);
    let mut a = timer(false);
    // Way 1: two reads; the second's page is ready at 2 tR + bus.
    a.submit(0, 0, 0, 1, READ, 1);
    a.submit(0, 1, 0, 1, READ, 1);
    // Way 0, queued last, is ready 1 µs earlier than way 1's second page,
    // while the bus is free.
    let late = t.t_read_ns + bus - 1_000;
    a.submit(late, 2, 0, 0, READ, 1);
    let done = drain(&mut a);
    let ready = late + t.t_read_ns;
    assert_eq!(finish_of(&done, 2), ready + bus, "granted when ready");
    assert_eq!(finish_of(&done, 1), ready + 2 * bus, "waits its turn");
}

#[test]
fn cache_read_overlaps_tr_with_the_previous_transfer() {
    // A slow bus makes the overlap plain: 4 KiB take 20.68 µs.
    let slow = |cache_read| NandTiming {
        bus_bytes_per_s: 200_000_000,
        ..timing(cache_read)
    };
    let (t_r, t_move, bus) = {
        let t = slow(true);
        (t.t_read_ns, t.t_cache_ns, t.bus_ns(PAGE))
    };
    let mut on = NandTimer::new(slow(true), 1, 1);
    let mut off = NandTimer::new(slow(false), 1, 1);
    for id in 0..3 {
        on.submit(0, id, 0, 0, READ, 1);
        off.submit(0, id, 0, 0, READ, 1);
    }
    // With it: each tR after the first starts once the previous page has
    // moved to the cache register; the last page leaves the data register.
    assert_eq!(
        drain(&mut on),
        [
            (0, t_r + t_move + bus),
            (1, 2 * t_r + 2 * t_move + bus),
            (2, 3 * t_r + 2 * t_move + bus),
        ]
    );
    // Without it: each tR waits for the previous page to cross.
    assert_eq!(
        drain(&mut off),
        [(0, t_r + bus), (1, 2 * (t_r + bus)), (2, 3 * (t_r + bus))]
    );
}

#[test]
fn cache_read_runs_the_array_ahead_of_a_busy_bus() {
    // A bus slower than the array: with cache read the die reads the next
    // page while the bus is busy; the bus rests only for each page's move
    // into the freed cache register (tRCBSY). Without it, every tR waits.
    let slow = |cache_read| NandTiming {
        bus_bytes_per_s: 50_000_000,
        ..timing(cache_read)
    };
    let t = slow(true);
    let bus = t.bus_ns(PAGE);
    assert!(bus > t.t_read_ns);
    let mut on = NandTimer::new(t, 1, 1);
    let mut off = NandTimer::new(slow(false), 1, 1);
    for id in 0..4 {
        on.submit(0, id, 0, 0, READ, 1);
        off.submit(0, id, 0, 0, READ, 1);
    }
    for (k, (&(_, with), &(_, without))) in drain(&mut on).iter().zip(&drain(&mut off)).enumerate()
    {
        let k = k as u64 + 1;
        assert_eq!(with, t.t_read_ns + k * (t.t_cache_ns + bus), "page {k}");
        assert_eq!(without, k * (t.t_read_ns + bus), "page {k}");
    }
}

#[test]
fn program_and_erase_occupy_the_die() {
    let t = NandTiming::for_page_size(16384);
    let mut a = NandTimer::new(t, 2, 1);
    a.submit(0, 0, 0, 0, Work::Program { page_bytes: 16384 }, 1);
    a.submit(0, 1, 0, 0, Work::Erase, 1);
    a.submit(0, 2, 0, 0, Work::Read { kept_bytes: 16384 }, 1);
    // A read queued before a program: the program waits for the page to
    // leave (no cache read across a program).
    a.submit(0, 3, 1, 0, Work::Read { kept_bytes: 16384 }, 1);
    a.submit(0, 4, 1, 0, Work::Program { page_bytes: 16384 }, 1);
    let done = drain(&mut a);
    let p = t.bus_ns(16384) + t.t_prog_ns;
    let e = p + t.t_erase_ns;
    assert_eq!(finish_of(&done, 0), p);
    assert_eq!(finish_of(&done, 1), e);
    assert_eq!(finish_of(&done, 2), e + t.t_read_ns + t.bus_ns(16384));
    let r = t.t_read_ns + t.bus_ns(16384);
    assert_eq!(finish_of(&done, 3), r);
    assert_eq!(finish_of(&done, 4), r + p);
    assert_eq!(
        a.array_busy_ns(),
        2 * t.t_prog_ns + t.t_erase_ns + 2 * t.t_read_ns
    );
    assert_eq!(a.bus_busy_ns(), 4 * t.bus_ns(16384));
}

#[test]
fn bus_is_charged_per_kept_byte() {
    let t = timing(true);
    let mut a = timer(true);
    a.submit(0, 0, 0, 0, Work::Read { kept_bytes: 512 }, 1);
    assert_eq!(drain(&mut a), [(0, t.t_read_ns + t.bus_ns(512))]);
    assert_eq!(a.bus_busy_ns(), t.bus_ns(512));
    assert_eq!(a.array_busy_ns(), t.t_read_ns);
}

#[test]
fn a_slow_channel_scales_every_stage() {
    let t = timing(true);
    let mut a = timer(true);
    a.submit(0, 0, 1, 0, READ, 3);
    a.submit(0, 1, 0, 0, READ, 3);
    a.submit(0, 2, 2, 0, READ, 1);
    let done = drain(&mut a);
    let one = t.t_read_ns + t.bus_ns(PAGE);
    assert_eq!(finish_of(&done, 0), 3 * one);
    assert_eq!(finish_of(&done, 2), one, "other channels keep their pace");
    assert_eq!(a.array_busy_ns(), 7 * t.t_read_ns);
}

/// A seeded mix over 2 channels × 4 ways: reads of several sizes, some
/// programs and an erase, submitted at rising times.
fn random_mix(cache_read: bool, seed: u64) -> NandTimer {
    let mut rng = attention::testdata::SplitMix64::new(seed);
    let mut a = NandTimer::new(timing(cache_read), 2, 4);
    let mut now = 0;
    for id in 0..300 {
        now += rng.below(8_000);
        let (ch, way) = (rng.below(2) as usize, rng.below(4) as usize);
        let work = match rng.below(20) {
            0 => Work::Program { page_bytes: PAGE },
            1 if id % 7 == 0 => Work::Erase,
            k => Work::Read {
                kept_bytes: [PAGE, PAGE / 4, 64][k as usize % 3],
            },
        };
        a.submit(now, id, ch, way, work, 1);
    }
    a
}

#[test]
fn the_bus_is_never_idle_while_a_request_waits() {
    for cache_read in [false, true] {
        let mut a = random_mix(cache_read, 11);
        let done = drain(&mut a);
        assert_eq!(done.len(), 300);
        for ch in 0..2 {
            let mut g: Vec<_> = a.grants.iter().filter(|g| g.0 == ch).copied().collect();
            g.sort_by_key(|g| g.2);
            for w in g.windows(2) {
                assert!(w[0].3 <= w[1].2, "transfers overlap: {w:?}");
            }
            for &(_, ready, start, _) in &g {
                // The bus is busy from the request's ready time to its grant.
                let mut cursor = ready;
                for &(_, _, s, e) in &g {
                    if s <= cursor && e > cursor {
                        cursor = e;
                    }
                }
                assert!(
                    cursor >= start,
                    "channel {ch}: idle at {cursor} while a request ready at {ready} waited until {start}"
                );
            }
        }
    }
}

#[test]
fn completions_come_back_in_time_order() {
    let mut a = random_mix(true, 5);
    let done = drain(&mut a);
    assert!(done.windows(2).all(|w| w[0].1 <= w[1].1));
}

#[test]
fn a_command_submitted_at_a_completion_still_competes_for_the_bus() {
    let t = timing(false);
    let bus = t.bus_ns(PAGE);
    let mut a = timer(false);
    // Way 1's page is ready at tR + 500 and way 2's at 2 tR + bus.
    a.submit(500, 0, 0, 1, READ, 1);
    a.submit(0, 1, 0, 2, READ, 1);
    a.submit(0, 2, 0, 2, READ, 1);
    // Way 2's first page: ready at tR, crosses first.
    assert_eq!(a.next_done(), Some((1, t.t_read_ns + bus)));
    a.take_done();
    let now = t.t_read_ns + bus;
    // Way 0 at `now`: ready at now + tR, as way 2's second page, queued
    // earlier; that grant was left undecided, so the lower way wins it.
    a.submit(now, 3, 0, 0, READ, 1);
    let done = drain(&mut a);
    assert_eq!(finish_of(&done, 3), now + t.t_read_ns + bus);
    assert_eq!(finish_of(&done, 2), 2 * t.t_read_ns + 2 * bus + bus);
}
