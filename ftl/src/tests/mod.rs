//! Crate tests: a reference model of every stream's tokens checked against
//! the FTL through a test NAND (testnand.rs).

mod api;
mod faults;
mod gc;
mod lend;
mod model;
mod props;
mod wear;
