//! [`RunError`]: why a job of the CLI failed, and the exit status each
//! failure gives the process.

use thiserror::Error;

use crate::npy::NpyError;
use host_driver::backend::BackendError;
use host_driver::csd::CsdError;

/// Why a job failed.
#[derive(Debug, Error)]
pub enum RunError {
    /// Bad input: a file, a shape, a dtype or a parameter (exit status 2).
    #[error("{0}")]
    Input(String),
    /// A `.npy` file could not be read or written (exit status 2).
    #[error("{path}: {source}")]
    Npy {
        /// The file.
        path: String,
        /// What is wrong with it.
        source: NpyError,
    },
    /// The device failed (exit status 1).
    #[error("device: {0}")]
    Device(#[from] CsdError),
    /// A backend failed (exit status 1).
    #[error("backend: {0}")]
    Backend(#[from] BackendError),
    /// The model could not be obtained (exit status 2).
    #[error("model: {0}")]
    Fetch(#[from] model::fetch::FetchError),
    /// The model failed while running (exit status 1).
    #[error("model: {0}")]
    Model(#[from] model::ModelError),
    /// A backend failed inside the model's attention (exit status 1).
    #[error("attention: {0}")]
    Attention(String),
    /// The NVMe/TCP target failed (exit status 2 for a configuration it
    /// cannot serve, such as an address in use; 1 otherwise).
    #[error("serve: {0}")]
    Serve(#[from] nvme_tcp::target::TargetError),
    /// Stopped by the user (Ctrl-C) after cleaning up (exit status 130).
    #[error("interrupted after {tokens} generated tokens; the drive's sequences are closed")]
    Interrupted {
        /// Tokens generated before the stop.
        tokens: usize,
    },
    /// llama.cpp, the yardstick of `bench model --against llama.cpp`,
    /// could not be installed or run (exit status 1).
    #[error("llama.cpp: {0}")]
    LlamaCpp(#[from] crate::run::bench_llama::LlamaCppError),
    /// Writing a result failed (exit status 1).
    #[error("{path}: {reason}")]
    Output {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

impl RunError {
    /// Process exit status: 2 for bad input, 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Input(_) | Self::Npy { .. } | Self::Fetch(_) => 2,
            Self::Interrupted { .. } => 130,
            Self::Serve(e) => match e {
                nvme_tcp::target::TargetError::Board(_) => 1,
                _ => 2,
            },
            Self::Device(_)
            | Self::Backend(_)
            | Self::Model(_)
            | Self::Attention(_)
            | Self::LlamaCpp(_)
            | Self::Output { .. } => 1,
        }
    }
}

/// Shorthand for [`RunError::Input`].
pub(crate) fn input(msg: impl Into<String>) -> RunError {
    RunError::Input(msg.into())
}
