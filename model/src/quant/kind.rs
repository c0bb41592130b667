//! `TensorKind`: the ggml tensor types this crate computes with, and their
//! block geometry. The block layouts are ggml's (`ggml-common.h`); each
//! format's file in this module describes its own.

use std::fmt;

/// A supported ggml tensor type, named as ggml names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)] // Q2_K … Q6_K, as in ggml and GGUF tools
pub enum TensorKind {
    /// ggml type 0: little-endian f32.
    F32,
    /// ggml type 1: little-endian IEEE half.
    F16,
    /// ggml type 2: blocks of 32 as f16 `d` and 16 bytes of nibbles;
    /// x = (q − 8)·d.
    Q4_0,
    /// ggml type 3: blocks of 32 as f16 scale `d`, f16 minimum `m`, 16 bytes
    /// of nibbles; element `j` = `(qs[j] & 0xF)·d + m`, element `j+16` = `(qs[j] >> 4)·d + m`.
    Q4_1,
    /// ggml type 6: blocks of 32 as f16 `d`, 32 high bits, 16 bytes of
    /// nibbles; x = (q − 16)·d with 5-bit q.
    Q5_0,
    /// ggml type 7: blocks of 32 as f16 `d`, f16 `m`, 32 high bits, 16 bytes
    /// of nibbles; x = q·d + m with 5-bit q.
    Q5_1,
    /// ggml type 8: blocks of 32 as f16 scale `d` and 32 × i8; x = q·d.
    Q8_0,
    /// ggml type 10: super-blocks of 256, 2-bit q, 4-bit scale and min per 16.
    Q2_K,
    /// ggml type 11: super-blocks of 256, 3-bit q, 6-bit signed scale per 16.
    Q3_K,
    /// ggml type 12: super-blocks of 256, 4-bit q, 6-bit scale and min per 32.
    Q4_K,
    /// ggml type 13: super-blocks of 256, 5-bit q, 6-bit scale and min per 32.
    Q5_K,
    /// ggml type 14: super-blocks of 256, 6-bit q, 8-bit signed scale per 16.
    Q6_K,
    /// ggml type 30: bfloat16 (the top half of an f32).
    BF16,
}

/// Names of ggml type numbers (supported or not), for messages.
const GGML_NAMES: [(u32, &str); 34] = [
    (0, "F32"),
    (1, "F16"),
    (2, "Q4_0"),
    (3, "Q4_1"),
    (6, "Q5_0"),
    (7, "Q5_1"),
    (8, "Q8_0"),
    (9, "Q8_1"),
    (10, "Q2_K"),
    (11, "Q3_K"),
    (12, "Q4_K"),
    (13, "Q5_K"),
    (14, "Q6_K"),
    (15, "Q8_K"),
    (16, "IQ2_XXS"),
    (17, "IQ2_XS"),
    (18, "IQ3_XXS"),
    (19, "IQ1_S"),
    (20, "IQ4_NL"),
    (21, "IQ3_S"),
    (22, "IQ2_S"),
    (23, "IQ4_XS"),
    (24, "I8"),
    (25, "I16"),
    (26, "I32"),
    (27, "I64"),
    (28, "F64"),
    (29, "IQ1_M"),
    (30, "BF16"),
    (34, "TQ1_0"),
    (35, "TQ2_0"),
    (39, "MXFP4"),
    (40, "NVFP4"),
    (41, "Q1_0"),
];

/// ggml's name for a type number (`"IQ2_XXS"` for 16), supported or not;
/// `None` for numbers ggml does not define.
pub fn ggml_type_name(ggml_type: u32) -> Option<&'static str> {
    GGML_NAMES
        .iter()
        .find(|(t, _)| *t == ggml_type)
        .map(|(_, n)| *n)
}

impl TensorKind {
    /// Every supported kind, in ggml type order.
    pub const ALL: [TensorKind; 13] = [
        Self::F32,
        Self::F16,
        Self::Q4_0,
        Self::Q4_1,
        Self::Q5_0,
        Self::Q5_1,
        Self::Q8_0,
        Self::Q2_K,
        Self::Q3_K,
        Self::Q4_K,
        Self::Q5_K,
        Self::Q6_K,
        Self::BF16,
    ];

    /// The kind for a ggml type number, `None` when unsupported.
    pub fn from_ggml(ggml_type: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.ggml_type() == ggml_type)
    }

    /// The ggml type number.
    pub fn ggml_type(self) -> u32 {
        match self {
            Self::F32 => 0,
            Self::F16 => 1,
            Self::Q4_0 => 2,
            Self::Q4_1 => 3,
            Self::Q5_0 => 6,
            Self::Q5_1 => 7,
            Self::Q8_0 => 8,
            Self::Q2_K => 10,
            Self::Q3_K => 11,
            Self::Q4_K => 12,
            Self::Q5_K => 13,
            Self::Q6_K => 14,
            Self::BF16 => 30,
        }
    }

    /// Elements per block.
    pub fn block_len(self) -> usize {
        match self {
            Self::F32 | Self::F16 | Self::BF16 => 1,
            Self::Q4_0 | Self::Q4_1 | Self::Q5_0 | Self::Q5_1 | Self::Q8_0 => 32,
            Self::Q2_K | Self::Q3_K | Self::Q4_K | Self::Q5_K | Self::Q6_K => 256,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::F16 | Self::BF16 => 2,
            Self::Q4_0 => 18,
            Self::Q4_1 => 20,
            Self::Q5_0 => 22,
            Self::Q5_1 => 24,
            Self::Q8_0 => 34,
            Self::Q2_K => 84,
            Self::Q3_K => 110,
            Self::Q4_K => 144,
            Self::Q5_K => 176,
            Self::Q6_K => 210,
        }
    }

    /// Bytes of a row of `cols` elements; `None` when `cols` is not a whole
    /// number of blocks or the size overflows.
    pub fn row_bytes(self, cols: u64) -> Option<u64> {
        let block = self.block_len() as u64;
        if !cols.is_multiple_of(block) {
            return None;
        }
        (cols / block).checked_mul(self.block_bytes() as u64)
    }
}

impl fmt::Display for TensorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every kind has a ggml name.
        f.write_str(ggml_type_name(self.ggml_type()).unwrap_or("?"))
    }
}
