//! `QTensor`: a quantized matrix (rows × cols, each row `cols` contiguous
//! elements stored as whole blocks) and per-row decoding.

use super::{float, q4_1, q8_0};
use crate::{ModelError, TensorKind};

/// A weight matrix in one of the supported encodings.
#[derive(Clone, Debug, PartialEq)]
pub struct QTensor {
    kind: TensorKind,
    rows: usize,
    cols: usize,
    row_bytes: usize,
    data: Vec<u8>,
}

impl QTensor {
    /// Wraps encoded data; fails unless `cols` is a whole number of blocks
    /// and `data` holds exactly `rows` rows.
    pub fn new(
        kind: TensorKind,
        rows: usize,
        cols: usize,
        data: Vec<u8>,
    ) -> Result<Self, ModelError> {
        let row_bytes = kind
            .row_bytes(cols as u64)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| {
                ModelError::TensorData(format!(
                    "{kind} row of {cols} elements is not a whole number of blocks"
                ))
            })?;
        let expected = row_bytes.checked_mul(rows);
        if expected != Some(data.len()) {
            return Err(ModelError::TensorData(format!(
                "{kind} {rows}×{cols} needs {expected:?} bytes, got {}",
                data.len()
            )));
        }
        Ok(Self {
            kind,
            rows,
            cols,
            row_bytes,
            data,
        })
    }

    /// Encodes a row-major `rows × cols` f32 matrix (ggml's reference
    /// quantizers for Q4_1 and Q8_0).
    pub fn quantize(
        kind: TensorKind,
        rows: usize,
        cols: usize,
        values: &[f32],
    ) -> Result<Self, ModelError> {
        if Some(values.len()) != rows.checked_mul(cols) {
            return Err(ModelError::TensorData(format!(
                "{} values cannot form a {rows}×{cols} matrix",
                values.len()
            )));
        }
        if cols % kind.block_len() != 0 {
            return Err(ModelError::TensorData(format!(
                "{kind} needs cols divisible by {}",
                kind.block_len()
            )));
        }
        let mut data = Vec::with_capacity(values.len() / kind.block_len() * kind.block_bytes());
        match kind {
            TensorKind::F32 => values
                .iter()
                .for_each(|v| data.extend_from_slice(&v.to_le_bytes())),
            TensorKind::F16 => values
                .iter()
                .for_each(|v| data.extend_from_slice(&half::f16::from_f32(*v).to_le_bytes())),
            TensorKind::Q4_1 => q4_1::quantize(values, &mut data),
            TensorKind::Q8_0 => q8_0::quantize(values, &mut data),
        }
        Self::new(kind, rows, cols, data)
    }

    /// The encoding.
    pub fn kind(&self) -> TensorKind {
        self.kind
    }

    /// Number of rows (output features).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Elements per row (input features).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The encoded bytes, row after row.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    pub(super) fn row(&self, r: usize) -> &[u8] {
        &self.data[r * self.row_bytes..(r + 1) * self.row_bytes]
    }

    /// Decodes row `r` into `out[..cols]`.
    ///
    /// # Panics
    /// When `r >= rows` or `out` is shorter than a row.
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) {
        assert!(r < self.rows, "row {r} of {}", self.rows);
        let out = &mut out[..self.cols];
        let row = self.row(r);
        match self.kind {
            TensorKind::F32 => float::dequantize_f32(row, out),
            TensorKind::F16 => float::dequantize_f16(row, out),
            TensorKind::Q4_1 => q4_1::dequantize(row, out),
            TensorKind::Q8_0 => q8_0::dequantize(row, out),
        }
    }

    /// The whole matrix as row-major f32 (for tests and small tensors).
    pub fn dequantize(&self) -> Vec<f32> {
        let mut out = vec![0f32; self.rows * self.cols];
        for (r, o) in out
            .chunks_exact_mut(self.cols.max(1))
            .enumerate()
            .take(self.rows)
        {
            self.dequantize_row(r, o);
        }
        out
    }

    /// Per-input precomputation shared by every row's dot product.
    pub(super) fn prepare(&self, x: &[f32]) -> Vec<f32> {
        match self.kind {
            TensorKind::Q4_1 => q4_1::block_sums(x),
            _ => Vec::new(),
        }
    }

    /// Dot product of row `r` with `x`, on the encoded row.
    pub(super) fn dot_row(&self, r: usize, x: &[f32], prepared: &[f32]) -> f32 {
        let row = self.row(r);
        match self.kind {
            TensorKind::F32 => float::dot_encoded(row, x, 4),
            TensorKind::F16 => float::dot_encoded(row, x, 2),
            TensorKind::Q4_1 => q4_1::dot(row, x, prepared),
            TensorKind::Q8_0 => q8_0::dot(row, x),
        }
    }
}
