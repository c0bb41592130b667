//! [`RamNand`]: the NAND flash of a board kept in RAM. A page takes memory
//! only once programmed; an erased page reads as 0xFF. Commands complete in
//! submission order on the next [`Nand::poll`]; there is no timing.
//!
//! Misuse is a controller error ([`RamNandError`]), never a panic: an
//! address outside the geometry, programming a page that is not erased, a
//! program of the wrong length, a filter that does not fit the page, a poll
//! buffer too small, or more programmed pages than the RAM budget holds.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;

use firmware::hal::{Nand, NandCmd, NandDone, NandStatus};
use ftl::{BlockAddr, Geometry, Ppa};

/// A controller error of [`RamNand`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RamNandError {
    /// The address is outside the geometry.
    BadAddress,
    /// Program of a page that was programmed since its block's erase.
    NotErased,
    /// Program data is not exactly one page.
    WrongLength {
        /// Bytes given.
        len: usize,
    },
    /// The read's row filter does not fit a page.
    BadFilter,
    /// The poll buffer cannot hold the read's kept bytes.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
    },
    /// The RAM budget for programmed pages is used up.
    OutOfMemory,
}

/// NAND in RAM; see the module docs.
#[derive(Debug)]
pub struct RamNand {
    geo: Geometry,
    pages: BTreeMap<u64, Box<[u8]>>,
    max_pages: usize,
    queue_depth: usize,
    done: VecDeque<(NandDone, Vec<u8>)>,
}

impl RamNand {
    /// Flash of geometry `geo` holding at most `max_pages` programmed pages
    /// at once, with `queue_depth` (≥ 1) commands in flight.
    pub fn new(geo: Geometry, max_pages: usize, queue_depth: usize) -> Self {
        Self {
            geo,
            pages: BTreeMap::new(),
            max_pages,
            queue_depth: queue_depth.max(1),
            done: VecDeque::new(),
        }
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Programmed pages held now.
    pub fn programmed_pages(&self) -> usize {
        self.pages.len()
    }

    fn block_index(&self, b: BlockAddr) -> Result<u64, RamNandError> {
        let g = &self.geo;
        if b.channel >= g.channels || b.way >= g.ways || b.block >= g.blocks_per_die {
            return Err(RamNandError::BadAddress);
        }
        let die = u64::from(b.channel) * u64::from(g.ways) + u64::from(b.way);
        Ok(die * u64::from(g.blocks_per_die) + u64::from(b.block))
    }

    fn page_index(&self, p: Ppa) -> Result<u64, RamNandError> {
        if p.page >= self.geo.pages_per_block {
            return Err(RamNandError::BadAddress);
        }
        Ok(self.block_index(p.block())? * u64::from(self.geo.pages_per_block) + u64::from(p.page))
    }

    fn run(&mut self, tag: u32, cmd: NandCmd<'_>) -> Result<(NandDone, Vec<u8>), RamNandError> {
        let page_size = self.geo.page_size as usize;
        let ok = |bytes| NandDone {
            tag,
            status: NandStatus::Ok,
            bytes,
        };
        match cmd {
            NandCmd::Read { ppa, filter } => {
                let i = self.page_index(ppa)?;
                if !filter.fits(page_size) {
                    return Err(RamNandError::BadFilter);
                }
                let mut out = vec![0u8; filter.kept_bytes()];
                let n = match self.pages.get(&i) {
                    Some(page) => filter.apply(page, &mut out),
                    None => filter.apply(&vec![0xFF; page_size], &mut out),
                }
                .ok_or(RamNandError::BadFilter)?;
                out.truncate(n);
                Ok((ok(n), out))
            }
            NandCmd::Program { ppa, data } => {
                let i = self.page_index(ppa)?;
                if data.len() != page_size {
                    return Err(RamNandError::WrongLength { len: data.len() });
                }
                if self.pages.contains_key(&i) {
                    return Err(RamNandError::NotErased);
                }
                if self.pages.len() >= self.max_pages {
                    return Err(RamNandError::OutOfMemory);
                }
                self.pages.insert(i, data.into());
                Ok((ok(0), Vec::new()))
            }
            NandCmd::Erase { block } => {
                let ppb = u64::from(self.geo.pages_per_block);
                let first = self.block_index(block)? * ppb;
                let gone: Vec<u64> = self
                    .pages
                    .range(first..first + ppb)
                    .map(|(&k, _)| k)
                    .collect();
                for k in gone {
                    self.pages.remove(&k);
                }
                Ok((ok(0), Vec::new()))
            }
        }
    }
}

impl Nand for RamNand {
    type NandError = RamNandError;

    fn submit(&mut self, tag: u32, cmd: NandCmd<'_>) -> nb::Result<(), RamNandError> {
        if self.done.len() >= self.queue_depth {
            return Err(nb::Error::WouldBlock);
        }
        let done = self.run(tag, cmd)?;
        self.done.push_back(done);
        Ok(())
    }

