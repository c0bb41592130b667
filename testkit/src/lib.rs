//! Test-only helpers shared by the workspace's tests.
//!
//! | module | owns |
//! | --- | --- |
//! | [`data`] | paths of the text corpora kept in the repository's `data/` |
//! | [`tool`] | the rule for a test whose external tool (gcc, iverilog, QEMU, a font) is absent |
//!
//! Nothing here is linked into a product binary: every user is a
//! `[dev-dependencies]` entry.

#![forbid(unsafe_code)]

pub mod data;
pub mod tool;

pub use tool::require;
