//! [`EmuBoard`]: the four HAL traits of the device core inside an
//! emulator — the emulator's host memory ([`CommandHost`]), flash in RAM
//! ([`RamNand`], with the NFC row filter), the engine in software
//! ([`SoftEngine`]) and a [`TimeSource`].

use board_ram::RamNand;
use firmware::hal::{Parts, SoftEngine};

use crate::host::CommandHost;

/// The board; see the module docs. Its `clock` is a
/// [`TimeSource`](crate::clock::TimeSource).
pub type EmuBoard<D, T> = Parts<CommandHost<D>, RamNand, SoftEngine, T>;
