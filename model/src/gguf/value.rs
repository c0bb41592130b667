//! Metadata values: the thirteen GGUF value types, arrays stored compactly.
//!
//! Arrays of numbers are kept as typed vectors (not `Vec<Value>`) so that a
//! large array costs about what it costs in the file.

use std::fmt;

use super::cursor::Cursor;
use crate::ModelError;

/// Deepest array nesting accepted; deeper files are rejected, which keeps
/// the recursive reader's stack use bounded.
const MAX_NESTING: usize = 8;

/// The type tag of a metadata value (GGUF's `gguf_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// Unsigned 8-bit integer; tag 0.
    U8,
    /// Signed 8-bit integer; tag 1.
    I8,
    /// Unsigned 16-bit little-endian integer; tag 2.
    U16,
    /// Signed 16-bit little-endian integer; tag 3.
    I16,
    /// Unsigned 32-bit little-endian integer; tag 4.
    U32,
    /// Signed 32-bit little-endian integer; tag 5.
    I32,
    /// IEEE 754 single-precision float; tag 6.
    F32,
    /// One byte that must be 0 (false) or 1 (true); tag 7.
    Bool,
    /// UTF-8 text prefixed by its `u64` byte length; tag 8.
    String,
    /// Element type tag, `u64` count, then the elements; tag 9.
    Array,
    /// Unsigned 64-bit little-endian integer; tag 10.
    U64,
    /// Signed 64-bit little-endian integer; tag 11.
    I64,
    /// IEEE 754 double-precision float; tag 12.
    F64,
}

impl ValueType {
    /// The type for a GGUF tag, `None` for an unknown tag.
    pub fn from_tag(tag: u32) -> Option<Self> {
        Some(match tag {
            0 => Self::U8,
            1 => Self::I8,
            2 => Self::U16,
            3 => Self::I16,
            4 => Self::U32,
            5 => Self::I32,
            6 => Self::F32,
            7 => Self::Bool,
            8 => Self::String,
            9 => Self::Array,
            10 => Self::U64,
            11 => Self::I64,
            12 => Self::F64,
            _ => return None,
        })
    }

    /// The GGUF tag of this type.
    pub fn tag(self) -> u32 {
        match self {
            Self::U8 => 0,
            Self::I8 => 1,
            Self::U16 => 2,
            Self::I16 => 3,
            Self::U32 => 4,
            Self::I32 => 5,
            Self::F32 => 6,
            Self::Bool => 7,
            Self::String => 8,
            Self::Array => 9,
            Self::U64 => 10,
            Self::I64 => 11,
            Self::F64 => 12,
        }
    }

    /// Fewest bytes one value of this type takes in the file.
    fn min_size(self) -> u64 {
        match self {
            Self::U8 | Self::I8 | Self::Bool => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 | Self::String => 8,
            Self::Array => 12,
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::U8 => "u8",
            Self::I8 => "i8",
            Self::U16 => "u16",
            Self::I16 => "i16",
            Self::U32 => "u32",
            Self::I32 => "i32",
            Self::F32 => "f32",
            Self::Bool => "bool",
            Self::String => "string",
            Self::Array => "array",
            Self::U64 => "u64",
            Self::I64 => "i64",
            Self::F64 => "f64",
        };
        f.write_str(name)
    }
}

/// One metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An unsigned 8-bit integer.
    U8(u8),
    /// A signed 8-bit integer.
    I8(i8),
    /// An unsigned 16-bit integer.
    U16(u16),
    /// A signed 16-bit integer.
    I16(i16),
    /// An unsigned 32-bit integer (e.g. `llama.block_count`).
    U32(u32),
    /// A signed 32-bit integer.
    I32(i32),
    /// An unsigned 64-bit integer.
    U64(u64),
    /// A signed 64-bit integer.
    I64(i64),
    /// A single-precision float (e.g. `llama.attention.layer_norm_rms_epsilon`).
    F32(f32),
    /// A double-precision float.
    F64(f64),
    /// A boolean (stored as one byte, 0 or 1).
    Bool(bool),
    /// A UTF-8 string (e.g. `general.architecture`).
    String(String),
    /// An array of one element type (e.g. `tokenizer.ggml.tokens`).
    Array(Array),
}

