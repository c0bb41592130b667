//! A GGUF file holding a tensor of every supported kind, built with
//! `GgufWriter`, parses back with the right kind, shape and bytes; a type
//! this crate does not decode (IQ2_XXS) is refused by name; a K-quant row
//! that is not whole super-blocks is reported as corrupt.

use attention::testdata::SplitMix64;
use model::gguf::GgufWriter;
use model::{Gguf, ModelError, QTensor, TensorKind};

/// 3 rows of 512 (two K super-blocks), random bytes: only the bytes and
/// their bookkeeping are checked here, decoding is tested in `quant`.
fn sample(kind: TensorKind, seed: u64) -> QTensor {
    let mut rng = SplitMix64::new(seed);
    let len = kind.row_bytes(512).expect("whole blocks") as usize * 3;
    let data = (0..len).map(|_| rng.next_u64() as u8).collect();
    QTensor::new(kind, 3, 512, data).expect("tensor")
}

#[test]
fn every_kind_round_trips_through_a_gguf_file() {
    let mut w = GgufWriter::new();
    let tensors: Vec<_> = TensorKind::ALL
        .into_iter()
        .enumerate()
        .map(|(i, k)| (format!("w.{k}"), sample(k, i as u64)))
        .collect();
    for (name, t) in &tensors {
        w.tensor(name, &[512, 3], t.kind(), t.data().to_vec());
    }
    let g = Gguf::parse(w.to_bytes()).expect("parse");
    for (name, t) in &tensors {
        let info = g.tensor_info(name).expect("info");
        assert_eq!(info.ggml_type, t.kind().ggml_type(), "{name}");
        assert_eq!(info.dims, [512, 3], "{name}");
        assert_eq!(info.size, Some(t.data().len() as u64), "{name}");
        assert_eq!(info.kind().expect("kind"), t.kind());
        let back = g.tensor(name).expect("tensor");
        assert_eq!((back.kind(), back.rows(), back.cols()), (t.kind(), 3, 512));
        assert_eq!(&back, t, "{name}");
    }
}

#[test]
fn an_unsupported_type_is_refused_by_name() {
    let mut w = GgufWriter::new();
    // IQ2_XXS: 66 bytes per 256 elements.
    w.raw_tensor("iq2", &[256], 16, vec![0; 66]);
    let g = Gguf::parse(w.to_bytes()).expect("parse");
    let err = g.tensor("iq2").expect_err("IQ2_XXS is not decoded");
    assert!(
        matches!(err, ModelError::UnsupportedTensorType { ggml_type: 16, .. }),
        "{err}"
    );
    let msg = err.to_string();
    for part in ["iq2", "16 (IQ2_XXS)", "12 Q4_K", "14 Q6_K", "30 BF16"] {
        assert!(msg.contains(part), "`{part}` missing from: {msg}");
    }
}

#[test]
fn a_partial_super_block_row_is_corrupt() {
    let mut w = GgufWriter::new();
    w.raw_tensor(
        "half.q4k",
        &[128, 2],
        TensorKind::Q4_K.ggml_type(),
        vec![0; 144],
    );
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(ModelError::Corrupt { .. })
    ));
}
