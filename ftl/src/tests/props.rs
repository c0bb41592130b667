//! Property tests: random interleavings of open / append / close over
//! several streams, shapes, page sizes and DRAM budgets, checked against
//! the reference model after every drained step.

use alloc::vec::Vec;

use proptest::prelude::*;

use super::api::{cfg, tiny};
use super::model::{Ref, append, check_all, check_all_reclaimed, snapshot};
use crate::testnand::TestNand;
use crate::{Ftl, FtlError, GcPolicy, Geometry, Kind, StreamId, StreamShape};

#[derive(Clone, Debug)]
enum Op {
    Open { hd128: bool, m_log: u8 },
    Append { pick: usize, n: usize },
    Close { pick: usize },
    Gc { urgent: bool, greedy: bool },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (any::<bool>(), 0u8..4).prop_map(|(hd128, m_log)| Op::Open { hd128, m_log }),
        8 => (any::<usize>(), 1usize..=300).prop_map(|(pick, n)| Op::Append { pick, n }),
        1 => any::<usize>().prop_map(|pick| Op::Close { pick }),
        2 => (any::<bool>(), any::<bool>()).prop_map(|(urgent, greedy)| Op::Gc { urgent, greedy }),
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
    let mut f = Ftl::new(c).unwrap();
    let mut nand = TestNand::new(geo);
    nand.fail_every = fail_every;
    let mut refs: Vec<Ref> = Vec::new();
    let mut seed = 0;
    let mut no_space = 0;
    let mut gc_moves = 0u64;
    // Start with a few streams so most ops do something.
    for (i, m) in [(0u32, 1u8), (1, 4)] {
        let shape = StreamShape {
            head_dim: 64 << i,
            dim_group: m,
        };
        seed += 1;
        refs.push(Ref::new(f.open_stream(shape).unwrap(), shape, seed));
    }
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
        }
        if *drain {
            nand.run(&mut f).unwrap();
            check_all(&f, &nand, &refs, fail_every == 0);
        }
    }
    nand.run(&mut f).unwrap();
    check_all(&f, &nand, &refs, fail_every == 0);
    for r in &refs {
        f.close_stream(r.id).unwrap();
    }
    nand.run(&mut f).unwrap();
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
