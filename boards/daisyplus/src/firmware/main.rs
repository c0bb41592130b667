//! The InstCSD firmware image of the Daisyplus board (`aarch64-unknown-
//! none`): the ZynqMP FSBL loads it into DDR and starts it on A53 core 0
//! at EL3; [`rt`] sets up the MMU, caches, stack and heap, then the board
//! is assembled from its fixed windows and the device core serves NVMe
//! commands forever (`board_openssd::serve::run`).
//!
//! On a host build this is a stub that says where the firmware runs.
#![cfg_attr(target_os = "none", no_std, no_main)]
#![deny(unsafe_code)]

#[cfg(all(target_arch = "aarch64", target_os = "none"))]
mod rt;

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "daisyplus-firmware is the Daisyplus board's firmware: build it with \
         `cargo build -p board-daisyplus --target aarch64-unknown-none` or \
         `cargo xtask flash --board daisyplus`"
    );
    std::process::exit(2);
}
