//! The firmware's main loop, the same on every OpenSSD board: assemble the
//! board, start the device core on it and serve commands forever,
//! reporting on the console what cannot be returned to the host.

use core::fmt::Write;

use firmware::hal::{Clock, Engine, HostInterface, Nand};
use firmware::{Device, DeviceConfig};

use crate::board::{Hardware, OpenSsd};
use crate::clock::Ticks;
use crate::mmio::{DmaMemory, Regs};

/// Assembles board `B` from `hw` and [`serve`]s; never returns. A board
/// that cannot be assembled is reported and the CPU parks.
pub fn run<B, R, M, T, W>(hw: Hardware<R, M, T>, console: &mut W) -> !
where
    B: OpenSsd,
    R: Regs,
    M: DmaMemory,
    T: Ticks,
    W: Write,
{
    let mut board = match B::assemble(hw) {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(console, "instcsd: board bring-up failed: {e:?}");
            park()
        }
    };
    let _ = writeln!(
        console,
        "instcsd: {}, engine: {:?}",
        B::HOST.name,
        board.engine.fallback()
    );
    let config = B::config(&mut board);
    serve(board, config, console)
}

/// Runs the device core on `board`; never returns. A start-up failure is
/// reported and the CPU parks; errors of single commands are reported and
/// serving goes on (the core has already completed the command with an
/// error status where it could).
pub fn serve<B, W>(board: B, config: DeviceConfig, console: &mut W) -> !
where
    B: HostInterface + Nand + Engine + Clock,
    W: Write,
{
    // Through the sequence journal, as every board boots.
    let mut device = match Device::boot(board, config) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(console, "instcsd: device core did not start: {e:?}");
            park()
        }
    };
    let _ = writeln!(console, "instcsd: serving");
    loop {
        if let Err(e) = device.poll() {
            let _ = writeln!(console, "instcsd: {e:?}");
        }
    }
}

/// Stops here for good (a debugger can still attach).
pub fn park() -> ! {
    loop {
        core::hint::spin_loop();
    }
}
