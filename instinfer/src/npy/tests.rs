use super::*;

fn file_with_header(version: u8, dict: &str, body: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[version, 0]);
    let mut dict = dict.to_string();
    dict.push('\n');
    if version == 1 {
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(body);
    out
}

#[test]
fn round_trip_f32_and_f16_any_rank() {
    for shape in [vec![], vec![3], vec![2, 3], vec![2, 1, 4], vec![0, 5]] {
        let n: usize = shape.iter().product();
        let a = NpyArray::from_f32(
            shape.clone(),
            (0..n).map(|i| i as f32 * 0.5 - 1.0).collect(),
        )
        .unwrap();
        let bytes = a.to_bytes();
        assert_eq!(
            (bytes.iter().position(|&b| b == b'\n').unwrap() + 1) % 64,
            0
        );
        assert_eq!(NpyArray::parse(&bytes).unwrap(), a);
        let h = NpyArray::from_f16_bits(shape, (0..n as u16).collect()).unwrap();
        assert_eq!(NpyArray::parse(&h.to_bytes()).unwrap(), h);
    }
}

#[test]
fn header_matches_numpy() {
    let a = NpyArray::from_f32(vec![3], vec![1.0, 2.0, 3.0]).unwrap();
    let bytes = a.to_bytes();
    let text = std::str::from_utf8(&bytes[10..128]).unwrap();
    assert_eq!(bytes[127], b'\n');
    assert_eq!(bytes.len(), 128 + 12);
    assert!(text.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"));
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
}

#[test]
fn reads_version_2_and_double_quotes_and_f16_values() {
    let body: Vec<u8> = [1.0f32, -2.0]
        .iter()
        .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
        .collect();
    let f = file_with_header(
        2,
        r#"{"descr": "<f2", "shape": (2,), "fortran_order": False}"#,
        &body,
    );
    let a = NpyArray::parse(&f).unwrap();
    assert_eq!(a.shape, vec![2]);
    assert_eq!(a.dtype(), DType::F16);
    assert_eq!(a.to_f32(), vec![1.0, -2.0]);
}

#[test]
fn rejects_bad_magic_and_versions() {
    assert!(matches!(
        NpyArray::parse(b"PK\x03\x04 zip file"),
        Err(NpyError::BadMagic)
    ));
    assert!(matches!(
        NpyArray::parse(b"\x93NU"),
        Err(NpyError::Truncated { .. })
    ));
    assert!(matches!(
        NpyArray::parse(b""),
        Err(NpyError::Truncated { .. })
    ));
    assert!(matches!(
        NpyArray::parse(b"\x93NUMPY\x01"),
        Err(NpyError::Truncated { .. })
    ));
    assert!(matches!(
        NpyArray::parse(b"\x93NUMPY\x09\x00\x10\x00"),
        Err(NpyError::UnsupportedVersion { major: 9, .. })
    ));
    assert!(matches!(
        NpyArray::parse(b"\x93NUMPY\x01\x00\x50"),
        Err(NpyError::Truncated { .. })
    ));
    // Header length beyond the file.
    assert!(matches!(
        NpyArray::parse(b"\x93NUMPY\x01\x00\x50\x00{'descr'"),
        Err(NpyError::Truncated { what: "header" })
    ));
}

#[test]
fn rejects_unsupported_dtype_and_order() {
    let f = file_with_header(
        1,
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }",
        &[0; 8],
    );
    assert!(matches!(NpyArray::parse(&f), Err(NpyError::UnsupportedDtype(d)) if d == "<f8"));
    let f = file_with_header(
        1,
        "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
        &[0; 4],
    );
    assert!(matches!(
        NpyArray::parse(&f),
        Err(NpyError::UnsupportedDtype(_))
    ));
    let f = file_with_header(
        1,
        "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
        &[0; 4],
    );
    assert!(matches!(NpyArray::parse(&f), Err(NpyError::FortranOrder)));
}

#[test]
fn rejects_size_mismatch_and_truncated_data() {
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
    assert!(matches!(
        NpyArray::parse(&file_with_header(1, dict, &[0; 12])),
        Err(NpyError::Truncated { what: "data" })
    ));
    assert!(matches!(
        NpyArray::parse(&file_with_header(1, dict, &[0; 20])),
        Err(NpyError::SizeMismatch {
            expected: 16,
            actual: 20
        })
    ));
    let huge = "{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551615, 2), }";
    assert!(matches!(
        NpyArray::parse(&file_with_header(1, huge, &[])),
        Err(NpyError::ShapeOverflow(_))
    ));
    assert!(NpyArray::from_f32(vec![2, 2], vec![0.0; 3]).is_err());
}

#[test]
fn rejects_malformed_headers() {
    let cases = [
        "",
        "{",
        "['descr', '<f4']",
        "{'descr': '<f4', 'fortran_order': False}",
        "{'descr': '<f4', 'shape': (1,)}",
        "{'fortran_order': False, 'shape': (1,)}",
        "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, -2)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1 2)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': 3}",
        "{'descr': <f4, 'fortran_order': False, 'shape': (1,)}",
        "{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': True}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk",
        "{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}",
    ];
    for dict in cases {
        let f = file_with_header(1, dict, &[0; 4]);
        assert!(
            matches!(NpyArray::parse(&f), Err(NpyError::BadHeader(_))),
            "{dict:?}"
        );
    }
    let mut f = file_with_header(
        1,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
        &[0; 4],
    );
    f[12] = 0xff;
    assert!(matches!(NpyArray::parse(&f), Err(NpyError::BadHeader(_))));
}

#[test]
fn python2_long_dims_accepted() {
    let f = file_with_header(
        1,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1L, 2L), }",
        &[0; 8],
    );
    assert_eq!(NpyArray::parse(&f).unwrap().shape, vec![1, 2]);
}

#[test]
fn file_io_errors_name_the_path() {
    let e = NpyArray::read(Path::new("/nonexistent/dir/x.npy")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/dir/x.npy"));
}
