//! The wear record: every block's erase count, and which blocks are
//! retired, as one table the firmware keeps in flash (its journal) so
//! that wear levelling and the bad-block list outlive a power cut. The
//! FTL's maps do not (the KV cache does not survive power by contract);
//! its wear must, or every boot would level from zero.

use alloc::vec::Vec;

use crate::error::FtlError;
use crate::ftl::Ftl;

/// A retired block's entry in the table.
pub const RETIRED: u32 = u32::MAX;

impl Ftl {
    /// Every block's erase count in flat order (die by die, see
    /// `Geometry::die_index`), [`RETIRED`] for a retired block.
    pub fn wear_table(&self) -> Vec<u32> {
        (0..self.blocks.len())
            .map(|i| {
                if self.blocks.is_bad(i) {
                    RETIRED
                } else {
                    self.blocks.info(i).map_or(0, |b| b.erase_count)
                }
            })
            .collect()
    }

    /// Takes the erase counts and retired blocks of `table` (a
    /// [`Self::wear_table`] of an earlier life) before anything was
    /// allocated: counts are raised to the table's, its retired blocks
    /// are retired. Fails, changing nothing, if the table does not match
    /// the geometry or a block is already in use.
    pub fn restore_wear(&mut self, table: &[u32]) -> Result<(), FtlError> {
        if table.len() != self.blocks.len() {
            return Err(FtlError::InvalidConfig);
        }
        if (0..self.blocks.len()).any(|i| !self.blocks.is_free(i) && !self.blocks.is_bad(i)) {
            return Err(FtlError::InvalidConfig);
        }
        for (i, &c) in table.iter().enumerate() {
            if c == RETIRED {
                self.blocks.retire(i);
            }
        }
        self.blocks.raise_erase_counts(
            table
                .iter()
                .enumerate()
                .filter(|&(_, &c)| c != RETIRED)
                .map(|(i, &c)| (i, c)),
        );
        Ok(())
    }
}
