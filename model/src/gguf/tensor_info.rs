//! `TensorInfo`: one entry of the GGUF tensor table (name, dims, type,
//! offset), read and checked against the data section.

use super::cursor::Cursor;
use crate::{ModelError, TensorKind};

/// ggml's limit on tensor dimensions.
pub const MAX_DIMS: usize = 4;

/// One tensor as the header describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// Tensor name, e.g. `blk.0.attn_q.weight`.
    pub name: String,
    /// Dimensions, `ne[0]` first: `dims[0]` is the contiguous row length.
    pub dims: Vec<u64>,
    /// The ggml type number (may be one this crate cannot compute with).
    pub ggml_type: u32,
    /// Byte offset of the data, relative to the start of the data section.
    pub offset: u64,
    /// Byte size of the data; `None` when the type is unsupported.
    pub size: Option<u64>,
}

impl TensorInfo {
    /// The supported kind of this tensor, or why not.
    pub fn kind(&self) -> Result<TensorKind, ModelError> {
        TensorKind::from_ggml(self.ggml_type).ok_or_else(|| ModelError::UnsupportedTensorType {
            name: self.name.clone(),
            ggml_type: self.ggml_type,
        })
    }

    /// Number of elements (checked not to overflow when read).
    pub fn n_elements(&self) -> u64 {
        self.dims
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .unwrap_or(0)
    }

    /// Reads one tensor-table entry; the caller checks the data bounds.
    pub(super) fn read(cur: &mut Cursor<'_>) -> Result<Self, ModelError> {
        let name = cur.string("tensor name")?;
        let n_dims = cur.u32("tensor dims count")?;
        if n_dims as usize > MAX_DIMS {
            return Err(cur.corrupt(format!(
                "tensor `{name}` has {n_dims} dims (at most {MAX_DIMS})"
            )));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        let mut elements: u64 = 1;
        for _ in 0..n_dims {
            let d = cur.u64("tensor dim")?;
            // Zero dims count as one here so that no partial product of
            // the dims (rows, elements) can overflow later.
            elements = elements
                .checked_mul(d.max(1))
                .filter(|&e| e <= i64::MAX as u64)
                .ok_or_else(|| cur.corrupt(format!("tensor `{name}` element count overflows")))?;
            dims.push(d);
        }
        let ggml_type = cur.u32("tensor type")?;
        let offset = cur.u64("tensor offset")?;
        if dims.contains(&0) {
            elements = 0;
        }
        let size = match TensorKind::from_ggml(ggml_type) {
            None => None,
            Some(kind) => {
                let row_len = dims.first().copied().unwrap_or(1);
                let rows: u64 = if elements == 0 {
                    0
                } else {
                    dims.iter().skip(1).product()
                };
                let row = kind.row_bytes(row_len).ok_or_else(|| {
                    cur.corrupt(format!(
                        "tensor `{name}`: row length {row_len} is not a whole number of {kind} blocks"
                    ))
                })?;
                Some(
                    row.checked_mul(rows).ok_or_else(|| {
                        cur.corrupt(format!("tensor `{name}` byte size overflows"))
                    })?,
                )
            }
        };
        Ok(Self {
            name,
            dims,
            ggml_type,
            offset,
            size,
        })
    }
}
