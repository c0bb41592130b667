//! The new formats' blocks built byte by byte, decoded values computed by
//! hand from the layout (a formula over every element plus literal spot
//! values worked out on paper), so a wrong bit position or packing fails.

use super::f16;
use crate::{QTensor, TensorKind};

fn decode(kind: TensorKind, blk: Vec<u8>) -> Vec<f32> {
    let n = kind.block_len();
    QTensor::new(kind, 1, n, blk).expect("tensor").dequantize()
}

#[test]
fn q4_0_block_by_hand() {
    // d = 0.5; qs[j] = j | (15 - j) << 4; x = (q - 8)·d.
    let mut blk = f16(0.5).to_vec();
    blk.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
    let got = decode(TensorKind::Q4_0, blk);
    for j in 0..16 {
        assert_eq!(got[j], (j as f32 - 8.0) * 0.5);
        assert_eq!(got[j + 16], (7.0 - j as f32) * 0.5);
    }
    assert_eq!((got[0], got[15], got[16], got[31]), (-4.0, 3.5, 3.5, -4.0));
}

/// qh = 0x8000_0001 (bits 0 and 31), qs[0] = 0x21, qs[15] = 0xF4, rest 0:
/// q[0] = 1 + 16, q[16] = 2, q[15] = 4, q[31] = 15 + 16, every other q 0.
fn q5_bits() -> Vec<u8> {
    let mut b = vec![0x01, 0, 0, 0x80];
    let mut qs = [0u8; 16];
    qs[0] = 0x21;
    qs[15] = 0xF4;
    b.extend_from_slice(&qs);
    b
}

fn q5_expected(i: usize) -> f32 {
    match i {
        0 => 17.0,
        16 => 2.0,
        15 => 4.0,
        31 => 31.0,
        _ => 0.0,
    }
}

#[test]
fn q5_0_block_by_hand() {
    let mut blk = f16(0.25).to_vec();
    blk.extend(q5_bits());
    let got = decode(TensorKind::Q5_0, blk);
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, (q5_expected(i) - 16.0) * 0.25, "element {i}");
    }
    assert_eq!(
        (got[0], got[16], got[15], got[31], got[1]),
        (0.25, -3.5, -3.0, 3.75, -4.0)
    );
}

#[test]
fn q5_1_block_by_hand() {
    let mut blk = f16(0.5).to_vec();
    blk.extend(f16(-2.0));
    blk.extend(q5_bits());
    let got = decode(TensorKind::Q5_1, blk);
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, q5_expected(i) * 0.5 - 2.0, "element {i}");
    }
    assert_eq!(
        (got[0], got[16], got[15], got[31], got[1]),
        (6.5, -1.0, 0.0, 13.5, -2.0)
    );
}

#[test]
fn q5_quantizers_round_trip_a_ramp() {
    // 32 evenly spaced values: Q5_1 represents them exactly (d = 1, m = -16).
    let ramp: Vec<f32> = (0..32).map(|i| i as f32 - 16.0).collect();
    let t = QTensor::quantize(TensorKind::Q5_1, 1, 32, &ramp).expect("q5_1");
    assert_eq!(t.dequantize(), ramp);
    // Q5_0: d = max / -16 = 1 (max = -16, the first largest), q = x + 16.
    let t = QTensor::quantize(TensorKind::Q5_0, 1, 32, &ramp).expect("q5_0");
    assert_eq!(t.data()[..2], f16(1.0));
    assert_eq!(t.dequantize(), ramp);
}

#[test]
fn bf16_by_hand() {
    // 0x3F80 = 1.0, 0xC020 = -2.5, 0x0001 = 2^-133 (subnormal).
    let t = QTensor::new(
        TensorKind::BF16,
        1,
        3,
        vec![0x80, 0x3F, 0x20, 0xC0, 0x01, 0x00],
    )
    .expect("bf16");
    assert_eq!(t.dequantize(), [1.0, -2.5, f32::from_bits(0x0001_0000)]);
    // Ties round to even: 1 + 2^-8 → 1, 1 + 3·2^-8 → 1 + 2^-6.
    let t = QTensor::quantize(
        TensorKind::BF16,
        1,
        2,
        &[1.0 + 1.0 / 256.0, 1.0 + 3.0 / 256.0],
    )
    .expect("quantize");
    assert_eq!(t.data(), [0x80, 0x3F, 0x82, 0x3F]);
}

