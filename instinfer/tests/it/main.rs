//! instinfer's integration tests, one binary: the CLI as a process, the
//! real model with its attention in the simulated drive (perplexity and
//! passkey retrieval), and the NVMe/TCP target and initiator end to end.

mod cli;
mod fabric;
mod fabric_auth;
mod model;
mod netns;
mod passkey;
