//! Bad blocks: factory bad blocks are never used; failed programs and
//! erases retire blocks and the data still reads back.

use alloc::vec;
use alloc::vec::Vec;

use super::api::{cfg, tiny};
use super::model::{Ref, append, check_all, check_all_reclaimed};
use crate::testnand::TestNand;
use crate::{BlockAddr, Ftl, Geometry, StreamShape};

const SHAPE: StreamShape = StreamShape {
    head_dim: 128,
    dim_group: 2,
};

#[test]
fn factory_bad_blocks_never_allocated() {
    let g = tiny();
    let bad: Vec<BlockAddr> = (0..g.dies())
        .map(|d| {
            let (channel, way) = g.die_at(u64::from(d));
            BlockAddr {
                channel,
                way,
                block: d % 4,
            }
        })
        .collect();
    let mut c = cfg(g, 1 << 20);
    c.bad_blocks = bad.clone();
    let mut f = Ftl::new(c).unwrap();
    assert_eq!(f.stats().bad_blocks, 4);
    let mut nand = TestNand::new(g);
    let mut r = Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, 1);
    while append(&mut f, &mut r, 20).is_ok() {
        nand.run(&mut f).unwrap();
    }
    nand.run(&mut f).unwrap();
    check_all(&f, &nand, core::slice::from_ref(&r), true);
    for b in &bad {
        assert!(f.is_bad(*b));
        assert!(
            !nand.programmed_blocks.contains(b),
            "bad block {b:?} programmed"
        );
    }
}

#[test]
fn program_failure_relocates_and_data_survives() {
    let g = Geometry::sim_default(4096);
    let mut f = Ftl::new(cfg(g, 8192)).unwrap();
    let mut nand = TestNand::new(g);
    let mut refs: Vec<Ref> = (0..3)
        .map(|i| Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, i))
        .collect();
    // Program something, then fail the next program of a block that already
    // holds valid pages of several streams.
    for r in &mut refs {
        append(&mut f, r, 40).unwrap();
    }
    nand.run(&mut f).unwrap();
    let victim = f.stream_pages(refs[0].id).unwrap()[0];
    for r in &mut refs {
        append(&mut f, r, 40).unwrap();
    }
    // Fail whatever the queue programs next in the victim's block.
    let ops = f.drain_ops();
    let next_in_block = ops.iter().find_map(|op| match op {
        crate::FlashOp::Program { ppa, .. } if ppa.block() == victim.block() => Some(*ppa),
        _ => None,
    });
    let fail = next_in_block.unwrap_or(victim);
    nand.fail_program.insert(fail);
    let (fp, fe) = nand.execute(ops).unwrap();
    assert!(fe.is_empty());
    for p in fp {
        f.program_failed(p).unwrap();
    }
    nand.run(&mut f).unwrap();
    assert!(f.is_bad(victim.block()));
    assert!(f.stats().pages_relocated > 0);
    check_all(&f, &nand, &refs, false);
    // Keep going: the bad block is never used again.
    let programmed_before = nand.programs;
    for r in &mut refs {
        append(&mut f, r, 100).unwrap();
    }
    nand.run(&mut f).unwrap();
    assert!(nand.programs > programmed_before);
    check_all(&f, &nand, &refs, false);
    for r in &refs {
        for p in f.stream_pages(r.id).unwrap() {
            assert_ne!(p.block(), victim.block());
        }
    }
    // Reporting a page of a retired block again is harmless.
    f.program_failed(victim).unwrap();
    nand.run(&mut f).unwrap();
    check_all(&f, &nand, &refs, false);
}

#[test]
fn failure_of_superseding_program_keeps_merged_tokens() {
    // Tiny budget: every append leaves partial pages that the next append
    // supersedes with a merge. Fail every 23rd program.
    let g = Geometry::sim_default(4096);
    let mut f = Ftl::new(cfg(g, 2048)).unwrap();
    let mut nand = TestNand::new(g);
    nand.fail_every = 23;
    let shape = StreamShape {
        head_dim: 64,
        dim_group: 4,
    };
    let mut refs: Vec<Ref> = (0..2)
        .map(|i| Ref::new(f.open_stream(shape).unwrap(), shape, i))
        .collect();
    for step in 0..30 {
        for r in &mut refs {
            append(&mut f, r, 1 + step % 4).unwrap();
        }
        nand.run(&mut f).unwrap();
        check_all(&f, &nand, &refs, false);
    }
    assert!(nand.failed_programs > 0);
    assert!(f.stats().pages_superseded > 0);
    assert!(f.stats().bad_blocks > 0);
}