#[test]
fn q2_k_block_by_hand() {
    // Group g: scale nibble (5g + 1) % 16, min nibble (3g + 2) % 16;
    // d = 0.5, dmin = 0.25. qs = 0xE4 (q = j in crumb j) except
    // qs[5] = 0x1B (q = 3 - j) and qs[32 + 7] = 0xFF (q = 3).
    let sc = |g: usize| ((5 * g + 1) % 16, (3 * g + 2) % 16);
    let mut blk: Vec<u8> = (0..16).map(|g| (sc(g).0 | (sc(g).1 << 4)) as u8).collect();
    let mut qs = [0xE4u8; 64];
    qs[5] = 0x1B;
    qs[32 + 7] = 0xFF;
    blk.extend_from_slice(&qs);
    blk.extend(f16(0.5));
    blk.extend(f16(0.25));
    let got = decode(TensorKind::Q2_K, blk);
    for (e, v) in got.iter().enumerate() {
        let (n, j, l) = (e / 128, e / 32 % 4, e % 32);
        let q = match (n, l) {
            (0, 5) => 3 - j,
            (1, 7) => 3,
            _ => j,
        };
        let (s, m) = sc(e / 16);
        assert_eq!(
            *v,
            0.5 * s as f32 * q as f32 - 0.25 * m as f32,
            "element {e}"
        );
    }
    assert_eq!(
        (got[0], got[5], got[167], got[255]),
        (-0.5, 1.0, 4.5, 14.25)
    );
}

#[test]
fn q3_k_block_by_hand() {
    // Packed scales chosen so that each 6-bit scale takes its low nibble
    // and top two bits from different bytes (see q3_k.rs).
    let packed = [0x21, 0, 0, 0, 0, 0, 0, 0x0F, 0xE4, 0, 0, 0x40];
    let s: [i32; 16] = [
        -31, -32, -32, -32, -16, -32, -32, -17, 2, -32, -32, -32, 16, -32, -32, -16,
    ];
    // hmask all set (no −4) except element 3 (hmask[3] bit 0) and
    // element 255 (hmask[31] bit 7); qs = 0xE4 in the first half (low = j),
    // 0x1B in the second (low = 3 − j); d = 0.5.
    let mut blk = vec![0xFFu8; 32];
    blk[3] = 0xFE;
    blk[31] = 0x7F;
    blk.extend([0xE4u8; 32]);
    blk.extend([0x1Bu8; 32]);
    blk.extend(packed);
    blk.extend(f16(0.5));
    let got = decode(TensorKind::Q3_K, blk);
    for (e, v) in got.iter().enumerate() {
        let j = (e / 32 % 4) as i32;
        let low = if e < 128 { j } else { 3 - j };
        let q = if e == 3 || e == 255 { low - 4 } else { low };
        assert_eq!(*v, 0.5 * s[e / 16] as f32 * q as f32, "element {e}");
    }
    assert_eq!(
        (got[3], got[40], got[133], got[200], got[255]),
        (62.0, -16.0, 3.0, 8.0, 32.0)
    );
}

/// Packed Q4_K/Q5_K scales: groups 0–3 have (sc, m) = (1, 5), (2, 6),
/// (3, 7), (4, 8); groups 4–7 (26, 25), (44, 11), (62, 45), (0, 63).
const K4_SCALES: [u8; 12] = [
    0x41, 0x82, 0xC3, 0x04, 0x45, 0x06, 0x87, 0xC8, 0x9A, 0xBC, 0xDE, 0xF0,
];
const K4_SC: [u32; 8] = [1, 2, 3, 4, 26, 44, 62, 0];
const K4_M: [u32; 8] = [5, 6, 7, 8, 25, 11, 45, 63];

