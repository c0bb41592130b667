//! The InstCSD firmware image of the Cosmos+ board (`armv7a-none-eabi`):
//! the Zynq-7000 FSBL loads it into DDR and jumps to `_start` on CPU 0;
//! [`rt`] sets up the stack, the MMU and caches, and the heap, then the
//! board is assembled from its fixed windows and the device core serves
//! NVMe commands forever (`board_openssd::serve::run`).
//!
//! On a host build this is a stub that says where the firmware runs.
#![cfg_attr(target_os = "none", no_std, no_main)]
#![deny(unsafe_code)]

#[cfg(all(target_arch = "arm", target_os = "none"))]
mod rt;

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "cosmos-plus-firmware is the Cosmos+ board's firmware: build it with \
         `cargo build -p board-cosmos-plus --target armv7a-none-eabi` or \
         `cargo xtask flash --board cosmos-plus`"
    );
    std::process::exit(2);
}
