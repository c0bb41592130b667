//! board-cabi's integration tests, one binary: the C ABI replays recorded
//! commands bit for bit (in process and from C), and the C header matches
//! the Rust side.

mod harness;
mod header;
mod support;