/// qs[b] = (b % 16) | ((b / 8) % 16) << 4; element e is nibble
/// (e % 64 ≥ 32) of qs[32·(e / 64) + e % 32].
fn k4_qs() -> Vec<u8> {
    (0..128usize)
        .map(|b| ((b % 16) | ((b / 8) % 16) << 4) as u8)
        .collect()
}

fn k4_nibble(e: usize) -> u32 {
    let b = 32 * (e / 64) + e % 32;
    (if e % 64 < 32 { b % 16 } else { (b / 8) % 16 }) as u32
}

fn k4_head() -> Vec<u8> {
    let mut blk = f16(0.5).to_vec();
    blk.extend(f16(0.25));
    blk.extend(K4_SCALES);
    blk
}

fn k4_value(e: usize, q: u32) -> f32 {
    let g = e / 32;
    0.5 * K4_SC[g] as f32 * q as f32 - 0.25 * K4_M[g] as f32
}

#[test]
fn q4_k_block_by_hand() {
    let mut blk = k4_head();
    blk.extend(k4_qs());
    let got = decode(TensorKind::Q4_K, blk);
    for (e, v) in got.iter().enumerate() {
        assert_eq!(*v, k4_value(e, k4_nibble(e)), "element {e}");
    }
    assert_eq!(
        (
            got[0], got[33], got[100], got[150], got[170], got[200], got[255]
        ),
        (-1.25, -1.5, 6.0, 71.75, 195.25, 236.75, -15.75)
    );
}

#[test]
fn q5_k_block_by_hand() {
    // qh[l] = 1 << (l % 8): element e has bit 4 set iff e / 32 == l % 8.
    let mut blk = k4_head();
    blk.extend((0..32).map(|l| 1u8 << (l % 8)));
    blk.extend(k4_qs());
    let got = decode(TensorKind::Q5_K, blk);
    for (e, v) in got.iter().enumerate() {
        let high = u32::from(e / 32 == e % 32 % 8) * 16;
        assert_eq!(*v, k4_value(e, k4_nibble(e) + high), "element {e}");
    }
    assert_eq!(
        (got[0], got[33], got[100], got[255]),
        (6.75, 14.5, 6.0, -15.75)
    );
}

#[test]
fn q6_k_block_by_hand() {
    // ql[i] = (i % 16) | ((i / 4) % 16) << 4, qh[i] = 37·i (mod 256),
    // scales[g] = g − 8, d = 0.5.
    let ql: Vec<u8> = (0..128usize)
        .map(|i| ((i % 16) | ((i / 4) % 16) << 4) as u8)
        .collect();
    let qh: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
    let mut blk = ql.clone();
    blk.extend(&qh);
    blk.extend((0..16i8).map(|g| (g - 8) as u8));
    blk.extend(f16(0.5));
    let got = decode(TensorKind::Q6_K, blk);
    for (e, v) in got.iter().enumerate() {
        let (n, k, l) = (e / 128, e / 32 % 4, e % 32);
        let b = ql[64 * n + 32 * (k % 2) + l];
        let low = if k < 2 { b & 0xF } else { b >> 4 };
        let high = (qh[32 * n + l] >> (2 * k)) & 3;
        let q = i32::from(low | (high << 4)) - 32;
        let s = (e / 16) as i32 - 8;
        assert_eq!(*v, 0.5 * s as f32 * q as f32, "element {e}");
    }
    assert_eq!(
        (got[0], got[45], got[70], got[160], got[230], got[255]),
        (128.0, 57.0, 30.0, -32.0, -21.0, -59.5)
    );
}

#[test]
fn k_quants_have_no_quantizer() {
    for kind in [
        TensorKind::Q2_K,
        TensorKind::Q3_K,
        TensorKind::Q4_K,
        TensorKind::Q5_K,
        TensorKind::Q6_K,
    ] {
        let err = QTensor::quantize(kind, 1, 256, &[0.0; 256]).expect_err("no quantizer");
        assert!(
            matches!(err, crate::ModelError::NoQuantizer(k) if k == kind),
            "{err}"
        );
        assert!(err.to_string().contains(&kind.to_string()), "{err}");
    }
}
