//! Decoding compared bit for bit with gguf-py, the numpy reference that
//! ships with llama.cpp (`gguf.quants.dequantize`), for every kind: random
//! blocks (seeded, float fields any finite value) are written to a temp
//! file, a python3 script decodes them to little-endian f32, and every
//! element must have the same bits as `QTensor::dequantize`.
//!
//! Checked against gguf 0.19.0 (PyPI) with numpy 2.4.6. The interpreter is
//! `$INSTINFER_GGUF_PYTHON`, else `python3`; without an importable `gguf`
//! the test skips (fails under `CI=true`, see `testkit::require`).
//! `.ci/run` installs it into `target/gguf-venv`.

use std::path::PathBuf;
use std::process::Command;

use super::random_rows::{Floats, random_tensor};
use crate::TensorKind;

const SCRIPT: &str = r#"
import sys
import numpy as np
from importlib.metadata import version
from gguf.constants import GGMLQuantizationType
from gguf.quants import dequantize
folder = sys.argv[1]
for name in sys.argv[2:]:
    raw = np.fromfile(f"{folder}/{name}.in", dtype=np.uint8)
    out = dequantize(raw, GGMLQuantizationType[name])
    np.ascontiguousarray(out, dtype="<f4").tofile(f"{folder}/{name}.out")
print("gguf", version("gguf"), "numpy", np.__version__)
"#;

fn python() -> String {
    std::env::var("INSTINFER_GGUF_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn has_gguf(python: &str) -> bool {
    Command::new(python)
        .args(["-c", "import gguf.quants"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A fresh folder under the temp dir, removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn dequantize_matches_gguf_py_bit_for_bit() {
    let py = python();
    if !testkit::require(
        has_gguf(&py),
        "gguf-py",
        "comparing dequantization with gguf-py (pip install gguf; INSTINFER_GGUF_PYTHON)",
    ) {
        return;
    }
    let dir =
        TempDir(std::env::temp_dir().join(format!("instinfer-gguf-py-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).expect("temp dir");
    // 3 rows of 1024: four K super-blocks or 32 small blocks per row.
    let (rows, cols) = (3, 1024);
    let tensors: Vec<_> = TensorKind::ALL
        .into_iter()
        .enumerate()
        .map(|(k, kind)| {
            (
                kind,
                random_tensor(kind, rows, cols, 900 + k as u64, Floats::AnyFinite),
            )
        })
        .collect();
    for (kind, t) in &tensors {
        std::fs::write(dir.0.join(format!("{kind}.in")), t.data()).expect("write blocks");
    }
    let out = Command::new(&py)
        .arg("-c")
        .arg(SCRIPT)
        .arg(&dir.0)
        .args(tensors.iter().map(|(kind, _)| kind.to_string()))
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "gguf-py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "compared with {}",
        String::from_utf8_lossy(&out.stdout).trim()
    );
    for (kind, t) in &tensors {
        let bytes = std::fs::read(dir.0.join(format!("{kind}.out"))).expect("read output");
        let theirs: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let ours: Vec<u32> = t.dequantize().iter().map(|v| v.to_bits()).collect();
        assert_eq!(ours.len(), theirs.len(), "{kind}: element count");
        let nan = ours.iter().filter(|b| f32::from_bits(**b).is_nan()).count();
        assert_eq!(nan, 0, "{kind}: the inputs are meant to be NaN-free");
        if let Some(i) = ours.iter().zip(&theirs).position(|(a, b)| a != b) {
            panic!(
                "{kind}: element {i} (row {}, col {}) is {} ({:#010x}) here, {} ({:#010x}) in gguf-py",
                i / cols,
                i % cols,
                f32::from_bits(ours[i]),
                ours[i],
                f32::from_bits(theirs[i]),
                theirs[i]
            );
        }
    }
}
