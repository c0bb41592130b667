//! Time for the device core (statistics only: nothing the core computes
//! depends on it). Either the emulator's clock or, without one,
//! [`CommandClock`].

/// A monotonic nanosecond clock.
pub trait TimeSource {
    /// Nanoseconds since some fixed start.
    fn now_ns(&self) -> u64;
    /// Called once before each command runs.
    fn command_started(&mut self) {}
}

/// The clock of an emulator without one: the number of commands submitted
/// so far, read as nanoseconds. Monotonic, not physical.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandClock {
    commands: u64,
}

impl TimeSource for CommandClock {
    fn now_ns(&self) -> u64 {
        self.commands
    }

    fn command_started(&mut self) {
        self.commands += 1;
    }
}