/// A metadata array; the element type survives even when it is empty.
#[derive(Clone, Debug, PartialEq)]
pub enum Array {
    /// Unsigned 8-bit integers, copied straight from the file bytes.
    U8(Vec<u8>),
    /// Signed 8-bit integers.
    I8(Vec<i8>),
    /// Unsigned 16-bit integers.
    U16(Vec<u16>),
    /// Signed 16-bit integers.
    I16(Vec<i16>),
    /// Unsigned 32-bit integers.
    U32(Vec<u32>),
    /// Signed 32-bit integers (e.g. `tokenizer.ggml.token_type`).
    I32(Vec<i32>),
    /// Unsigned 64-bit integers.
    U64(Vec<u64>),
    /// Signed 64-bit integers.
    I64(Vec<i64>),
    /// Single-precision floats (e.g. `tokenizer.ggml.scores`).
    F32(Vec<f32>),
    /// Double-precision floats.
    F64(Vec<f64>),
    /// Booleans, each stored as one byte, 0 or 1.
    Bool(Vec<bool>),
    /// UTF-8 strings (e.g. `tokenizer.ggml.tokens`, `tokenizer.ggml.merges`).
    String(Vec<String>),
    /// Nested arrays, each with its own element type and length; the reader
    /// rejects nesting deeper than 8 levels, counting the outermost array.
    Array(Vec<Array>),
}

impl Value {
    /// The value's type tag.
    pub fn value_type(&self) -> ValueType {
        match self {
            Self::U8(_) => ValueType::U8,
            Self::I8(_) => ValueType::I8,
            Self::U16(_) => ValueType::U16,
            Self::I16(_) => ValueType::I16,
            Self::U32(_) => ValueType::U32,
            Self::I32(_) => ValueType::I32,
            Self::U64(_) => ValueType::U64,
            Self::I64(_) => ValueType::I64,
            Self::F32(_) => ValueType::F32,
            Self::F64(_) => ValueType::F64,
            Self::Bool(_) => ValueType::Bool,
            Self::String(_) => ValueType::String,
            Self::Array(_) => ValueType::Array,
        }
    }

    /// Any integer value, widened; `None` for non-integers.
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            Self::U8(v) => v.into(),
            Self::I8(v) => v.into(),
            Self::U16(v) => v.into(),
            Self::I16(v) => v.into(),
            Self::U32(v) => v.into(),
            Self::I32(v) => v.into(),
            Self::U64(v) => v.into(),
            Self::I64(v) => v.into(),
            _ => return None,
        })
    }

    /// A short description for error messages (`u32 7`, `string`, `array of 3 string`).
    pub fn describe(&self) -> String {
        match self {
            Self::String(_) => "string".to_owned(),
            Self::Array(a) => format!("array of {} {}", a.len(), a.element_type()),
            Self::F32(v) => format!("f32 {v}"),
            Self::F64(v) => format!("f64 {v}"),
            Self::Bool(v) => format!("bool {v}"),
            other => match other.as_i128() {
                Some(v) => format!("{} {v}", other.value_type()),
                None => other.value_type().to_string(),
            },
        }
    }

    pub(super) fn read(
        cur: &mut Cursor<'_>,
        ty: ValueType,
        depth: usize,
    ) -> Result<Self, ModelError> {
        const W: &str = "metadata value";
        Ok(match ty {
            ValueType::U8 => Self::U8(cur.u8(W)?),
            ValueType::I8 => Self::I8(cur.u8(W)? as i8),
            ValueType::U16 => Self::U16(cur.u16(W)?),
            ValueType::I16 => Self::I16(cur.u16(W)? as i16),
            ValueType::U32 => Self::U32(cur.u32(W)?),
            ValueType::I32 => Self::I32(cur.u32(W)? as i32),
            ValueType::U64 => Self::U64(cur.u64(W)?),
            ValueType::I64 => Self::I64(cur.u64(W)? as i64),
            ValueType::F32 => Self::F32(cur.f32(W)?),
            ValueType::F64 => Self::F64(cur.f64(W)?),
            ValueType::Bool => Self::Bool(read_bool(cur)?),
            ValueType::String => Self::String(cur.string("metadata string")?),
            ValueType::Array => Self::Array(Array::read(cur, depth)?),
        })
    }
}

