//! Reference model and the whole-FTL consistency check.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use crate::testnand::TestNand;
use crate::{Ftl, FtlStats, Geometry, Kind, StreamId, StreamShape};

/// Everything appended to one stream.
#[derive(Clone, Debug)]
pub(crate) struct Ref {
    pub id: StreamId,
    pub shape: StreamShape,
    pub seed: u32,
    pub k: Vec<u16>,
    pub v: Vec<u16>,
    /// What the dim-indexed copy holds (`k` unless appended otherwise).
    pub k_dim: Vec<u16>,
}

impl Ref {
    pub fn new(id: StreamId, shape: StreamShape, seed: u32) -> Ref {
        Ref {
            id,
            shape,
            seed,
            k: Vec::new(),
            v: Vec::new(),
            k_dim: Vec::new(),
        }
    }

    pub fn hd(&self) -> usize {
        usize::from(self.shape.head_dim)
    }

    pub fn len(&self) -> usize {
        self.k.len() / self.hd()
    }

    /// The next `n` tokens of this stream (deterministic, distinct values).
    pub fn next_tokens(&self, n: usize) -> (Vec<u16>, Vec<u16>) {
        let hd = self.hd();
        let start = self.len();
        let mut k = Vec::with_capacity(n * hd);
        let mut v = Vec::with_capacity(n * hd);
        for t in start..start + n {
            for d in 0..hd {
                k.push(val(self.seed, t as u32, d as u32, 0));
                v.push(val(self.seed, t as u32, d as u32, 1));
            }
        }
        (k, v)
    }
}

fn val(seed: u32, t: u32, d: u32, kind: u32) -> u16 {
    let mut x = seed
        .wrapping_mul(0x9E37_79B9)
        .wrapping_add(t.wrapping_mul(0x85EB_CA6B))
        .wrapping_add(d.wrapping_mul(0xC2B2_AE35))
        .wrapping_add(kind.wrapping_mul(0x27D4_EB2F));
    x ^= x >> 15;
    x = x.wrapping_mul(0x2C1B_3C6D);
    x ^= x >> 12;
    x as u16
}

fn el(page: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([page[2 * i], page[2 * i + 1]])
}

/// Reads every token of `r` back (K, V token groups and every dim of the K
/// dim copy) and compares with the model.
pub(crate) fn check_stream(ftl: &Ftl, nand: &TestNand, r: &Ref) {
    let hd = r.hd();
    let len = r.len();
    assert_eq!(ftl.len(r.id).unwrap() as usize, len);
    let t = ftl.tokens_per_page(r.id).unwrap() as usize;
    assert_eq!(t, ftl.geometry().tokens_per_page(r.shape.head_dim) as usize);
    let groups = len.div_ceil(t);
    for (kind, data) in [(Kind::K, &r.k), (Kind::V, &r.v)] {
        for g in 0..groups {
            let sp = ftl.token_group(r.id, kind, g as u32).unwrap();
            let count = t.min(len - g * t);
            let mut covered = 0;
            if let Some((ppa, n)) = sp.flash {
                let n = n as usize;
                assert!(n > 0 && n <= count, "flash span {n} of {count}");
                let page = nand.read(ppa).expect("flash span not programmed");
                for i in 0..n * hd {
                    assert_eq!(
                        el(page, i),
                        data[g * t * hd + i],
                        "{kind:?} g{g} flash el {i}"
                    );
                }
                covered = n;
            }
            if let Some((d, first, n)) = sp.dram {
                let (first, n) = (first as usize, n as usize);
                assert_eq!(first, covered);
                assert_eq!(d.len(), n * hd);
                let at = (g * t + first) * hd;
                assert_eq!(d, &data[at..at + n * hd], "{kind:?} g{g} dram");
                covered += n;
            }
            assert_eq!(covered, count, "{kind:?} group {g} coverage");
        }
        assert!(ftl.token_group(r.id, kind, groups as u32).is_err());
    }
    let nn = ftl.tokens_per_dim_page(r.id).unwrap() as usize;
    let m = usize::from(r.shape.dim_group);
    let runs = len.div_ceil(nn);
    for b in 0..hd / m {
        for run in 0..runs {
            let sp = ftl.dim_run(r.id, b as u32, run as u32).unwrap();
            let count = nn.min(len - run * nn);
            let mut covered = 0;
            let want = |i: usize, j: usize| r.k_dim[(run * nn + i) * hd + b * m + j];
            if let Some((ppa, n)) = sp.flash {
                let n = n as usize;
                assert!(n > 0 && n <= count);
                let page = nand.read(ppa).expect("dim page not programmed");
                for j in 0..m {
                    for i in 0..n {
                        assert_eq!(
                            el(page, j * nn + i),
                            want(i, j),
                            "dim b{b} r{run} j{j} i{i}"
                        );
                    }
                }
                covered = n;
            }
            if let Some(d) = sp.dram {
                let (first, n) = (d.first as usize, d.tokens as usize);
                assert_eq!(first, covered);
                for j in 0..m {
                    let row = d.row(j).expect("dim row in DRAM");
                    assert_eq!(row.len(), n);
                    for (i, &x) in row.iter().enumerate() {
                        assert_eq!(x, want(first + i, j), "dim dram b{b} r{run}");
                    }
                }
                covered += n;
            }
            assert_eq!(covered, count, "dim b{b} run {run} coverage");
        }
        assert!(ftl.dim_run(r.id, b as u32, runs as u32).is_err());
    }
    assert!(ftl.dim_run(r.id, (hd / m) as u32, 0).is_err());
}

