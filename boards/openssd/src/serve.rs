//! The firmware's main loop, the same on every OpenSSD board: start the
//! device core on the board and serve commands forever, reporting on the
//! console what cannot be returned to the host.

use core::fmt::Write;

use firmware::hal::{Clock, Engine, HostInterface, Nand};
use firmware::{Device, DeviceConfig};

/// Runs the device core on `board`; never returns. A start-up failure is
/// reported and the CPU parks; errors of single commands are reported and
/// serving goes on (the core has already completed the command with an
/// error status where it could).
pub fn serve<B, W>(board: B, config: DeviceConfig, console: &mut W) -> !
where
    B: HostInterface + Nand + Engine + Clock,
    W: Write,
{
    let mut device = match Device::new(board, config) {
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
