//! The C side: the header is what cbindgen makes of the crate, and the C
//! example builds against it and runs.

mod example;
mod header;
