//! Blocks lent to the journal: out of the pool, erases counted, back
//! unerased, retired when they fail.

use super::api::{cfg, tiny};
use crate::{BlockAddr, Ftl, FtlError};

#[test]
fn lent_blocks_leave_the_pool_and_come_back_unerased() {
    let geo = tiny();
    let mut f = Ftl::new(cfg(geo, 1 << 20)).unwrap();
    let free = f.stats().free_blocks;
    let a = f.lend_block().unwrap();
    let b = f.lend_block().unwrap();
    assert_ne!(a, b);
    assert_eq!(f.stats().free_blocks, free - 2);
    assert_eq!(f.erase_count(a), 1, "the borrower's erase is counted");
    assert_eq!(f.return_block(a), Ok(()));
    assert_eq!(f.return_block(a), Err(FtlError::InvalidAddress));
    assert_eq!(f.stats().free_blocks, free - 1);
    // The next lend prefers a block erased fewer times than `a`.
    let c = f.lend_block().unwrap();
    assert_ne!(c, a);
    assert_eq!(f.retire_lent_block(b), Ok(()));
    assert_eq!(f.stats().bad_blocks, 1);
    assert_eq!(f.retire_lent_block(b), Err(FtlError::InvalidAddress));
    f.audit().unwrap();
}

#[test]
fn a_held_block_must_be_free_and_lending_stops_when_none_is() {
    let geo = tiny();
    let mut f = Ftl::new(cfg(geo, 1 << 20)).unwrap();
    let b = BlockAddr {
        channel: 0,
        way: 0,
        block: 1,
    };
    assert_eq!(f.hold_block(b), Ok(()));
    assert_eq!(f.hold_block(b), Err(FtlError::InvalidAddress));
    assert_eq!(f.erase_count(b), 0, "held as it is, not erased");
    while f.lend_block().is_ok() {}
    assert_eq!(f.stats().free_blocks, 0);
    assert_eq!(f.lend_block(), Err(FtlError::NoSpace));
    assert_eq!(f.return_block(b), Ok(()));
    assert_eq!(f.lend_block(), Ok(b));
}
