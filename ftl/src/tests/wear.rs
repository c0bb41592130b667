//! The wear record: erase counts and retired blocks carried into a new
//! FTL, which then levels from them.

use super::api::{cfg, tiny};
use crate::{Ftl, FtlError, RETIRED};

#[test]
fn wear_survives_into_a_new_life_and_steers_allocation() {
    let geo = tiny();
    let mut old = Ftl::new(cfg(geo, 1 << 20)).unwrap();
    // Wear some blocks through the journal's lending, retire one.
    let mut worn = alloc::vec::Vec::new();
    for _ in 0..3 {
        let b = old.lend_block().unwrap();
        worn.push(b);
    }
    old.retire_lent_block(worn[2]).unwrap();
    let table = old.wear_table();
    assert_eq!(table.len() as u64, geo.total_blocks());
    assert_eq!(table.iter().filter(|&&c| c == RETIRED).count(), 1);
    assert_eq!(table.iter().filter(|&&c| c == 1).count(), 2);

    let mut new = Ftl::new(cfg(geo, 1 << 20)).unwrap();
    new.assume_unerased();
    new.restore_wear(&table).unwrap();
    assert_eq!(new.wear_table(), table);
    assert_eq!(new.stats().bad_blocks, 1);
    assert_eq!(new.erase_count(worn[0]), 1);
    // The next lend avoids the worn blocks (least erased first).
    let b = new.lend_block().unwrap();
    assert!(!worn.contains(&b), "{b:?}");
    new.audit().unwrap();
}

#[test]
fn a_table_of_another_size_or_after_use_is_refused() {
    let geo = tiny();
    let mut f = Ftl::new(cfg(geo, 1 << 20)).unwrap();
    let table = f.wear_table();
    assert_eq!(f.restore_wear(&table[1..]), Err(FtlError::InvalidConfig));
    f.lend_block().unwrap();
    assert_eq!(f.restore_wear(&table), Err(FtlError::InvalidConfig));
}
