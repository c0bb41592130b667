//! The in-storage attention engine on an OpenSSD board: [`HwEngine`], the
//! register driver, and [`BoardEngine`], the board's
//! [`firmware::hal::Engine`].

mod board;
mod driver;
mod error;

#[cfg(test)]
mod tests;

pub use board::{BoardEngine, Fallback};
pub use driver::{DEFAULT_SPINS, EngineConfig, HwEngine, KernelJob, mask_halves};
pub use error::EngineError;