#[test]
fn erase_failure_retires_block() {
    let g = tiny();
    let mut f = Ftl::new(cfg(g, 1 << 20)).unwrap();
    let mut nand = TestNand::new(g);
    let mut r = Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, 9);
    for _ in 0..10 {
        append(&mut f, &mut r, 40).unwrap();
    }
    nand.run(&mut f).unwrap();
    // Fail the erase of every block this stream filled.
    for p in f.stream_pages(r.id).unwrap() {
        nand.fail_erase.insert(p.block());
    }
    f.close_stream(r.id).unwrap();
    nand.run(&mut f).unwrap();
    let s = f.stats();
    assert!(s.bad_blocks > 0, "{s:?}");
    check_all_reclaimed(&f, &nand);
    // The device keeps working on the remaining blocks.
    let mut r = Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, 10);
    append(&mut f, &mut r, 40).unwrap();
    nand.run(&mut f).unwrap();
    check_all(&f, &nand, core::slice::from_ref(&r), false);
    for p in f.stream_pages(r.id).unwrap() {
        assert!(!f.is_bad(p.block()));
    }
}

#[test]
fn failure_reported_after_supersede_is_folded() {
    // The firmware appends before reporting a failure of the last batch:
    // the failed partial page has already been superseded by a queued
    // program that merges from it; the FTL folds the retained image in.
    let g = Geometry::sim_default(4096);
    let mut f = Ftl::new(cfg(g, 400)).unwrap();
    let mut nand = TestNand::new(g);
    let shape = StreamShape {
        head_dim: 64,
        dim_group: 8,
    };
    let mut r = Ref::new(f.open_stream(shape).unwrap(), shape, 5);
    append(&mut f, &mut r, 2).unwrap();
    nand.run(&mut f).unwrap();
    append(&mut f, &mut r, 2).unwrap(); // supersedes: merges from the first pages
    let (p1, _) = f
        .token_group(r.id, crate::Kind::K, 0)
        .unwrap()
        .flash
        .unwrap();
    let batch = f.drain_ops();
    nand.fail_program.insert(p1);
    let (fp, _) = nand.execute(batch).unwrap();
    assert_eq!(fp, vec![p1]);
    append(&mut f, &mut r, 2).unwrap(); // supersedes the failed page
    f.program_failed(p1).unwrap();
    nand.run(&mut f).unwrap();
    check_all(&f, &nand, core::slice::from_ref(&r), false);
    assert!(f.is_bad(p1.block()));
}

#[test]
fn a_page_lost_in_a_move_makes_its_stream_refuse_lookups_and_no_other() {
    let g = tiny();
    let mut f = Ftl::new(cfg(g, 1 << 20)).unwrap();
    let mut nand = TestNand::new(g);
    let mut a = Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, 1);
    let mut b = Ref::new(f.open_stream(SHAPE).unwrap(), SHAPE, 2);
    append(&mut f, &mut a, 40).unwrap();
    append(&mut f, &mut b, 40).unwrap();
    nand.run(&mut f).unwrap();
    let page = f
        .token_group(a.id, crate::Kind::K, 0)
        .unwrap()
        .flash
        .unwrap()
        .0;
    f.page_lost(page).unwrap();
    assert_eq!(f.stats().pages_lost, 1);
    assert_eq!(
        f.token_group(a.id, crate::Kind::V, 0).err(),
        Some(crate::FtlError::DataLost)
    );
    assert_eq!(f.dim_run(a.id, 0, 0).err(), Some(crate::FtlError::DataLost));
    super::model::check_stream(&f, &nand, &b);
    // Closing it gives its pages back as usual.
    f.close_stream(a.id).unwrap();
    nand.run(&mut f).unwrap();
    f.audit().unwrap();
    let free = BlockAddr {
        channel: 0,
        way: 0,
        block: 0,
    };
    // A page nobody holds (its stream closed) loses nothing.
    assert_eq!(f.page_lost(free.page(g.pages_per_block - 1)), Ok(()));
    assert_eq!(f.page_lost(page), Ok(()));
    assert_eq!(f.stats().pages_lost, 1);
    let outside = BlockAddr {
        channel: 0,
        way: 0,
        block: g.blocks_per_die,
    };
    assert_eq!(
        f.page_lost(outside.page(0)),
        Err(crate::FtlError::InvalidAddress)
    );
}
