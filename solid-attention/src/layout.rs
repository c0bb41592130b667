//! Where every byte of an SSD KV store lives.
//!
//! ```text
//! [header: H bytes]
//! [seq slot 0][layer 0][KV head 0][block 0][block 1]…[block C−1]
//!                      [KV head 1]…
//!            [layer 1]…
//! [seq slot 1]…
//! ```
//!
//! A block holds `block` tokens of one (layer, KV head); each token row is
//! its key then its value, fp16 (`2·d` halves: SolidAttention's KV
//! consolidation, so that one block of K *and* V is one contiguous extent
//! and the attention walks it with a stride of `2·d`). Blocks are padded
//! to [`ALIGN`] so every block starts on an `O_DIRECT` boundary; with
//! d = 64 and 32 tokens a block is exactly 8 KiB. Consecutive blocks of
//! one (layer, head) are adjacent on disk, so a run of them (the local
//! window) is one read.
//!
//! The header records the geometry and, per sequence slot, the sequence
//! id and the tokens stored per layer at the last flush, with an FNV-1a
//! checksum over all of it.

use host_driver::backend::{BackendError, ModelShape};

/// `O_DIRECT` alignment of offsets and lengths.
pub const ALIGN: usize = 4096;

const MAGIC: &[u8; 8] = b"IIKVSTR1";
const VERSION: u32 = 1;
/// Fixed part of the header: magic, version, 7 geometry words, checksum.
const FIXED: usize = 8 + 4 + 7 * 4 + 8;
/// A free sequence slot.
pub const FREE: u32 = u32::MAX;

/// The geometry of a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Layers, KV heads, head dim (query heads are not stored).
    pub shape: ModelShape,
    /// Tokens per block.
    pub block: usize,
    /// Blocks per (slot, layer, head): the capacity is `capacity · block`
    /// tokens.
    pub capacity: usize,
    /// Sequence slots.
    pub seq_slots: usize,
}

/// One sequence slot as the header records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotRecord {
    /// Sequence id, [`FREE`] when unused.
    pub seq: u32,
    /// Tokens stored per layer.
    pub lens: Vec<usize>,
}

fn shape_err(m: impl Into<String>) -> BackendError {
    BackendError::Shape(m.into())
}

impl Layout {
    /// A layout for `capacity_tokens` tokens per sequence; checks sizes.
    pub fn new(
        shape: ModelShape,
        block: usize,
        capacity_tokens: usize,
        seq_slots: usize,
    ) -> Result<Self, BackendError> {
        shape.validate()?;
        if block == 0 || block > 4096 {
            return Err(shape_err(format!("block of {block} tokens (1..=4096)")));
        }
        if seq_slots == 0 || capacity_tokens == 0 {
            return Err(shape_err(
                "a KV store needs ≥ 1 sequence slot and ≥ 1 token",
            ));
        }
        let l = Self {
            shape,
            block,
            capacity: capacity_tokens.div_ceil(block),
            seq_slots,
        };
        if l.header_bytes() > 1 << 20 {
            return Err(shape_err("too many layers × sequence slots for the header"));
        }
        l.file_bytes()
            .ok_or_else(|| shape_err("KV store larger than 2^63 bytes"))?;
        Ok(l)
    }

    /// Bytes of one token row (K then V, fp16).
    pub fn row_bytes(&self) -> usize {
        4 * self.shape.head_dim
    }

    /// Bytes of one block on disk (rows, padded to [`ALIGN`]).
    pub fn block_bytes(&self) -> usize {
        (self.block * self.row_bytes()).next_multiple_of(ALIGN)
    }

    /// Bytes of the header (rounded up to [`ALIGN`]).
    pub fn header_bytes(&self) -> usize {
        (FIXED + self.seq_slots * (4 + 8 * self.shape.layers)).next_multiple_of(ALIGN)
    }

    /// Tokens per (sequence, layer).
    pub fn capacity_tokens(&self) -> usize {
        self.capacity * self.block
    }