fn read_bool(cur: &mut Cursor<'_>) -> Result<bool, ModelError> {
    match cur.u8("metadata bool")? {
        0 => Ok(false),
        1 => Ok(true),
        b => Err(cur.corrupt(format!("bool value {b} is neither 0 nor 1"))),
    }
}

fn read_vec<T>(
    cur: &mut Cursor<'_>,
    n: usize,
    mut one: impl FnMut(&mut Cursor<'_>) -> Result<T, ModelError>,
) -> Result<Vec<T>, ModelError> {
    // `n` was checked against the bytes left, so this allocation is bounded.
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(one(cur)?);
    }
    Ok(out)
}

impl Array {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Self::U8(v) => v.len(),
            Self::I8(v) => v.len(),
            Self::U16(v) => v.len(),
            Self::I16(v) => v.len(),
            Self::U32(v) => v.len(),
            Self::I32(v) => v.len(),
            Self::U64(v) => v.len(),
            Self::I64(v) => v.len(),
            Self::F32(v) => v.len(),
            Self::F64(v) => v.len(),
            Self::Bool(v) => v.len(),
            Self::String(v) => v.len(),
            Self::Array(v) => v.len(),
        }
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn element_type(&self) -> ValueType {
        match self {
            Self::U8(_) => ValueType::U8,
            Self::I8(_) => ValueType::I8,
            Self::U16(_) => ValueType::U16,
            Self::I16(_) => ValueType::I16,
            Self::U32(_) => ValueType::U32,
            Self::I32(_) => ValueType::I32,
            Self::U64(_) => ValueType::U64,
            Self::I64(_) => ValueType::I64,
            Self::F32(_) => ValueType::F32,
            Self::F64(_) => ValueType::F64,
            Self::Bool(_) => ValueType::Bool,
            Self::String(_) => ValueType::String,
            Self::Array(_) => ValueType::Array,
        }
    }

    fn read(cur: &mut Cursor<'_>, depth: usize) -> Result<Self, ModelError> {
        if depth >= MAX_NESTING {
            return Err(cur.corrupt(format!("arrays nested deeper than {MAX_NESTING}")));
        }
        let tag = cur.u32("array element type")?;
        let ty = ValueType::from_tag(tag)
            .ok_or_else(|| cur.corrupt(format!("unknown array element type {tag}")))?;
        let n = cur.count("array length", ty.min_size())?;
        const W: &str = "array element";
        Ok(match ty {
            ValueType::U8 => Self::U8(cur.take(n as u64, W)?.to_vec()),
            ValueType::I8 => Self::I8(read_vec(cur, n, |c| Ok(c.u8(W)? as i8))?),
            ValueType::U16 => Self::U16(read_vec(cur, n, |c| c.u16(W))?),
            ValueType::I16 => Self::I16(read_vec(cur, n, |c| Ok(c.u16(W)? as i16))?),
            ValueType::U32 => Self::U32(read_vec(cur, n, |c| c.u32(W))?),
            ValueType::I32 => Self::I32(read_vec(cur, n, |c| Ok(c.u32(W)? as i32))?),
            ValueType::U64 => Self::U64(read_vec(cur, n, |c| c.u64(W))?),
            ValueType::I64 => Self::I64(read_vec(cur, n, |c| Ok(c.u64(W)? as i64))?),
            ValueType::F32 => Self::F32(read_vec(cur, n, |c| c.f32(W))?),
            ValueType::F64 => Self::F64(read_vec(cur, n, |c| c.f64(W))?),
            ValueType::Bool => Self::Bool(read_vec(cur, n, read_bool)?),
            ValueType::String => Self::String(read_vec(cur, n, |c| c.string("array string"))?),
            ValueType::Array => Self::Array(read_vec(cur, n, |c| Self::read(c, depth + 1))?),
        })
    }
}
