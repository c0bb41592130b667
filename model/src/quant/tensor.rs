//! `QTensor`: a quantized matrix (rows × cols, each row `cols` contiguous
//! elements stored as whole blocks) and per-row decoding.

use super::act::Input;
use super::kquant;
use super::q2_k::Q2K;
use super::q3_k::Q3K;
use super::q4_k::Q4K;
use super::q5_k::Q5K;
use super::q6_k::Q6K;
use super::simd::Isa;
use super::vecdot;
use super::{float, q4_0, q4_1, q5_0, q5_1, q8_0};
use crate::{ModelError, TensorKind};

/// A weight matrix in one of the supported encodings.
#[derive(Clone, Debug, PartialEq)]
pub struct QTensor {
    kind: TensorKind,
    rows: usize,
    cols: usize,
    row_bytes: usize,
    /// Shared so the pool's workers can hold the tensor (`Arc::clone`).
    data: std::sync::Arc<[u8]>,
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
            data: data.into(),
        })
    }

    /// Encodes a row-major `rows × cols` f32 matrix with ggml's reference
    /// quantizers. The K-quants only decode here: encoding them fails with
    /// [`ModelError::NoQuantizer`].
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
        if !cols.is_multiple_of(kind.block_len()) {
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
            // Round to nearest even, NaNs kept quiet (ggml's fp32_to_bf16).
            TensorKind::BF16 => values
                .iter()
                .for_each(|v| data.extend_from_slice(&half::bf16::from_f32(*v).to_le_bytes())),
            TensorKind::Q4_0 => q4_0::quantize(values, &mut data),
            TensorKind::Q4_1 => q4_1::quantize(values, &mut data),
            TensorKind::Q5_0 => q5_0::quantize(values, &mut data),
            TensorKind::Q5_1 => q5_1::quantize(values, &mut data),
            TensorKind::Q8_0 => q8_0::quantize(values, &mut data),
            TensorKind::Q2_K
            | TensorKind::Q3_K
            | TensorKind::Q4_K
            | TensorKind::Q5_K
            | TensorKind::Q6_K => return Err(ModelError::NoQuantizer(kind)),
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
            TensorKind::BF16 => float::dequantize_bf16(row, out),
            TensorKind::Q4_0 => q4_0::dequantize(row, out),
            TensorKind::Q4_1 => q4_1::dequantize(row, out),
            TensorKind::Q5_0 => q5_0::dequantize(row, out),
            TensorKind::Q5_1 => q5_1::dequantize(row, out),
            TensorKind::Q8_0 => q8_0::dequantize(row, out),
            TensorKind::Q2_K => kquant::dequantize::<Q2K>(row, out),
            TensorKind::Q3_K => kquant::dequantize::<Q3K>(row, out),
            TensorKind::Q4_K => kquant::dequantize::<Q4K>(row, out),
            TensorKind::Q5_K => kquant::dequantize::<Q5K>(row, out),
            TensorKind::Q6_K => kquant::dequantize::<Q6K>(row, out),
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

    /// `x` prepared for this tensor's rows (quantized to Q8 for the
    /// quantized kinds).
    pub(super) fn prepare(&self, x: &[f32]) -> Input {
        Input::new(self.kind, x)
    }

    /// `out[i] = row (r0 + i) · x` (prepared as `input`).
    pub(super) fn dot_rows(&self, isa: Isa, r0: usize, x: &[f32], input: &Input, out: &mut [f32]) {
        let rows = &self.data[r0 * self.row_bytes..(r0 + out.len()) * self.row_bytes];
        vecdot::dot_rows(isa, self.kind, rows, self.row_bytes, x, input, out);
    }

    /// Bytes of one encoded row.
    pub(super) fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    /// Rows `r0..r1`, encoded.
    pub(super) fn rows_bytes(&self, r0: usize, r1: usize) -> &[u8] {
        &self.data[r0 * self.row_bytes..r1 * self.row_bytes]
    }

    /// Rows `r0..r1` of a K-quant kind unpacked into `into` for many
    /// inputs, in lane order when `lanes` (false, nothing written, for
    /// the other kinds).
    pub(super) fn unpack_k(
        &self,
        lanes: bool,
        r0: usize,
        r1: usize,
        into: &mut kquant::KRows,
    ) -> bool {
        let (rows, rb) = (self.rows_bytes(r0, r1), self.row_bytes);
        match self.kind {
            TensorKind::Q2_K => kquant::unpack_rows::<Q2K>(lanes, rows, rb, into),
            TensorKind::Q3_K => kquant::unpack_rows::<Q3K>(lanes, rows, rb, into),
            TensorKind::Q4_K => kquant::unpack_rows::<Q4K>(lanes, rows, rb, into),
            TensorKind::Q5_K => kquant::unpack_rows::<Q5K>(lanes, rows, rb, into),
            TensorKind::Q6_K => kquant::unpack_rows::<Q6K>(lanes, rows, rb, into),
            _ => return false,
        }
        true
    }

    /// Dot product of row `r` with `x` (prepared as `input`), on the
    /// encoded row.
    pub(super) fn dot_row(&self, isa: Isa, r: usize, x: &[f32], input: &Input) -> f32 {
        vecdot::dot_row(isa, self.kind, self.row(r), x, input)
    }
}
