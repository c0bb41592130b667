//! Reader tests: files built with `GgufWriter` parse back exactly; every
//! truncation and random corruption gives an error, never a panic.

use proptest::prelude::*;

use super::*;
use crate::{ModelError, QTensor, TensorKind};

fn all_values() -> Vec<(&'static str, Value)> {
    vec![
        ("u8", Value::U8(200)),
        ("i8", Value::I8(-5)),
        ("u16", Value::U16(60_000)),
        ("i16", Value::I16(-30_000)),
        ("u32", Value::U32(4_000_000_000)),
        ("i32", Value::I32(-7)),
        ("u64", Value::U64(1 << 40)),
        ("i64", Value::I64(-(1 << 40))),
        ("f32", Value::F32(1e-5)),
        ("f64", Value::F64(100000.0)),
        ("bool", Value::Bool(true)),
        ("str", Value::String("smollm ✓".into())),
        (
            "arr.str",
            Value::Array(Array::String(vec!["Ġ t".into(), "".into(), "é".into()])),
        ),
        ("arr.i32", Value::Array(Array::I32(vec![1, 3, -3]))),
        ("arr.f32", Value::Array(Array::F32(vec![0.5, -2.0]))),
        ("arr.u8", Value::Array(Array::U8(vec![1, 2, 3]))),
        ("arr.bool", Value::Array(Array::Bool(vec![true, false]))),
        ("arr.empty", Value::Array(Array::U64(vec![]))),
        (
            "arr.nested",
            Value::Array(Array::Array(vec![
                Array::I16(vec![1, -1]),
                Array::F64(vec![2.5]),
                Array::String(vec![]),
            ])),
        ),
    ]
}

fn sample_tensors() -> Vec<(String, QTensor)> {
    let values: Vec<f32> = (0..2 * 64)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0)
        .collect();
    [
        TensorKind::F32,
        TensorKind::F16,
        TensorKind::Q4_1,
        TensorKind::Q8_0,
    ]
    .into_iter()
    .map(|k| {
        (
            format!("t.{k}"),
            QTensor::quantize(k, 2, 64, &values).expect("quantize"),
        )
    })
    .collect()
}

fn sample_file() -> Vec<u8> {
    let mut w = GgufWriter::new();
    for (k, v) in all_values() {
        w.kv(k, v);
    }
    for (name, t) in sample_tensors() {
        w.tensor(&name, &[64, 2], t.kind(), t.data().to_vec());
    }
    w.to_bytes()
}

#[test]
fn round_trip_of_every_value_type_and_tensor_kind() {
    let g = Gguf::parse(sample_file()).expect("parse");
    assert_eq!(g.version(), 3);
    let got: Vec<(&str, &Value)> = g.metadata().collect();
    let want = all_values();
    assert_eq!(got.len(), want.len());
    for ((gk, gv), (wk, wv)) in got.iter().zip(&want) {
        assert_eq!((*gk, *gv), (*wk, wv));
    }
    for (name, t) in sample_tensors() {
        let info = g.tensor_info(&name).expect("info");
        assert_eq!(info.dims, [64, 2]);
        assert_eq!(info.kind().expect("kind"), t.kind());
        assert_eq!(g.tensor(&name).expect("tensor"), t);
    }
}

#[test]
fn typed_getters() {
    let g = Gguf::parse(sample_file()).expect("parse");
    assert_eq!(g.get_u32("u8").expect("u8"), 200);
    assert_eq!(g.get_u32("u32").expect("u32"), 4_000_000_000);
    assert_eq!(g.get_i32("i16").expect("i16"), -30_000);
    assert_eq!(g.get_u64("u64").expect("u64"), 1 << 40);
    assert_eq!(g.get_f32("f32").expect("f32"), 1e-5);
    assert_eq!(g.get_f32("f64").expect("f64"), 100000.0);
    assert!(g.get_bool("bool").expect("bool"));
    assert_eq!(g.get_str("str").expect("str"), "smollm ✓");
    assert_eq!(g.get_str_array("arr.str").expect("strs"), ["Ġ t", "", "é"]);
    assert_eq!(g.get_i32_array("arr.i32").expect("i32s"), [1, 3, -3]);
    assert!(matches!(
        g.get_u32("i32"),
        Err(ModelError::WrongType { .. })
    ));
    assert!(matches!(
        g.get_u32("u64"),
        Err(ModelError::WrongType { .. })
    ));
    assert!(matches!(g.get_str("u8"), Err(ModelError::WrongType { .. })));
    assert!(matches!(
        g.get_i32_array("arr.str"),
        Err(ModelError::WrongType { .. })
    ));
    assert!(matches!(g.get_u32("nope"), Err(ModelError::MissingKey(_))));
    assert!(matches!(
        g.tensor("nope"),
        Err(ModelError::MissingTensor(_))
    ));
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = sample_file();
    for len in 0..bytes.len() {
        assert!(
            Gguf::parse(bytes[..len].to_vec()).is_err(),
            "prefix of {len} bytes parsed"
        );
    }
}

