//! The in-storage attention engine on an OpenSSD board: [`HwEngine`], the
//! register driver, and [`BoardEngine`], the board's
//! [`firmware::hal::Engine`].

mod board;
mod driver;
mod error;

#[cfg(test)]
mod tests;

pub use board::{BoardEngine, Fallback, TopKCounts};
pub use driver::{
    DEFAULT_SPINS, EngineConfig, HwEngine, KernelJob, MAX_K, TOPK_REGS_VERSION, mask_halves,
};
pub use error::EngineError;