    /// Byte offset of `block` of (`slot`, `layer`, `head`).
    pub fn offset(&self, slot: usize, layer: usize, head: usize, block: usize) -> u64 {
        let per_head = self.capacity as u64;
        let per_layer = per_head * self.shape.kv_heads as u64;
        let per_slot = per_layer * self.shape.layers as u64;
        let index = slot as u64 * per_slot
            + layer as u64 * per_layer
            + head as u64 * per_head
            + block as u64;
        self.header_bytes() as u64 + index * self.block_bytes() as u64
    }

    /// Total file size, if it fits in `u64`/`i64`.
    pub fn file_bytes(&self) -> Option<u64> {
        let blocks = (self.seq_slots as u64)
            .checked_mul(self.shape.layers as u64)?
            .checked_mul(self.shape.kv_heads as u64)?
            .checked_mul(self.capacity as u64)?;
        blocks
            .checked_mul(self.block_bytes() as u64)?
            .checked_add(self.header_bytes() as u64)
            .filter(|&b| b <= i64::MAX as u64)
    }

    /// The header for these slots.
    pub fn encode(&self, slots: &[SlotRecord]) -> Vec<u8> {
        let mut h = vec![0u8; self.header_bytes()];
        h[..8].copy_from_slice(MAGIC);
        let words = [
            VERSION,
            self.shape.layers as u32,
            self.shape.q_heads as u32,
            self.shape.kv_heads as u32,
            self.shape.head_dim as u32,
            self.block as u32,
            self.capacity as u32,
            self.seq_slots as u32,
        ];
        for (i, w) in words.iter().enumerate() {
            h[8 + 4 * i..12 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        let mut at = FIXED;
        for i in 0..self.seq_slots {
            let rec = slots.get(i);
            let seq = rec.map_or(FREE, |r| r.seq);
            h[at..at + 4].copy_from_slice(&seq.to_le_bytes());
            at += 4;
            for l in 0..self.shape.layers {
                let n = rec.and_then(|r| r.lens.get(l)).copied().unwrap_or(0) as u64;
                h[at..at + 8].copy_from_slice(&n.to_le_bytes());
                at += 8;
            }
        }
        let sum = fnv1a(&h[..FIXED - 8], &h[FIXED..]);
        h[FIXED - 8..FIXED].copy_from_slice(&sum.to_le_bytes());
        h
    }

    /// Reads a header: the layout, its slots. `head` must hold at least
    /// the first [`ALIGN`] bytes; `more` reads the rest when the header is
    /// longer.
    pub fn decode(
        head: &[u8],
        mut more: impl FnMut(usize) -> Result<Vec<u8>, BackendError>,
    ) -> Result<(Self, Vec<SlotRecord>), BackendError> {
        let bad = |m: String| BackendError::Storage(format!("not a valid KV store: {m}"));
        if head.len() < FIXED || &head[..8] != MAGIC {
            return Err(bad("no IIKVSTR1 magic".into()));
        }
        let word =
            |i: usize| u32::from_le_bytes(head[8 + 4 * i..12 + 4 * i].try_into().unwrap_or([0; 4]));
        if word(0) != VERSION {
            return Err(bad(format!(
                "version {} (this build reads {VERSION})",
                word(0)
            )));
        }
        let shape = ModelShape {
            layers: word(1) as usize,
            q_heads: word(2) as usize,
            kv_heads: word(3) as usize,
            head_dim: word(4) as usize,
        };
        let layout = Layout::new(
            shape,
            word(5) as usize,
            word(6) as usize * word(5).max(1) as usize,
            word(7) as usize,
        )
        .map_err(|e| bad(format!("geometry: {e}")))?;
        if layout.capacity != word(6) as usize {
            return Err(bad("geometry: capacity".into()));
        }
        let full = if head.len() >= layout.header_bytes() {
            head[..layout.header_bytes()].to_vec()
        } else {
            more(layout.header_bytes())?
        };
        if full.len() < layout.header_bytes() {
            return Err(bad("header cut short".into()));
        }
        let stored = u64::from_le_bytes(full[FIXED - 8..FIXED].try_into().unwrap_or([0; 8]));
        if fnv1a(&full[..FIXED - 8], &full[FIXED..]) != stored {
            return Err(bad("header checksum mismatch".into()));
        }
        let mut at = FIXED;
        let mut slots = Vec::with_capacity(layout.seq_slots);
        for _ in 0..layout.seq_slots {
            let seq = u32::from_le_bytes(full[at..at + 4].try_into().unwrap_or([0; 4]));
            at += 4;
            let mut lens = Vec::with_capacity(shape.layers);
            for _ in 0..shape.layers {
                let n = u64::from_le_bytes(full[at..at + 8].try_into().unwrap_or([0; 8]));
                at += 8;
                if n > layout.capacity_tokens() as u64 {
                    return Err(bad(format!(
                        "{n} tokens recorded, capacity {}",
                        layout.capacity_tokens()
                    )));
                }
                lens.push(n as usize);
            }
            slots.push(SlotRecord { seq, lens });
        }
        Ok((layout, slots))
    }
}

/// FNV-1a (64-bit) over two byte runs.
fn fnv1a(a: &[u8], b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in a.iter().chain(b) {
        h ^= x as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let shape = ModelShape {
            layers: 30,
            q_heads: 9,
            kv_heads: 3,
            head_dim: 64,
        };
        Layout::new(shape, 32, 8192, 2).unwrap()
    }

    #[test]
    fn blocks_are_aligned_and_disjoint() {
        let l = layout();
        assert_eq!(l.block_bytes(), 8192, "32 tokens × (64 K + 64 V) × fp16");
        assert_eq!(l.capacity, 256);
        let a = l.offset(0, 0, 0, 0);
        assert_eq!(a, l.header_bytes() as u64);
        assert_eq!(
            l.offset(0, 0, 0, 1) - a,
            8192,
            "consecutive blocks adjacent"
        );
        assert_eq!(l.offset(0, 0, 1, 0) - a, 256 * 8192);
        assert_eq!(l.offset(1, 0, 0, 0) - a, 30 * 3 * 256 * 8192);
        let end = l.offset(1, 29, 2, 255) + 8192;
        assert_eq!(end, l.file_bytes().unwrap());
        for off in [a, l.offset(1, 7, 2, 13)] {
            assert_eq!(off % ALIGN as u64, 0);
        }
        // d = 48: 32 rows of 192 bytes = 6144, padded to 8192.
        let odd = Layout::new(
            ModelShape {
                head_dim: 48,
                ..l.shape
            },
            32,
            100,
            1,
        )
        .unwrap();
        assert_eq!(odd.block_bytes(), 8192);
    }

    #[test]
    fn the_header_round_trips_and_detects_damage() {
        let l = layout();
        let slots = vec![
            SlotRecord {
                seq: 7,
                lens: (0..30).map(|i| i * 3).collect(),
            },
            SlotRecord {
                seq: FREE,
                lens: vec![0; 30],
            },
        ];
        let h = l.encode(&slots);
        let (l2, s2) = Layout::decode(&h, |_| unreachable!()).unwrap();
        assert_eq!((l2, s2), (l, slots));
        let mut bad = h.clone();
        bad[FIXED + 10] ^= 1;
        assert!(Layout::decode(&bad, |_| unreachable!()).is_err());
        let mut bad = h.clone();
        bad[0] = b'X';
        assert!(Layout::decode(&bad, |_| unreachable!()).is_err());
        assert!(Layout::decode(&h[..10], |_| unreachable!()).is_err());
    }

    #[test]
    fn nonsense_geometry_is_refused() {
        let s = layout().shape;
        assert!(Layout::new(s, 0, 100, 1).is_err());
        assert!(Layout::new(s, 32, 0, 1).is_err());
        assert!(Layout::new(s, 32, 100, 0).is_err());
    }
}