fn header(n_tensors: u64, n_kv: u64) -> Vec<u8> {
    let mut b = MAGIC.to_le_bytes().to_vec();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&n_tensors.to_le_bytes());
    b.extend_from_slice(&n_kv.to_le_bytes());
    b
}

fn key(b: &mut Vec<u8>, k: &str, tag: u32) {
    b.extend_from_slice(&(k.len() as u64).to_le_bytes());
    b.extend_from_slice(k.as_bytes());
    b.extend_from_slice(&tag.to_le_bytes());
}

#[test]
fn huge_counts_are_errors_not_allocations() {
    assert!(matches!(
        Gguf::parse(header(1 << 60, 0)),
        Err(ModelError::Corrupt { .. })
    ));
    assert!(matches!(
        Gguf::parse(header(0, 1_000_000_000_000_000_000)),
        Err(ModelError::Corrupt { .. })
    ));
    for elem in [0u32, 8, 9] {
        let mut b = header(0, 1);
        key(&mut b, "a", 9);
        b.extend_from_slice(&elem.to_le_bytes());
        b.extend_from_slice(&1_000_000_000_000_000_000u64.to_le_bytes());
        assert!(
            matches!(Gguf::parse(b), Err(ModelError::Corrupt { .. })),
            "element type {elem}"
        );
    }
    let mut b = header(0, 1);
    key(&mut b, "s", 8);
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(Gguf::parse(b), Err(ModelError::Truncated { .. })));
}

#[test]
fn deep_nesting_is_rejected() {
    let mut b = header(0, 1);
    key(&mut b, "deep", 9);
    for _ in 0..100 {
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes());
    }
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    assert!(matches!(Gguf::parse(b), Err(ModelError::Corrupt { .. })));
}

#[test]
fn bad_headers_and_tensor_tables() {
    assert!(matches!(
        Gguf::parse(b"GGML\x03\0\0\0".to_vec()),
        Err(ModelError::BadMagic(_))
    ));
    let mut b = header(0, 0);
    b[4] = 9;
    assert!(matches!(
        Gguf::parse(b),
        Err(ModelError::UnsupportedVersion(9))
    ));

    let data = vec![0u8; 64];
    let mut w = GgufWriter::new();
    w.raw_tensor("five.dims", &[1, 1, 1, 1, 1], 0, vec![0; 4]);
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(ModelError::Corrupt { .. })
    ));
    let mut w = GgufWriter::new();
    w.raw_tensor("odd.q8", &[33, 1], 8, data.clone());
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(ModelError::Corrupt { .. })
    ));
    let mut w = GgufWriter::new();
    w.raw_tensor("too.big", &[64, 2], 0, data.clone());
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(ModelError::Truncated { .. })
    ));
    let mut w = GgufWriter::new();
    w.raw_tensor("overflow", &[u64::MAX / 2, 4], 0, data.clone());
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(ModelError::Corrupt { .. })
    ));

    let mut w = GgufWriter::new();
    w.raw_tensor("zero.overflow", &[0, 1 << 62, 1 << 62], 0, vec![]);
    assert!(matches!(
        Gguf::parse(w.to_bytes()),
        Err(ModelError::Corrupt { .. })
    ));
    let mut w = GgufWriter::new();
    w.raw_tensor("empty", &[0, 1 << 40], 0, vec![]);
    let g = Gguf::parse(w.to_bytes()).expect("empty tensor");
    assert_eq!(
        g.tensor("empty").expect("empty").dequantize(),
        Vec::<f32>::new()
    );

    // An unknown type (16, IQ2_XXS) parses but is rejected when used.
    let mut w = GgufWriter::new();
    w.raw_tensor("iq2", &[256], 16, data);
    let g = Gguf::parse(w.to_bytes()).expect("parse");
    assert!(matches!(
        g.tensor("iq2"),
        Err(ModelError::UnsupportedTensorType { ggml_type: 16, .. })
    ));
}

#[test]
fn custom_alignment_is_honoured() {
    let mut w = GgufWriter::new();
    w.kv("general.alignment", Value::U32(64));
    let t = QTensor::quantize(TensorKind::F32, 1, 3, &[1.0, 2.0, 3.0]).expect("quantize");
    w.tensor("a", &[3], TensorKind::F32, t.data().to_vec());
    w.tensor("b", &[3], TensorKind::F32, t.data().to_vec());
    let g = Gguf::parse(w.to_bytes()).expect("parse");
    assert_eq!(g.tensor_info("b").expect("b").offset, 64);
    assert_eq!(g.tensor("b").expect("b").dequantize(), [1.0, 2.0, 3.0]);
}

/// Uses everything a parsed file offers, so corruption cannot hide a panic
/// in a later accessor.
fn exercise(g: &Gguf) {
    for (k, v) in g.metadata() {
        let _ = (
            g.get_u32(k),
            g.get_f32(k),
            g.get_str(k),
            g.get_str_array(k),
            v.describe(),
        );
    }
    for t in g.tensors() {
        if let Ok(q) = g.tensor(&t.name) {
            let _ = q.dequantize();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_corruption_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = sample_file();
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        if let Ok(g) = Gguf::parse(bytes) {
            exercise(&g);
        }
    }
}