/// Whole-FTL invariants: data reads back; every valid page has exactly one
/// (stream, slot); no valid page in a bad block; DRAM within budget.
/// `placement`: also check exact striping (no relocation happened).
pub(crate) fn check_all(ftl: &Ftl, nand: &TestNand, refs: &[Ref], placement: bool) {
    assert_eq!(ftl.pending_ops(), 0, "check after draining only");
    let geo = *ftl.geometry();
    let mut seen = BTreeSet::new();
    for r in refs {
        check_stream(ftl, nand, r);
        for p in ftl.stream_pages(r.id).unwrap() {
            assert!(geo.contains(p));
            assert!(seen.insert(p), "page {p:?} owned twice");
            assert_eq!(ftl.page_owner(p), Some(r.id));
            assert!(!ftl.is_bad(p.block()), "valid page in bad block");
        }
        if placement {
            check_striping(ftl, r);
        }
    }
    let s = ftl.stats();
    assert_eq!(
        s.valid_pages,
        seen.len() as u64,
        "valid pages without owner slot"
    );
    assert!(s.dram_used <= s.dram_budget);
    // DRAM accounting matches what the read side hands out.
    let mut dram = 0u64;
    for r in refs {
        let (t, hd) = (ftl.tokens_per_page(r.id).unwrap() as usize, r.hd() as u64);
        if r.len() % t != 0 {
            let g = (r.len() / t) as u32;
            let sp = ftl.token_group(r.id, Kind::K, g).unwrap();
            dram += sp.dram.map_or(0, |d| u64::from(d.2)) * hd * 4;
        }
        let nn = ftl.tokens_per_dim_page(r.id).unwrap() as usize;
        if r.len() % nn != 0 {
            let sp = ftl.dim_run(r.id, 0, (r.len() / nn) as u32).unwrap();
            dram += sp.dram.map_or(0, |d| u64::from(d.tokens)) * hd * 2;
        }
    }
    assert_eq!(s.dram_used, dram, "DRAM accounting");
}

/// Token groups sit on die `g + salt(id)` for K and half the dies further
/// for V (channel first); a stream with at least
/// channels·ways full groups touches every channel and way.
pub(crate) fn check_striping(ftl: &Ftl, r: &Ref) {
    let geo: Geometry = *ftl.geometry();
    let t = ftl.tokens_per_page(r.id).unwrap() as usize;
    let full = r.len() / t;
    let mut chans = BTreeSet::new();
    let mut ways = BTreeSet::new();
    for g in 0..full {
        for kind in [Kind::K, Kind::V] {
            let (p, _) = ftl
                .token_group(r.id, kind, g as u32)
                .unwrap()
                .flash
                .unwrap();
            let half = if kind == Kind::V {
                u64::from(geo.dies()) / 2
            } else {
                0
            };
            let (c, w) = geo.die_at(g as u64 + crate::placement::salt(&geo, r.id) + half);
            assert_eq!((p.channel, p.way), (c, w), "group {g} placement");
            chans.insert(p.channel);
            ways.insert(p.way);
        }
    }
    if full >= geo.dies() as usize {
        assert_eq!(
            chans.len(),
            geo.channels as usize,
            "head not spread over channels"
        );
        assert_eq!(ways.len(), geo.ways as usize);
    }
}

/// State that a refused call must leave unchanged.
pub(crate) fn snapshot(ftl: &Ftl, refs: &[Ref]) -> (FtlStats, Vec<u32>) {
    let lens = refs.iter().map(|r| ftl.len(r.id).unwrap()).collect();
    (ftl.stats(), lens)
}

/// Every block is open, free or bad (after closing everything and
/// draining), and every block that was programmed and is not open now has
/// been erased at least once.
pub(crate) fn check_all_reclaimed(ftl: &Ftl, nand: &TestNand) {
    let geo = *ftl.geometry();
    let s = ftl.stats();
    assert_eq!(s.valid_pages, 0);
    assert_eq!(s.dram_used, 0);
    for die in 0..geo.dies() {
        let (channel, way) = geo.die_at(u64::from(die));
        for block in 0..geo.blocks_per_die {
            let b = crate::BlockAddr {
                channel,
                way,
                block,
            };
            let open = ftl.is_open_block(b);
            assert!(
                open || ftl.is_free_block(b) || ftl.is_bad(b),
                "{b:?} not reclaimed"
            );
            if nand.programmed_blocks.contains(&b) && !open && !ftl.is_bad(b) {
                assert!(ftl.erase_count(b) >= 1, "{b:?} programmed but never erased");
            }
        }
    }
}

/// Appends `n` tokens to `r` through the FTL and the model.
pub(crate) fn append(ftl: &mut Ftl, r: &mut Ref, n: usize) -> Result<(), crate::FtlError> {
    let (k, v) = r.next_tokens(n);
    ftl.append(r.id, &k, &v)?;
    r.k.extend_from_slice(&k);
    r.v.extend_from_slice(&v);
    r.k_dim.extend_from_slice(&k);
    Ok(())
}

/// [`append`] with a dim-indexed copy of other keys: `k` with the sign
/// bit flipped (what a host-side rotation would change).
pub(crate) fn append_rotated(ftl: &mut Ftl, r: &mut Ref, n: usize) -> Result<(), crate::FtlError> {
    let (k, v) = r.next_tokens(n);
    let k_dim: Vec<u16> = k.iter().map(|&x| x ^ 0x8000).collect();
    ftl.append_with_dim_copy(r.id, &k, &v, &k_dim)?;
    r.k.extend_from_slice(&k);
    r.v.extend_from_slice(&v);
    r.k_dim.extend_from_slice(&k_dim);
    Ok(())
}
