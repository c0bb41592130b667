//! Namespace 1 of the target: a block namespace held in RAM by the target
//! process (4 KiB chunks allocated when first written, zeros until then).
//!
//! The firmware's flash holds the KV cache under the vendor commands and
//! has no LBA namespace of its own; a fabrics host still needs a namespace
//! to attach (`/dev/nvmeXnY`, `/dev/ngXnY`), and standard Read / Write to
//! work on it. This is that namespace: honest storage, but in the target's
//! memory, not on the simulated flash.

use std::collections::HashMap;

use proto::Status;

/// Status 0/0x80: LBA out of range.
pub const LBA_OUT_OF_RANGE: Status = Status::new(0, 0x80).with_dnr(true);

const CHUNK: usize = 4096;

/// A RAM block namespace.
#[derive(Debug)]
pub struct RamNamespace {
    lba_size: usize,
    lbas: u64,
    chunks: HashMap<u64, Box<[u8; CHUNK]>>,
    /// Bytes read and written (for the SMART log).
    pub read_bytes: u64,
    /// Bytes written.
    pub written_bytes: u64,
}

impl RamNamespace {
    /// `bytes` of capacity in `lba_size`-byte blocks (512 or 4096).
    pub fn new(bytes: u64, lba_size: usize) -> Result<Self, String> {
        if !matches!(lba_size, 512 | 4096) {
            return Err(format!("LBA size {lba_size} is not 512 or 4096"));
        }
        if bytes < lba_size as u64 {
            return Err(format!("namespace of {bytes} bytes holds no block"));
        }
        Ok(Self {
            lba_size,
            lbas: bytes / lba_size as u64,
            chunks: HashMap::new(),
            read_bytes: 0,
            written_bytes: 0,
        })
    }

    /// Block size.
    pub fn lba_size(&self) -> usize {
        self.lba_size
    }

    /// Blocks.
    pub fn lbas(&self) -> u64 {
        self.lbas
    }

    /// Checks a command's range and transfer length.
    pub fn check(&self, slba: u64, blocks: u64, len: usize) -> Result<(), Status> {
        if slba.checked_add(blocks).is_none_or(|end| end > self.lbas) {
            return Err(LBA_OUT_OF_RANGE);
        }
        if blocks * self.lba_size as u64 != len as u64 {
            return Err(proto::fabrics::DATA_SGL_LENGTH_INVALID);
        }
        Ok(())
    }

    /// Reads `blocks` from `slba`.
    pub fn read(&mut self, slba: u64, blocks: u64) -> Result<Vec<u8>, Status> {
        let len = (blocks * self.lba_size as u64) as usize;
        self.check(slba, blocks, len)?;
        let mut out = vec![0u8; len];
        let start = slba * self.lba_size as u64;
        for (i, b) in out.iter_mut().enumerate() {
            let at = start + i as u64;
            if let Some(c) = self.chunks.get(&(at / CHUNK as u64)) {
                *b = c[(at % CHUNK as u64) as usize];
            }
        }
        self.read_bytes += len as u64;
        Ok(out)
    }

    /// Writes `data` (whole blocks) at `slba`.
    pub fn write(&mut self, slba: u64, blocks: u64, data: &[u8]) -> Result<(), Status> {
        self.check(slba, blocks, data.len())?;
        let mut at = slba * self.lba_size as u64;
        let mut rest = data;
        while !rest.is_empty() {
            let off = (at % CHUNK as u64) as usize;
            let n = rest.len().min(CHUNK - off);
            let chunk = self
                .chunks
                .entry(at / CHUNK as u64)
                .or_insert_with(|| Box::new([0u8; CHUNK]));
            chunk[off..off + n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            at += n as u64;
        }
        self.written_bytes += data.len() as u64;
        Ok(())
    }

    /// Identify Namespace (CNS 0).
    pub fn identify(&self, nguid: [u8; 16]) -> [u8; 4096] {
        let mut p = [0u8; 4096];
        for off in [0, 8, 16] {
            p[off..off + 8].copy_from_slice(&self.lbas.to_le_bytes());
        }
        // NLBAF 0 (one format), FLBAS 0; NGUID; LBA format 0.
        p[104..120].copy_from_slice(&nguid);
        p[128 + 2] = self.lba_size.ilog2() as u8;
        p
    }

    /// Namespace Identification Descriptor list (CNS 3): the NGUID.
    pub fn descriptors(nguid: [u8; 16]) -> [u8; 4096] {
        let mut p = [0u8; 4096];
        p[0] = 2; // NIDT: NGUID.
        p[1] = 16;
        p[4..20].copy_from_slice(&nguid);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_read_back_and_ranges_are_checked() {
        let mut ns = RamNamespace::new(1 << 20, 512).unwrap();
        assert_eq!(ns.lbas(), 2048);
        let data: Vec<u8> = (0..3 * 512).map(|i| (i * 7) as u8).collect();
        ns.write(7, 3, &data).unwrap();
        assert_eq!(ns.read(7, 3).unwrap(), data);
        assert_eq!(ns.read(6, 1).unwrap(), vec![0; 512], "never written: zeros");
        assert_eq!(ns.read(2047, 2), Err(LBA_OUT_OF_RANGE));
        assert_eq!(ns.write(u64::MAX, 2, &[0; 1024]), Err(LBA_OUT_OF_RANGE));
        assert!(ns.write(0, 2, &[0; 512]).is_err(), "length must match");
        assert!(RamNamespace::new(1 << 20, 1000).is_err());
        let id = ns.identify([1; 16]);
        assert_eq!(u64::from_le_bytes(id[0..8].try_into().unwrap()), 2048);
        assert_eq!(id[130], 9);
    }
}
