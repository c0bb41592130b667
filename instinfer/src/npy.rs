//! NumPy `.npy` files (format versions 1.0, 2.0 and 3.0): the only on-disk
//! array format the CLI reads and writes.
//!
//! Supported: little-endian `float16` (`'<f2'`) and `float32` (`'<f4'`) in C
//! order, any rank (a rank-0 array holds one element). Everything else is a
//! typed [`NpyError`], never a panic: the files come from outside.
//!
//! The header is a Python dict literal; the private `header` module holds its small parser.

mod header;

use std::path::Path;

use thiserror::Error;

/// The magic string that opens every `.npy` file.
const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Header blocks (magic + length + dict + padding) are padded to this size.
const HEADER_ALIGN: usize = 64;

/// Element type of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    /// IEEE half precision, stored as its bit pattern (`'<f2'`).
    F16,
    /// IEEE single precision (`'<f4'`).
    F32,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::F16 => 2,
            Self::F32 => 4,
        }
    }

    /// The `descr` string NumPy writes for this type.
    pub fn descr(self) -> &'static str {
        match self {
            Self::F16 => "<f2",
            Self::F32 => "<f4",
        }
    }

    fn from_descr(descr: &str) -> Result<Self, NpyError> {
        match descr {
            "<f2" => Ok(Self::F16),
            "<f4" => Ok(Self::F32),
            other => Err(NpyError::UnsupportedDtype(other.to_string())),
        }
    }
}

/// The elements of an array, in C order.
#[derive(Clone, Debug, PartialEq)]
pub enum NpyData {
    /// fp16 bit patterns.
    F16(Vec<u16>),
    /// f32 values.
    F32(Vec<f32>),
}

/// An array read from (or to be written to) a `.npy` file.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// The elements; their count is the product of `shape`.
    pub data: NpyData,
}

/// Everything that can be wrong with a `.npy` file.
#[derive(Debug, Error)]
pub enum NpyError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file does not start with `\x93NUMPY`.
    #[error("not a .npy file (bad magic)")]
    BadMagic,
    /// A format version this reader does not know.
    #[error("unsupported .npy format version {major}.{minor}")]
    UnsupportedVersion {
        /// Major version byte.
        major: u8,
        /// Minor version byte.
        minor: u8,
    },
    /// The file ends before the part named.
    #[error("truncated .npy file: {what}")]
    Truncated {
        /// What is missing.
        what: &'static str,
    },
    /// The header dict could not be parsed.
    #[error("malformed .npy header: {0}")]
    BadHeader(String),
    /// The dtype is not `'<f2'` or `'<f4'`.
    #[error("unsupported dtype {0:?} (only '<f2' and '<f4' are supported)")]
    UnsupportedDtype(String),
    /// The array is stored in Fortran order.
    #[error("Fortran-order arrays are not supported (use C order)")]
    FortranOrder,
    /// The data size does not match the shape.
    #[error("data size mismatch: shape needs {expected} bytes, file has {actual}")]
    SizeMismatch {
        /// Bytes the shape implies.
        expected: usize,
        /// Bytes present.
        actual: usize,
    },
    /// The element count of the shape overflows `usize`.
    #[error("shape {0:?} is too large")]
    ShapeOverflow(Vec<usize>),
}

impl NpyArray {
    /// An f32 array; fails if `data.len()` does not match `shape`.
    pub fn from_f32(shape: Vec<usize>, data: Vec<f32>) -> Result<Self, NpyError> {
        check_count(&shape, data.len(), DType::F32)?;
        Ok(Self {
            shape,
            data: NpyData::F32(data),
        })
    }

