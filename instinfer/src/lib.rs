//! The `instinfer` CLI's jobs as a library, so tests and benches call
//! exactly what the command runs, and the assembly of devices from a spec
//! string. The client library it drives is `host-driver`; `device`
//! (`DeviceSpec`, `AnyTransport`) is `offload`'s, re-exported.
//!
//! | module | owns |
//! | --- | --- |
//! | [`error`] | [`RunError`]: why a job failed, with its exit status |
//! | [`run`] | the jobs: generate, eval, attend, demo, benches |
//! | [`cost`] | the paper's systems in a cost model, the CSD side measured on the simulated board |
//! | [`npy`] | NumPy `.npy` files (the CLI's array format) |
#![forbid(unsafe_code)]

pub mod cost;
pub use offload::device;
pub mod error;
pub mod npy;
pub mod run;

pub use error::RunError;
