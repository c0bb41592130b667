//! host-driver's integration tests, one binary (a change links once):
//! the client library against the simulated board, the QEMU boards and
//! the Linux NVMe paths, and the cross-crate scenarios of the simulated
//! CSD ([`sim`]).

mod faults;
mod link;
mod linux_passthru;
mod p2p;
mod power_loss;
mod power_loss_gc;
mod props_power;
mod qemu;
mod sim;
mod soak;
mod ssd_offload;
