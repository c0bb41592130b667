//! A bounds-checked little-endian reader over the GGUF bytes.
//!
//! Every read checks the remaining length first, and every count read from
//! the file is checked against the bytes that could possibly back it, so no
//! header value can make the reader allocate more than the file justifies.

use crate::ModelError;

pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    pub(super) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(super) fn corrupt(&self, reason: impl Into<String>) -> ModelError {
        ModelError::Corrupt {
            offset: self.pos,
            reason: reason.into(),
        }
    }

    pub(super) fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8], ModelError> {
        let available = self.remaining();
        let truncated = ModelError::Truncated {
            what,
            offset: self.pos,
            needed: n,
            available,
        };
        let n = usize::try_from(n).map_err(|_| truncated)?;
        if n > available {
            return Err(ModelError::Truncated {
                what,
                offset: self.pos,
                needed: n as u64,
                available,
            });
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ModelError> {
        let bytes = self.take(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub(super) fn u8(&mut self, what: &'static str) -> Result<u8, ModelError> {
        Ok(self.array::<1>(what)?[0])
    }
    pub(super) fn u16(&mut self, what: &'static str) -> Result<u16, ModelError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    pub(super) fn u32(&mut self, what: &'static str) -> Result<u32, ModelError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    pub(super) fn u64(&mut self, what: &'static str) -> Result<u64, ModelError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }
    pub(super) fn f32(&mut self, what: &'static str) -> Result<f32, ModelError> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }
    pub(super) fn f64(&mut self, what: &'static str) -> Result<f64, ModelError> {
        Ok(f64::from_le_bytes(self.array(what)?))
    }

    /// A `u64` element count whose elements take at least `min_size` bytes
    /// each: fails unless the rest of the file could hold them all.
    pub(super) fn count(&mut self, what: &'static str, min_size: u64) -> Result<usize, ModelError> {
        let at = self.pos;
        let n = self.u64(what)?;
        let needed = n.checked_mul(min_size.max(1));
        match needed {
            Some(needed) if needed <= self.remaining() as u64 => Ok(n as usize),
            _ => Err(ModelError::Corrupt {
                offset: at,
                reason: format!(
                    "{what} {n} cannot fit in the {} bytes left",
                    self.remaining()
                ),
            }),
        }
    }

    /// A GGUF string: `u64` length, then UTF-8 bytes.
    pub(super) fn string(&mut self, what: &'static str) -> Result<String, ModelError> {
        let len = self.u64(what)?;
        let at = self.pos;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|e| ModelError::Corrupt {
            offset: at,
            reason: format!("{what} is not UTF-8: {e}"),
        })
    }
}
