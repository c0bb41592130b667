//! The crate's error type: every way the inputs of an attention call can be
//! inconsistent.

use core::fmt;

/// Why an attention call rejected its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttentionError {
    /// `group` (query heads per KV head) is 0 or above [`crate::shape::MAX_GROUP`].
    InvalidGroup {
        /// The rejected group size.
        group: usize,
    },
    /// The head dimension is outside `1..=256`.
    InvalidHeadDim {
        /// The rejected head dimension.
        head_dim: usize,
    },
    /// Sparse parameters out of range (`r` must be in `1..=d`, `k >= 1`).
    InvalidSparse {
        /// Dims kept.
        r: usize,
        /// Tokens kept.
        k: usize,
        /// Head dimension they were checked against.
        head_dim: usize,
    },
    /// `q_heads` is not a positive multiple of `kv_heads`.
    InvalidHeads {
        /// Query heads.
        q_heads: usize,
        /// KV heads.
        kv_heads: usize,
    },
    /// A buffer has the wrong length for the stated shape.
    LengthMismatch {
        /// Which buffer.
        what: &'static str,
        /// Length the shape implies.
        expected: usize,
        /// Length received.
        actual: usize,
    },
    /// The sequence is empty: there is nothing to attend to.
    EmptySequence,
    /// More tokens than token indices (u32) can address.
    TooManyTokens {
        /// The rejected sequence length.
        s: usize,
    },
    /// The shape's buffer sizes overflow `usize`.
    SizeOverflow,
    /// The method is not implemented by this path (the engine runs dense and
    /// SparF only).
    Unsupported {
        /// The method's name.
        method: &'static str,
    },
}

impl fmt::Display for AttentionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::InvalidGroup { group } => write!(f, "invalid group size {group}"),
            Self::InvalidHeadDim { head_dim } => {
                write!(f, "invalid head dimension {head_dim} (must be 1..=256)")
            }
            Self::InvalidSparse { r, k, head_dim } => write!(
                f,
                "invalid sparse parameters r={r}, k={k} for head dimension {head_dim}"
            ),
            Self::InvalidHeads { q_heads, kv_heads } => write!(
                f,
                "{q_heads} query heads is not a positive multiple of {kv_heads} KV heads"
            ),
            Self::LengthMismatch {
                what,
                expected,
                actual,
            } => write!(f, "{what} has length {actual}, expected {expected}"),
            Self::EmptySequence => write!(f, "empty sequence: nothing to attend to"),
            Self::TooManyTokens { s } => write!(f, "{s} tokens exceed the u32 index range"),
            Self::SizeOverflow => write!(f, "buffer size overflows usize"),
            Self::Unsupported { method } => write!(f, "method {method} is not supported here"),
        }
    }
}

impl core::error::Error for AttentionError {}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn display_names_the_problem() {
        let e = AttentionError::LengthMismatch {
            what: "k",
            expected: 8,
            actual: 7,
        };
        assert_eq!(e.to_string(), "k has length 7, expected 8");
        assert!(
            AttentionError::Unsupported { method: "SparQ" }
                .to_string()
                .contains("SparQ")
        );
        assert!(AttentionError::EmptySequence.to_string().contains("empty"));
    }
}
