//! The board's error types: [`SimError`] (host side, queue engine, set-up)
//! and [`NandError`] (flash controller misuse). Media failures are not
//! errors: they are [`firmware::hal::NandStatus`] values.

use thiserror::Error;

/// A failure of the simulated board or of its use by the host.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SimError {
    /// A DMA touched a host bus address with no memory behind it.
    #[error("no host memory at bus address {0:#x}")]
    BadAddress(u64),
    /// `enable` was given an unusable admin queue size.
    #[error("admin queue size {0} not in 2..=4096")]
    InvalidQueueSize(u16),
    /// `enable` was given a queue base that is not 4 KiB aligned.
    #[error("queue base {0:#x} is not page aligned")]
    MisalignedQueue(u64),
    /// A completion names a submission queue that does not exist.
    #[error("submission queue {0} does not exist")]
    NoSuchQueue(u16),
    /// A flash controller error.
    #[error(transparent)]
    Nand(#[from] NandError),
    /// The device core refused to start or failed.
    #[error("device core: {0}")]
    Device(String),
    /// The configuration is inconsistent.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// Misuse of the flash controllers (the firmware's bug, never the media's).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum NandError {
    /// The board lost power (simulated): nothing more reaches the flash.
    #[error("power lost")]
    PowerLost,
    /// The address lies outside the geometry.
    #[error("address outside the geometry: {0}")]
    OutOfRange(String),
    /// Program of a page that is not erased.
    #[error("program of a page that is not erased: {0}")]
    NotErased(String),
    /// Program of a page below the block's write pointer.
    #[error("out-of-order program: page {page} but block is at page {next}")]
    OutOfOrder {
        /// The page asked for.
        page: u32,
        /// The lowest page still programmable.
        next: u32,
    },
    /// Program data is not exactly one page.
    #[error("program data of {actual} bytes, page is {expected}")]
    DataLength {
        /// Page size.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
    /// The read filter does not fit the page.
    #[error("row filter does not fit a {0}-byte page")]
    BadFilter(usize),
    /// The poll buffer is smaller than the read's kept bytes.
    #[error("poll buffer of {actual} bytes, read keeps {needed}")]
    BufferTooSmall {
        /// Bytes the completion carries.
        needed: usize,
        /// Bytes of the buffer.
        actual: usize,
    },
}
