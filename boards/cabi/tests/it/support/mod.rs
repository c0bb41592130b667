//! Shared by the integration tests: recording vectors on the simulated
//! board, the vector file, replaying in-process, building the C harness.
#![allow(dead_code)]

pub mod cbuild;
pub mod recorder;
pub mod replay;
pub mod vectors;
pub mod workload;
