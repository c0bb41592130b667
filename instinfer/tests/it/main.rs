//! instinfer's integration tests, one binary: the CLI as a process, the
//! real model with its attention in the simulated drive, and the NVMe/TCP
//! target and initiator end to end.

mod cli;
mod fabric;
mod model;
