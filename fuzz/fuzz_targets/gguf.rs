//! The GGUF reader on arbitrary files: a model or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = model::Gguf::parse(data.to_vec()) {
        let names: Vec<String> = g.tensors().iter().map(|t| t.name.clone()).collect();
        for n in names {
            let _ = g.tensor(&n);
        }
    }
});
