//! Time for the device core (statistics only: nothing the core computes
//! depends on it). Either the emulator's clock or, without one,
//! [`CommandClock`].

use firmware::hal::Clock;

/// A monotonic nanosecond clock ([`Clock`]) told when each command starts.
pub trait TimeSource: Clock {
    /// Called once before each command runs.
    fn command_started(&mut self) {}
}

/// The clock of an emulator without one: the number of commands submitted
/// so far, read as nanoseconds. Monotonic, not physical.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandClock {
    commands: u64,
}

impl Clock for CommandClock {
    fn now_ns(&self) -> u64 {
        self.commands
    }
}

impl TimeSource for CommandClock {
    fn command_started(&mut self) {
        self.commands += 1;
    }
}
