//! A tiny in-memory NAND for tests: executes `FlashOp`s the way the
//! firmware must (merge sources read first, queue order), enforces NAND
//! rules (no reprogram without erase, increasing page order within a block)
//! and injects program / erase failures.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::{BlockAddr, FlashOp, Ftl, Geometry, Ppa};

#[derive(Debug)]
pub(crate) struct TestNand {
    geo: Geometry,
    pages: BTreeMap<Ppa, Vec<u8>>,
    /// Next page each block may program (page order only goes up).
    next: BTreeMap<BlockAddr, u32>,
    /// Program of these pages fails (once each).
    pub fail_program: BTreeSet<Ppa>,
    /// Erase of these blocks fails (once each).
    pub fail_erase: BTreeSet<BlockAddr>,
    /// Fail every `n`-th program (0: never).
    pub fail_every: u64,
    pub programs: u64,
    pub erases: u64,
    pub failed_programs: u64,
    /// Every block ever programmed.
    pub programmed_blocks: BTreeSet<BlockAddr>,
}

impl TestNand {
    pub fn new(geo: Geometry) -> TestNand {
        TestNand {
            geo,
            pages: BTreeMap::new(),
            next: BTreeMap::new(),
            fail_program: BTreeSet::new(),
            fail_erase: BTreeSet::new(),
            fail_every: 0,
            programs: 0,
            erases: 0,
            failed_programs: 0,
            programmed_blocks: BTreeSet::new(),
        }
    }

    pub fn read(&self, ppa: Ppa) -> Option<&[u8]> {
        self.pages.get(&ppa).map(Vec::as_slice)
    }

    /// Drains and executes until the FTL has nothing queued, feeding
    /// failures back after each batch (as the firmware does).
    pub fn run(&mut self, ftl: &mut Ftl) -> Result<(), String> {
        for _ in 0..1000 {
            let ops = ftl.drain_ops();
            if ops.is_empty() {
                return Ok(());
            }
            let (fp, fe) = self.execute(ops)?;
            for p in fp {
                ftl.program_failed(p)
                    .map_err(|e| format!("program_failed: {e}"))?;
            }
            for b in fe {
                ftl.erase_failed(b)
                    .map_err(|e| format!("erase_failed: {e}"))?;
            }
        }
        Err("ops never drained".into())
    }

    /// Executes one batch; returns the failed programs and erases.
    pub fn execute(&mut self, ops: Vec<FlashOp>) -> Result<(Vec<Ppa>, Vec<BlockAddr>), String> {
        let (mut fp, mut fe) = (Vec::new(), Vec::new());
        for op in ops {
            match op {
                FlashOp::Program {
                    ppa,
                    mut data,
                    merge_from,
                } => {
                    if !self.geo.contains(ppa) {
                        return Err(format!("program outside geometry {ppa:?}"));
                    }
                    if data.len() != self.geo.page_size as usize {
                        return Err(format!("image of {} bytes", data.len()));
                    }
                    if let Some(m) = merge_from {
                        let old = self
                            .pages
                            .get(&m.from)
                            .ok_or_else(|| format!("merge source {:?} not programmed", m.from))?;
                        m.apply(old, &mut data);
                    }
                    if self.pages.contains_key(&ppa) {
                        return Err(format!("{ppa:?} programmed twice without erase"));
                    }
                    let next = self.next.entry(ppa.block()).or_insert(0);
                    if ppa.page < *next {
                        return Err(format!("{ppa:?} out of order (next {next})"));
                    }
                    *next = ppa.page + 1;
                    self.programs += 1;
                    self.programmed_blocks.insert(ppa.block());
                    let every =
                        self.fail_every > 0 && self.programs.is_multiple_of(self.fail_every);
                    if self.fail_program.remove(&ppa) || every {
                        self.failed_programs += 1;
                        fp.push(ppa);
                        continue;
                    }
                    self.pages.insert(ppa, data);
                }
                FlashOp::Erase { block } => {
                    if !self.geo.contains_block(block) {
                        return Err(format!("erase outside geometry {block:?}"));
                    }
                    if self.fail_erase.remove(&block) {
                        fe.push(block);
                        continue;
                    }
                    self.erases += 1;
                    self.next.remove(&block);
                    let lo = block.page(0);
                    let hi = block.page(u32::MAX);
                    let doomed: Vec<Ppa> = self.pages.range(lo..=hi).map(|(p, _)| *p).collect();
                    for p in doomed {
                        self.pages.remove(&p);
                    }
                }
            }
        }
        Ok((fp, fe))
    }
}
