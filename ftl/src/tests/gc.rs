//! Garbage collection and wear levelling against the reference model.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use super::api::cfg;
use super::model::{Ref, append, check_all};
use crate::testnand::TestNand;
use crate::{Ftl, GcPolicy, Geometry, StreamShape};

const SHAPE: StreamShape = StreamShape {
    head_dim: 64,
    dim_group: 4,
};

fn geo() -> Geometry {
    Geometry {
        channels: 2,
        ways: 1,
        blocks_per_die: 12,
        pages_per_block: 8,
        page_size: 4096,
    }
}

/// Blocks holding a page of `r`.
fn blocks_of(f: &Ftl, r: &Ref) -> usize {
    let pages = f.stream_pages(r.id).unwrap();
    pages
        .iter()
        .map(|p| p.block())
        .collect::<BTreeSet<_>>()
        .len()
}

/// A long-lived stream written between short ones, which then close:
/// its pages pin blocks that are otherwise dead. GC moves them together
/// and the blocks come back, the stream reading back unchanged.
fn pinned(policy: GcPolicy) -> (u64, usize, usize, u64, u64) {
    let mut f = Ftl::new(cfg(geo(), 64 << 20)).unwrap();
    let mut g = f.gc_config();
    g.policy = policy;
    g.low_free = 10;
    g.critical_free = 1;
    f.set_gc(g).unwrap();
    let mut nand = TestNand::new(geo());
    let mut long = Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, 1);
    let mut short: Vec<Ref> = (0..3)
        .map(|i| Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, 10 + i))
        .collect();
    for _ in 0..6 {
        append(&mut f, &mut long, 32).unwrap();
        for s in &mut short {
            append(&mut f, s, 32).unwrap();
        }
        nand.run(&mut f).unwrap();
    }
    for s in short.drain(..) {
        f.close_stream(s.id).unwrap();
    }
    nand.run(&mut f).unwrap();
    let refs = [long];
    check_all(&f, &nand, &refs, true);
    let (free0, spread0) = (f.stats().free_blocks, blocks_of(&f, &refs[0]));
    assert!(
        f.gc_wanted(),
        "pinned blocks and a starving die: GC has work"
    );
    let mut steps = 0;
    while f.gc_wanted() && steps < 50 {
        f.gc_step().unwrap();
        nand.run(&mut f).unwrap();
        check_all(&f, &nand, &refs, false);
        steps += 1;
    }
    let s = f.stats();
    (
        s.gc_pages_moved,
        spread0,
        blocks_of(&f, &refs[0]),
        free0,
        s.free_blocks,
    )
}

#[test]
fn a_long_lived_stream_pinning_blocks_is_relocated() {
    for policy in [GcPolicy::Greedy, GcPolicy::CostBenefit] {
        let (moved, before, after, free0, free1) = pinned(policy);
        assert!(moved > 0, "{policy:?}: pages moved");
        assert!(after < before, "{policy:?}: {before} blocks → {after}");
        assert!(free1 > free0, "{policy:?}: free blocks {free0} → {free1}");
    }
}

#[test]
fn urgent_gc_is_bounded_and_the_reserve_holds() {
    let mut f = Ftl::new(cfg(geo(), 64 << 20)).unwrap();
    let mut g = f.gc_config();
    g.max_victims = 2;
    g.critical_free = 3;
    g.low_free = 3;
    f.set_gc(g).unwrap();
    let mut nand = TestNand::new(geo());
    let mut refs: Vec<Ref> = (0..4)
        .map(|i| Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, i))
        .collect();
    // Fill until host writes are refused: the reserve stays free.
    'fill: for _ in 0..100 {
        for r in &mut refs {
            if append(&mut f, r, 32).is_err() {
                break 'fill;
            }
        }
        nand.run(&mut f).unwrap();
    }
    nand.run(&mut f).unwrap();
    for d in 0..geo().dies() {
        assert!(
            f.blocks.available_pages(d) >= 3 * 8 - 8,
            "die {d} kept its reserve"
        );
    }
    // Half the streams go; a host write that does not fit runs the
    // collector (at most 2 victims a call) until it fits, as the firmware
    // does before an append.
    let gone: Vec<Ref> = refs.drain(..2).collect();
    for r in gone {
        f.close_stream(r.id).unwrap();
    }
    nand.run(&mut f).unwrap();
    let mut calls = 0;
    for i in 0..refs.len() {
        loop {
            match append(&mut f, &mut refs[i], 32) {
                Ok(()) => break,
                Err(crate::FtlError::NoSpace) => {
                    let g = f.gc_urgent().unwrap();
                    assert!(g.victims <= 2);
                    assert!(g.victims > 0, "no victim left, yet half the data is dead");
                    calls += 1;
                    nand.run(&mut f).unwrap();
                }
                Err(e) => panic!("{e}"),
            }
        }
        nand.run(&mut f).unwrap();
        check_all(&f, &nand, &refs, false);
    }
    assert!(calls > 0, "the writes needed the collector");
}

#[test]
fn static_wear_levelling_moves_cold_blocks() {
    let mut f = Ftl::new(cfg(geo(), 64 << 20)).unwrap();
    let mut g = f.gc_config();
    g.wear_spread = 1;
    g.low_free = 1;
    g.critical_free = 1;
    f.set_gc(g).unwrap();
    let mut nand = TestNand::new(geo());
    // A cold stream written once, then hot streams that churn.
    let mut cold = Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, 1);
    append(&mut f, &mut cold, 64).unwrap();
    nand.run(&mut f).unwrap();
    let mut wear_moves = 0;
    for round in 0..80u32 {
        let mut hot = Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, 100 + round);
        append(&mut f, &mut hot, 96).unwrap();
        nand.run(&mut f).unwrap();
        f.close_stream(hot.id).unwrap();
        nand.run(&mut f).unwrap();
        wear_moves += f.gc_step().unwrap().wear_moves;
        nand.run(&mut f).unwrap();
        check_all(&f, &nand, core::slice::from_ref(&cold), false);
    }
    let s = f.stats();
    assert!(wear_moves > 0, "cold blocks were moved");
    assert_eq!(s.wear_moves, u64::from(wear_moves));
    assert!(
        s.max_erase_count - s.min_erase_count <= 1 + 2,
        "spread {}..{}",
        s.min_erase_count,
        s.max_erase_count
    );
    assert!(s.write_amplification() >= 1.0);
}
