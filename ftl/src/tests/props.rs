//! Property tests: random interleavings of open / append / close /
//! garbage collection / power cuts over several streams, shapes, page
//! sizes and DRAM budgets, checked against the reference model after every
//! drained step and audited (`Ftl::audit`) after every step.
//!
//! A power cut executes a prefix of the queued flash operations, tears the
//! next program (its page left holding garbage) and drops the FTL; the
//! next life is a new FTL over the same flash that assumes every block
//! unerased, as the firmware boots. The KV does not survive by contract,
//! so the model forgets every stream: what the new life reads back must be
//! its own data only, never a page of the old life.

use alloc::vec::Vec;

use proptest::prelude::*;

use super::api::{cfg, tiny};
use super::model::{Ref, append, check_all, check_all_reclaimed, snapshot};
use crate::testnand::TestNand;
use crate::{FlashOp, Ftl, FtlError, GcPolicy, Geometry, Kind, StreamId, StreamShape};

#[derive(Clone, Debug)]
enum Op {
    Open { hd128: bool, m_log: u8 },
    Append { pick: usize, n: usize },
    Close { pick: usize },
    Gc { urgent: bool, greedy: bool },
    PowerCut { after: usize, gc: bool, n: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (any::<bool>(), 0u8..4).prop_map(|(hd128, m_log)| Op::Open { hd128, m_log }),
        8 => (any::<usize>(), 1usize..=300).prop_map(|(pick, n)| Op::Append { pick, n }),
        1 => any::<usize>().prop_map(|pick| Op::Close { pick }),
        2 => (any::<bool>(), any::<bool>()).prop_map(|(urgent, greedy)| Op::Gc { urgent, greedy }),
        1 => (any::<usize>(), any::<bool>(), 1usize..=300)
            .prop_map(|(after, gc, n)| Op::PowerCut { after, gc, n }),
    ]
}

const BUDGETS: [u64; 5] = [600, 3000, 40_000, 400_000, 64 << 20];

fn run_case(
    geo: Geometry,
    budget: u64,
    ops: &[(Op, bool)],
    fail_every: u64,
) -> (crate::FtlStats, u32) {
    // A few factory bad blocks on some dies.
    let bad: Vec<crate::BlockAddr> = (0..geo.dies())
        .filter(|d| d % 3 == 0)
        .map(|d| {
            let (channel, way) = geo.die_at(u64::from(d));
            let block = (d * 7 + 1) % geo.blocks_per_die;
            crate::BlockAddr {
                channel,
                way,
                block,
            }
        })
        .collect();
    let mut c = cfg(geo, budget);
    c.bad_blocks = bad.clone();
    let mut f = Ftl::new(c.clone()).unwrap();
    let mut nand = TestNand::new(geo);
    nand.fail_every = fail_every;
    let mut refs: Vec<Ref> = Vec::new();
    let mut seed = 0;
    let mut no_space = 0;
    let mut gc_moves = 0u64;
    // Start with a few streams so most ops do something.
    let start = |f: &mut Ftl, refs: &mut Vec<Ref>, seed: &mut u32| {
        for (i, m) in [(0u32, 1u8), (1, 4)] {
            let shape = StreamShape {
                head_dim: 64 << i,
                dim_group: m,
            };
            *seed += 1;
            refs.push(Ref::new(f.open_stream(shape).unwrap(), shape, *seed));
        }
    };
    start(&mut f, &mut refs, &mut seed);
    for (op, drain) in ops {
        match *op {
            Op::Open { hd128, m_log } => {
                let shape = StreamShape {
                    head_dim: if hd128 { 128 } else { 64 },
                    dim_group: 1 << m_log,
                };
                seed += 1;
                if let Ok(id) = f.open_stream(shape) {
                    refs.push(Ref::new(id, shape, seed));
                }
            }
            Op::Append { pick, n } => {
                if refs.is_empty() {
                    continue;
                }
                let i = pick % refs.len();
                let before = snapshot(&f, &refs);
                let pend = f.pending_ops();
                match append(&mut f, &mut refs[i], n) {
                    Ok(()) => {}
                    Err(FtlError::DramBudget) => {
                        assert!(budget < refs[i].shape.bytes_per_token());
                        assert_eq!(snapshot(&f, &refs), before);
                        assert_eq!(f.pending_ops(), pend);
                    }
                    Err(FtlError::NoSpace) => {
                        no_space += 1;
                        assert_eq!(snapshot(&f, &refs), before);
                        assert_eq!(f.pending_ops(), pend);
                    }
                    Err(e) => panic!("append: {e}"),
                }
                assert!(f.stats().dram_used <= budget);
            }
            Op::Close { pick } => {
                if refs.is_empty() {
                    continue;
                }
                let r = refs.remove(pick % refs.len());
                f.close_stream(r.id).unwrap();
                assert!(f.len(r.id).is_err());
            }
            Op::Gc { urgent, greedy } => {
                let mut g = f.gc_config();
                g.policy = if greedy {
                    GcPolicy::Greedy
                } else {
                    GcPolicy::CostBenefit
                };
                // Collect as soon as any die is short, and level wear early.
                g.low_free = geo.blocks_per_die - 1;
                g.wear_spread = 1;
                f.set_gc(g).unwrap();
                let before = snapshot(&f, &refs);
                let r = if urgent { f.gc_urgent() } else { f.gc_step() };
                let r = r.unwrap();
                // GC moves pages, never stream contents or lengths.
                assert_eq!(snapshot(&f, &refs).1, before.1);
                gc_moves += u64::from(r.pages_moved);
            }
            Op::PowerCut { after, gc, n } => {
                // Something in flight when the power goes: the copies and
                // erases of a collection, or the pages of a write.
                if gc {
                    f.gc_make_room().unwrap();
                } else if !refs.is_empty() {
                    let i = after % refs.len();
                    match append(&mut f, &mut refs[i], n) {
                        Ok(()) | Err(FtlError::DramBudget | FtlError::NoSpace) => {}
                        Err(e) => panic!("append: {e}"),
                    }
                }
                f.audit().unwrap();
                power_cut(&mut f, &mut nand, after, &bad);
                f = Ftl::new(c.clone()).unwrap();
                f.assume_unerased();
                f.audit().unwrap();
                refs.clear();
                gc_moves = 0;
                start(&mut f, &mut refs, &mut seed);
            }
        }
        f.audit().unwrap_or_else(|e| panic!("after {op:?}: {e}"));
        if *drain {
            nand.run(&mut f).unwrap();
            f.audit().unwrap_or_else(|e| panic!("after draining: {e}"));
            check_all(&f, &nand, &refs, fail_every == 0);
        }
    }
    nand.run(&mut f).unwrap();
    f.audit().unwrap();
    check_all(&f, &nand, &refs, fail_every == 0);
    for r in &refs {
        f.close_stream(r.id).unwrap();
    }
    nand.run(&mut f).unwrap();
    f.audit().unwrap();
    check_all_reclaimed(&f, &nand);
    if fail_every == 0 {
        assert_eq!(f.stats().bad_blocks, bad.len() as u64);
    }
    for b in &bad {
        assert!(f.is_bad(*b));
        assert!(
            !nand.programmed_blocks.contains(b),
            "factory bad block used"
        );
    }
    assert_eq!(f.stats().gc_pages_moved, gc_moves);
    (f.stats(), no_space)
}

