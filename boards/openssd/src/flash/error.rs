//! Controller-level failures of the flash array (media failures are
//! [`firmware::hal::NandStatus`] values instead).

/// A failure of [`super::FlashArray`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashError {
    /// The address is outside the geometry.
    BadAddress,
    /// A program of other than one page.
    WrongLength {
        /// Bytes given.
        len: usize,
    },
    /// The read's row filter does not fit a page.
    BadFilter,
    /// The poll buffer cannot hold a read's kept bytes.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
    },
    /// A die did not finish its command within the poll budget; the
    /// command (tag `tag`) is abandoned.
    Timeout {
        /// Channel.
        channel: u8,
        /// Way.
        way: u8,
        /// The command's tag.
        tag: u32,
    },
    /// The DMA window cannot hold a slot for every die, or pages are
    /// larger than a slot.
    WindowTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes there.
        have: usize,
    },
    /// The window is not addressable by the controllers' 32-bit masters.
    WindowAboveFourGib,
}