    fn poll(&mut self, out: &mut [u8]) -> nb::Result<NandDone, RamNandError> {
        let Some((done, data)) = self.done.front() else {
            return Err(nb::Error::WouldBlock);
        };
        if out.len() < data.len() {
            return Err(nb::Error::Other(RamNandError::BufferTooSmall {
                needed: data.len(),
            }));
        }
        out[..data.len()].copy_from_slice(data);
        let done = *done;
        self.done.pop_front();
        Ok(done)
    }

    fn in_flight(&self) -> usize {
        self.done.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use firmware::hal::RowFilter;

    fn geo() -> Geometry {
        Geometry {
            channels: 2,
            ways: 2,
            blocks_per_die: 4,
            pages_per_block: 4,
            page_size: 64,
        }
    }

    fn ppa(channel: u8, block: u32, page: u32) -> Ppa {
        Ppa {
            channel,
            way: 1,
            block,
            page,
        }
    }

    #[test]
    fn program_read_filter_erase() {
        let mut n = RamNand::new(geo(), 8, 4);
        let data: Vec<u8> = (0..64).collect();
        n.submit(
            1,
            NandCmd::Program {
                ppa: ppa(1, 2, 3),
                data: &data,
            },
        )
        .unwrap();
        let mut f = RowFilter::none(4, 16);
        f.keep(2);
        f.keep_bytes = 4;
        n.submit(
            2,
            NandCmd::Read {
                ppa: ppa(1, 2, 3),
                filter: f,
            },
        )
        .unwrap();
        n.submit(
            3,
            NandCmd::Read {
                ppa: ppa(1, 2, 2),
                filter: f,
            },
        )
        .unwrap();
        let mut out = [0u8; 64];
        assert_eq!(n.poll(&mut out).unwrap().tag, 1);
        let d = n.poll(&mut out).unwrap();
        assert_eq!((d.tag, d.bytes), (2, 4));
        assert_eq!(&out[..4], &[32, 33, 34, 35]);
        let d = n.poll(&mut out).unwrap();
        assert_eq!(&out[..d.bytes], &[0xFF; 4], "erased page");
        assert!(matches!(n.poll(&mut out), Err(nb::Error::WouldBlock)));
        assert_eq!(n.programmed_pages(), 1);
        let block = ppa(1, 2, 0).block();
        n.submit(4, NandCmd::Erase { block }).unwrap();
        n.poll(&mut out).unwrap();
        assert_eq!(n.programmed_pages(), 0);
    }

    #[test]
    fn misuse_is_an_error() {
        let mut n = RamNand::new(geo(), 1, 2);
        let data = [0u8; 64];
        let e = |r: nb::Result<(), RamNandError>| match r {
            Err(nb::Error::Other(e)) => e,
            other => panic!("expected an error, got {other:?}"),
        };
        assert_eq!(
            e(n.submit(
                0,
                NandCmd::Program {
                    ppa: ppa(2, 0, 0),
                    data: &data
                }
            )),
            RamNandError::BadAddress
        );
        assert_eq!(
            e(n.submit(
                0,
                NandCmd::Program {
                    ppa: ppa(0, 0, 4),
                    data: &data
                }
            )),
            RamNandError::BadAddress
        );
        assert_eq!(
            e(n.submit(
                0,
                NandCmd::Program {
                    ppa: ppa(0, 0, 0),
                    data: &data[..8]
                }
            )),
            RamNandError::WrongLength { len: 8 }
        );
        n.submit(
            0,
            NandCmd::Program {
                ppa: ppa(0, 0, 0),
                data: &data,
            },
        )
        .unwrap();
        assert_eq!(
            e(n.submit(
                0,
                NandCmd::Program {
                    ppa: ppa(0, 0, 0),
                    data: &data
                }
            )),
            RamNandError::NotErased
        );
        assert_eq!(
            e(n.submit(
                0,
                NandCmd::Program {
                    ppa: ppa(0, 0, 1),
                    data: &data
                }
            )),
            RamNandError::OutOfMemory
        );
        let bad = RowFilter::first_rows(8, 16, 8);
        assert_eq!(
            e(n.submit(
                0,
                NandCmd::Read {
                    ppa: ppa(0, 0, 0),
                    filter: bad
                }
            )),
            RamNandError::BadFilter
        );
        n.submit(
            0,
            NandCmd::Read {
                ppa: ppa(0, 0, 0),
                filter: RowFilter::first_rows(4, 16, 4),
            },
        )
        .unwrap();
        assert!(matches!(
            n.submit(
                0,
                NandCmd::Erase {
                    block: ppa(0, 1, 0).block()
                }
            ),
            Err(nb::Error::WouldBlock)
        ));
        let mut small = [0u8; 8];
        n.poll(&mut small).unwrap();
        assert!(matches!(
            n.poll(&mut small),
            Err(nb::Error::Other(RamNandError::BufferTooSmall {
                needed: 64
            }))
        ));
    }
}
