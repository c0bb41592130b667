//! The InstCSD device core behind a C ABI, for NVMe emulators (an
//! NVMeVirt extension, FEMU, a QEMU device model): the emulator keeps its
//! queues, doorbells and interrupts and hands each InstCSD command to
//! `instcsd_submit`, which runs it to completion — moving its data through
//! the emulator's DMA callbacks at the SQE's PRP addresses — and returns
//! the 16-byte CQE. The C API is `include/instcsd.h`; `README.md` shows how
//! to wire it into NVMeVirt and FEMU.
//!
//! | module | owns |
//! | --- | --- |
//! | [`abi`] | the header's structs and constants, `#[repr(C)]` |
//! | [`config`] | [`Config`]: validation, defaults (the simulated board's), the core's `DeviceConfig` |
//! | [`host`] | [`CommandHost`]: the core's host interface, one command at a time, DMA via [`HostDma`] |
//! | [`clock`] | [`TimeSource`]: the emulator's clock or a command count |
//! | [`board`] | [`EmuBoard`]: host + `RamNand` + `SoftEngine` + clock as the four HAL traits |
//! | [`instance`] | [`Instance`]: one controller, the safe Rust API under the C one |
//! | [`error`] | [`CabiError`], [`ConfigError`] and their `INSTCSD_E*` codes |
//! | `guard` | catching panics at the boundary |
//! | `ffi` | the `extern "C"` functions; the only `unsafe` code |
//!
//! # Targets
//!
//! - Hosted (`x86_64-unknown-linux-gnu`, for FEMU/QEMU or tests): `std` is
//!   linked (the static library needs its panic runtime); memory comes from
//!   the system allocator and the `alloc`/`free` callbacks are ignored.
//! - `x86_64-unknown-none` (soft-float, as for a kernel module): no `std`;
//!   the global allocator forwards to the `alloc`/`free` callbacks of the
//!   first successful `instcsd_create` (before it, allocation returns null;
//!   nothing here allocates before then), and a panic handler reports to
//!   the `panic` callback and spins.
//!
//! # Panics
//!
//! `panic = "abort"` cannot be set per crate, so the boundary is guarded
//! instead: inputs are checked (null and misaligned pointers, every config
//! field) and every command problem is an NVMe status, so no panic is
//! expected on any input. Should one happen anyway: on hosted targets each
//! C function runs under `catch_unwind`; the call returns `INSTCSD_EIO`,
//! the `panic` callback gets the message and the device is poisoned (every
//! later submit returns `INSTCSD_EIO`). On `x86_64-unknown-none` the panic
//! handler calls the `panic` callback and never returns. Allocation failure
//! is not a panic: on hosted targets it aborts (Rust's default), on
//! `x86_64-unknown-none` it ends in the panic handler.
#![no_std]
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

extern crate alloc;
// The static library for a hosted target needs std's panic runtime and
// allocator; the kernel target has neither.
#[cfg(not(target_os = "none"))]
extern crate std;

pub mod abi;
pub mod board;
pub mod clock;
pub mod config;
pub mod error;
pub mod host;
pub mod instance;

mod guard;
#[cfg(test)]
mod testmem;

// The C ABI: raw pointers and callbacks from the emulator.
#[allow(unsafe_code)]
mod ffi;

pub use board::EmuBoard;
pub use clock::{CommandClock, TimeSource};
pub use config::Config;
pub use error::{CabiError, ConfigError};
pub use host::{CommandHost, DmaError, HostDma};
pub use instance::Instance;