    /// An fp16 array (bit patterns); fails if `data.len()` does not match `shape`.
    pub fn from_f16_bits(shape: Vec<usize>, data: Vec<u16>) -> Result<Self, NpyError> {
        check_count(&shape, data.len(), DType::F16)?;
        Ok(Self {
            shape,
            data: NpyData::F16(data),
        })
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self.data {
            NpyData::F16(_) => DType::F16,
            NpyData::F32(_) => DType::F32,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.data {
            NpyData::F16(v) => v.len(),
            NpyData::F32(v) => v.len(),
        }
    }

    /// `true` when the array holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as f32 (fp16 widened exactly).
    pub fn to_f32(&self) -> Vec<f32> {
        match &self.data {
            NpyData::F16(v) => v
                .iter()
                .map(|&b| half::f16::from_bits(b).to_f32())
                .collect(),
            NpyData::F32(v) => v.clone(),
        }
    }

    /// Parses a whole `.npy` file held in memory.
    pub fn parse(bytes: &[u8]) -> Result<Self, NpyError> {
        if bytes.len() < MAGIC.len() {
            return if MAGIC.starts_with(bytes) {
                Err(NpyError::Truncated { what: "magic" })
            } else {
                Err(NpyError::BadMagic)
            };
        }
        if &bytes[..MAGIC.len()] != MAGIC {
            return Err(NpyError::BadMagic);
        }
        let rest = &bytes[MAGIC.len()..];
        let [major, minor, rest @ ..] = rest else {
            return Err(NpyError::Truncated { what: "version" });
        };
        let (header_len, rest) = match major {
            1 => match rest {
                [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
                _ => {
                    return Err(NpyError::Truncated {
                        what: "header length",
                    });
                }
            },
            2 | 3 => match rest {
                [a, b, c, d, rest @ ..] => {
                    let len = u32::from_le_bytes([*a, *b, *c, *d]);
                    let len = usize::try_from(len)
                        .map_err(|_| NpyError::BadHeader("header length too large".into()))?;
                    (len, rest)
                }
                _ => {
                    return Err(NpyError::Truncated {
                        what: "header length",
                    });
                }
            },
            _ => {
                return Err(NpyError::UnsupportedVersion {
                    major: *major,
                    minor: *minor,
                });
            }
        };
        if rest.len() < header_len {
            return Err(NpyError::Truncated { what: "header" });
        }
        let (head, body) = rest.split_at(header_len);
        let text = std::str::from_utf8(head)
            .map_err(|_| NpyError::BadHeader("header is not valid text".into()))?;
        let h = header::parse(text)?;
        let dtype = DType::from_descr(&h.descr)?;
        if h.fortran_order {
            return Err(NpyError::FortranOrder);
        }
        let count = element_count(&h.shape)?;
        let expected = count
            .checked_mul(dtype.size())
            .ok_or_else(|| NpyError::ShapeOverflow(h.shape.clone()))?;
        if body.len() != expected {
            if body.len() < expected {
                return Err(NpyError::Truncated { what: "data" });
            }
            return Err(NpyError::SizeMismatch {
                expected,
                actual: body.len(),
            });
        }
        let data = match dtype {
            DType::F16 => NpyData::F16(
                body.chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            ),
            DType::F32 => NpyData::F32(
                body.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
        };
        Ok(Self {
            shape: h.shape,
            data,
        })
    }

    /// Encodes the array as a version 1.0 file (2.0 if the header needs it).
    pub fn to_bytes(&self) -> Vec<u8> {
        let dict = header::format(self.dtype().descr(), &self.shape);
        // magic + version + length + dict + '\n', padded with spaces to 64.
        let mut v1 = true;
        let mut prefix = MAGIC.len() + 2 + 2;
        let unpadded = prefix + dict.len() + 1;
        if unpadded.div_ceil(HEADER_ALIGN) * HEADER_ALIGN - prefix > usize::from(u16::MAX) {
            v1 = false;
            prefix += 2;
        }
        let total = (prefix + dict.len() + 1).div_ceil(HEADER_ALIGN) * HEADER_ALIGN;
        let header_len = total - prefix;
        let mut out = Vec::with_capacity(total + self.len() * self.dtype().size());
        out.extend_from_slice(MAGIC);
        if v1 {
            out.extend_from_slice(&[1, 0]);
            // Fits: checked above.
            out.extend_from_slice(&(header_len as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&[2, 0]);
            out.extend_from_slice(&(header_len as u32).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.resize(total - 1, b' ');
        out.push(b'\n');
        match &self.data {
            NpyData::F16(v) => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            NpyData::F32(v) => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        }
        out
    }

    /// Reads and parses a `.npy` file.
    pub fn read(path: &Path) -> Result<Self, NpyError> {
        let bytes = std::fs::read(path).map_err(|source| NpyError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&bytes)
    }

    /// Writes the array to a `.npy` file.
    pub fn write(&self, path: &Path) -> Result<(), NpyError> {
        std::fs::write(path, self.to_bytes()).map_err(|source| NpyError::Io {
            path: path.display().to_string(),
            source,
        })
    }
}

fn element_count(shape: &[usize]) -> Result<usize, NpyError> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| NpyError::ShapeOverflow(shape.to_vec()))
}

fn check_count(shape: &[usize], len: usize, dtype: DType) -> Result<(), NpyError> {
    let count = element_count(shape)?;
    if count == len {
        Ok(())
    } else {
        Err(NpyError::SizeMismatch {
            expected: count.saturating_mul(dtype.size()),
            actual: len.saturating_mul(dtype.size()),
        })
    }
}

#[cfg(test)]
mod tests;