/// The power goes while `f`'s queued operations run: the first
/// `after % (queued + 1)` execute (their failures die with the power), a
/// program next in line is torn (its page programmed with garbage), the
/// rest never reach the flash. The old life's blocks no longer count as
/// programmed by the FTL that follows (`check_all_reclaimed`).
fn power_cut(f: &mut Ftl, nand: &mut TestNand, after: usize, bad: &[crate::BlockAddr]) {
    let mut ops = f.drain_ops();
    let keep = after % (ops.len() + 1);
    let torn = ops.get(keep).cloned();
    ops.truncate(keep);
    nand.execute(ops).unwrap();
    if let Some(FlashOp::Program { ppa, data, .. }) = torn {
        let garbage = data.iter().map(|b| b ^ 0xA5).collect();
        let op = FlashOp::Program {
            ppa,
            data: garbage,
            merge_from: None,
        };
        nand.execute(alloc::vec![op]).unwrap();
    }
    for b in bad {
        assert!(
            !nand.programmed_blocks.contains(b),
            "factory bad block used"
        );
    }
    nand.programmed_blocks.clear();
}

fn geometry(pick: u8, page_size: u32) -> Geometry {
    match pick {
        0 => Geometry::sim_default(page_size),
        _ => Geometry {
            page_size,
            blocks_per_die: 6,
            ..tiny()
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_interleavings_read_back(
        geo in 0u8..2,
        big_page in any::<bool>(),
        budget in 0usize..BUDGETS.len(),
        ops in proptest::collection::vec((op(), proptest::bool::weighted(0.8)), 1..24),
    ) {
        let ps = if big_page { 16384 } else { 4096 };
        run_case(geometry(geo, ps), BUDGETS[budget], &ops, 0);
    }

    #[test]
    fn random_interleavings_with_program_failures(
        big_page in any::<bool>(),
        budget in 1usize..BUDGETS.len(),
        fail_every in 40u64..200,
        ops in proptest::collection::vec((op(), proptest::bool::weighted(0.8)), 1..16),
    ) {
        let ps = if big_page { 16384 } else { 4096 };
        run_case(Geometry::sim_default(ps), BUDGETS[budget], &ops, fail_every);
    }

    /// Garbage arguments never panic.
    #[test]
    fn garbage_never_panics(
        id in 0u32..80,
        group in any::<u32>(),
        block in any::<u32>(),
        ch in any::<u8>(),
        page in any::<u32>(),
        klen in 0usize..300,
        vlen in 0usize..300,
    ) {
        let g = tiny();
        let mut f = Ftl::new(cfg(g, 4096)).unwrap();
        let s = f.open_stream(StreamShape { head_dim: 64, dim_group: 2 }).unwrap();
        let k: Vec<u16> = (0..klen as u16).collect();
        let v: Vec<u16> = (0..vlen as u16).collect();
        let _ = f.append(StreamId(id), &k, &v);
        let _ = f.append(s, &k, &k);
        let _ = f.token_group(StreamId(id), Kind::V, group);
        let _ = f.dim_run(StreamId(id), block, group);
        let _ = f.dim_run(s, block, group);
        let ppa = crate::Ppa { channel: ch % 3, way: ch / 128, block: block % 6, page: page % 10 };
        let _ = f.page_owner(ppa);
        let _ = f.program_failed(ppa);
        let _ = f.erase_failed(ppa.block());
        let _ = f.erase_count(ppa.block());
        let _ = f.close_stream(StreamId(id));
        let mut nand = TestNand::new(g);
        let _ = nand.run(&mut f);
    }
}
