//! Blocks lent to another writer of the same flash: the firmware's
//! sequence journal takes its blocks from the free pool, so its frequent
//! small writes wear the array evenly instead of two fixed blocks. A lent
//! block is neither free nor collectable; its borrower erases and
//! programs it directly and gives it back (its content then unknown,
//! erased when next opened) or reports it grown bad.

use crate::address::BlockAddr;
use crate::error::FtlError;
use crate::ftl::Ftl;

impl Ftl {
    /// Lends the least-erased free block of the die with the most free
    /// blocks; its erase (the borrower's first act) is counted.
    pub fn lend_block(&mut self) -> Result<BlockAddr, FtlError> {
        let i = self.blocks.lend().ok_or(FtlError::NoSpace)?;
        self.counters.blocks_erased += 1;
        Ok(self.blocks.addr(i))
    }

    /// Lends free block `b` as it is, its content kept (a boot keeping an
    /// earlier journal block until the new journal has a snapshot).
    pub fn hold_block(&mut self, b: BlockAddr) -> Result<(), FtlError> {
        let i = self.blocks.index(b).ok_or(FtlError::InvalidAddress)?;
        if self.blocks.hold(i) {
            Ok(())
        } else {
            Err(FtlError::InvalidAddress)
        }
    }

    /// Takes lent block `b` back into the free pool.
    pub fn return_block(&mut self, b: BlockAddr) -> Result<(), FtlError> {
        let i = self.blocks.index(b).ok_or(FtlError::InvalidAddress)?;
        if self.blocks.give_back(i) {
            Ok(())
        } else {
            Err(FtlError::InvalidAddress)
        }
    }

    /// Whether block `b` is lent.
    pub fn is_lent_block(&self, b: BlockAddr) -> bool {
        self.blocks.index(b).is_some_and(|i| self.blocks.is_lent(i))
    }

    /// Lent block `b` failed an erase or a program: retired for good.
    pub fn retire_lent_block(&mut self, b: BlockAddr) -> Result<(), FtlError> {
        let i = self.blocks.index(b).ok_or(FtlError::InvalidAddress)?;
        if !self.blocks.is_lent(i) {
            return Err(FtlError::InvalidAddress);
        }
        self.blocks.retire(i);
        Ok(())
    }
}
