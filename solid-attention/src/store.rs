//! [`KvStore`]: the KV cache of a model in one file (or raw namespace) on
//! a plain NVMe SSD, in the [`Layout`](super::layout::Layout) of
//! interleaved K/V blocks, or — for comparison, with exactly the same
//! bookkeeping — in DRAM.
//!
//! **Writes** are coalesced: the newest, partly filled block of every
//! (layer, KV head) stays in a per-layer DRAM buffer (`kv_heads` blocks per
//! layer: 24 KiB for SmolLM2, SolidAttention uses 32 KiB) and goes to the
//! drive as one aligned block when its last token arrives, asynchronously
//! through a few write slots of the I/O arena. [`KvStore::flush`] also
//! writes the partial blocks (padded; rewritten when they fill up) and the
//! header, then `fsync`s: what was appended before a flush survives a
//! restart of the process ([`KvStore::open`]).
//!
//! **Block representatives** ([`REPS`] keys per full block, picked when the
//! block is written, see `attention::reference::representative_keys`) stay
//! in DRAM: block selection never touches the drive. A reopened store
//! recomputes them with one scan.
//!
//! **Reads** go into the arena's read slots, which the scheduler
//! ([`super::backend`]) owns: [`KvStore::issue_read`] queues a run of
//! adjacent blocks into adjacent slots (one command), [`KvStore::wait_read`]
//! reaps the next read. A read of a block whose write is still in flight
//! waits for the write first.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use attention::reference::{REPS, representative_keys};
use nvme_linux::direct::{DirectError, DirectFile, Done};

use super::layout::{ALIGN, FREE, Layout, SlotRecord};
use host_driver::backend::{BackendError, ModelShape};

/// (sequence slot, layer, head, block).
pub type BlockKey = (usize, usize, usize, usize);

fn storage(e: impl std::fmt::Display) -> BackendError {
    BackendError::Storage(e.to_string())
}

fn direct(e: DirectError) -> BackendError {
    storage(e)
}

/// Where the blocks live.
enum Media {
    /// An `O_DIRECT` file: arena slots `[0, read_slots)` belong to the
    /// scheduler, the rest are write slots.
    Disk {
        io: Box<DirectFile>,
        read_slots: usize,
        free_writes: Vec<usize>,
        /// Write tag → (arena slot, block).
        writes: HashMap<u64, (usize, BlockKey)>,
        /// Blocks whose write is in flight.
        pending: HashSet<BlockKey>,
        /// Reads reaped while waiting for something else.
        reaped: Vec<Done>,
    },
    /// DRAM: `[slot][layer·kv_heads + head]` → the blocks' bytes.
    Dram(Vec<Vec<Vec<u8>>>),
}

/// One sequence slot in memory.
#[derive(Debug, Clone)]
struct SlotState {
    seq: u32,
    lens: Vec<usize>,
    /// `[layer·kv_heads + head]`: rows of the newest block (fp16 bytes);
    /// a full tail is the block just written, kept until the next append.
    tails: Vec<Vec<u8>>,
    /// `[layer·kv_heads + head]`: fp16 representative keys of every full
    /// block, `REPS·d` halves each (fewer rows for blocks with fewer
    /// distinct candidates never happen: blocks are full).
    reps: Vec<Vec<u16>>,
}

/// I/O and memory counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Bytes read from the drive.
    pub bytes_read: u64,
    /// Read commands.
    pub reads: u64,
    /// Bytes written (blocks, partial blocks at flush, headers).
    pub bytes_written: u64,
    /// Write commands.
    pub writes: u64,
    /// Σ over reads of the transfers in flight just after queueing it
    /// (÷ `reads`: the mean queue depth the reads saw).
    pub depth_sum: u64,
    /// Most KV bytes stored at once.
    pub peak_kv_bytes: u64,
    /// Most DRAM the store held at once.
    pub peak_dram_bytes: u64,
}

/// The KV store.
pub struct KvStore {
    layout: Layout,
    path: Option<PathBuf>,
    media: Media,
    slots: Vec<SlotState>,
    /// Counters since creation.
    pub stats: StoreStats,
}

impl std::fmt::Debug for KvStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvStore")
            .field("layout", &self.layout)
            .field("path", &self.path)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Write slots: enough for every head of two layers in flight.
fn write_slots(layout: &Layout) -> usize {
    2 * layout.shape.kv_heads + 2
}

fn f16_bytes(x: f32) -> [u8; 2] {
    half::f16::from_f32(x).to_bits().to_le_bytes()
}

/// fp16 little-endian bytes → f32.
pub fn f16_at(b: &[u8], i: usize) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([b[2 * i], b[2 * i + 1]])).to_f32()
}

/// Appends the f32 values of fp16 little-endian `bytes` to `out`, with
/// half's vectorized slice conversion when the bytes are 2-aligned (the
/// I/O arena always is).
pub fn extend_f16(bytes: &[u8], out: &mut Vec<f32>) {
    use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
    let start = out.len();
    let n = bytes.len() / 2;
    #[cfg(target_endian = "little")]
    if let Ok(bits) = bytemuck::try_cast_slice::<u8, u16>(&bytes[..2 * n]) {
        out.resize(start + n, 0.0);
        bits.reinterpret_cast::<half::f16>()
            .convert_to_f32_slice(&mut out[start..]);
        return;
    }
    out.extend((0..n).map(|i| f16_at(bytes, i)));
}

impl KvStore {
    fn empty_slot(layout: &Layout) -> SlotState {
        let n = layout.shape.layers * layout.shape.kv_heads;
        SlotState {
            seq: FREE,
            lens: vec![0; layout.shape.layers],
            tails: vec![Vec::new(); n],
            reps: vec![Vec::new(); n],
        }
    }

    /// A new store file at `path` (replacing any; a block device — a raw
    /// namespace — is used as it is if large enough), sized for `layout`,
    /// with `read_slots` arena slots of one block for the scheduler.
    pub fn create(path: &Path, layout: Layout, read_slots: usize) -> Result<Self, BackendError> {
        use std::io::{Seek, SeekFrom};
        use std::os::unix::fs::FileTypeExt;
        let bytes = layout
            .file_bytes()
            .ok_or_else(|| storage("KV store too large"))?;
        let raw = path
            .metadata()
            .is_ok_and(|m| m.file_type().is_block_device());
        if path.exists() && !raw {
            std::fs::remove_file(path)
                .map_err(|e| storage(format!("replacing {}: {e}", path.display())))?;
        }
        let io = Self::open_io(path, !raw, &layout, read_slots)?;
        if raw {
            // A raw namespace: it must be large enough; it is not resized.
            let size = io
                .file()
                .seek(SeekFrom::End(0))
                .map_err(|e| storage(format!("{}: {e}", path.display())))?;
            if size < bytes {
                return Err(storage(format!(
                    "{}: {size} bytes, the KV store needs {bytes}",
                    path.display()
                )));
            }
        } else {
            io.file()
                .set_len(bytes)
                .map_err(|e| storage(format!("sizing {} to {bytes} bytes: {e}", path.display())))?;
        }
        let mut s = Self::with_io(io, path, layout, read_slots);
        s.write_header()?;
        Ok(s)
    }

    /// The same bookkeeping with the blocks in DRAM (the in-memory
    /// baseline: no file, no reads).
    pub fn dram(layout: Layout) -> Self {
        let n = layout.shape.layers * layout.shape.kv_heads;
        Self {
            media: Media::Dram(vec![vec![Vec::new(); n]; layout.seq_slots]),
            slots: vec![Self::empty_slot(&layout); layout.seq_slots],
            layout,
            path: None,
            stats: StoreStats::default(),
        }
    }

    fn open_io(
        path: &Path,
        create: bool,
        layout: &Layout,
        read_slots: usize,
    ) -> Result<DirectFile, BackendError> {
        let slots = read_slots + write_slots(layout);
        DirectFile::open(path, create, slots, layout.block_bytes(), 256).map_err(direct)
    }

    fn with_io(io: DirectFile, path: &Path, layout: Layout, read_slots: usize) -> Self {
        let free_writes = (read_slots..read_slots + write_slots(&layout)).collect();
        Self {
            media: Media::Disk {
                io: Box::new(io),
                read_slots,
                free_writes,
                writes: HashMap::new(),
                pending: HashSet::new(),
                reaped: Vec::new(),
            },
            slots: vec![Self::empty_slot(&layout); layout.seq_slots],
            layout,
            path: Some(path.to_path_buf()),
            stats: StoreStats::default(),
        }
    }

    /// Reopens a store written by [`Self::create`] and flushed: checks the
    /// header and the file size, reloads the partial blocks and recomputes
    /// the representatives (one read of every full block).
    pub fn open(path: &Path, read_slots: usize) -> Result<Self, BackendError> {
        let ctx = |e: std::io::Error| storage(format!("{}: {e}", path.display()));
        let mut f = std::fs::File::open(path).map_err(ctx)?;
        let size = {
            use std::io::{Seek, SeekFrom};
            let n = f.seek(SeekFrom::End(0)).map_err(ctx)?;
            f.seek(SeekFrom::Start(0)).map_err(ctx)?;
            n
        };
        let mut head = vec![0u8; ALIGN.min(size as usize)];
        f.read_exact(&mut head).map_err(ctx)?;
        let (layout, records) = Layout::decode(&head, |n| {
            let mut all = head.clone();
            all.resize(n, 0);
            let mut f = std::fs::File::open(path).map_err(ctx)?;
            f.read_exact(&mut all)
                .map_err(|_| storage(format!("{}: header cut short", path.display())))?;
            Ok(all)
        })
        .map_err(|e| storage(format!("{}: {e}", path.display())))?;
        let want = layout.file_bytes().unwrap_or(u64::MAX);
        if size < want {
            return Err(storage(format!(
                "{}: truncated: {size} bytes, the layout needs {want}",
                path.display()
            )));
        }
        let io = Self::open_io(path, false, &layout, read_slots)?;
        let mut s = Self::with_io(io, path, layout, read_slots);
        for (i, rec) in records.into_iter().enumerate() {
            if rec.seq == FREE {
                continue;
            }
            s.slots[i].seq = rec.seq;
            s.slots[i].lens = rec.lens;
            s.reload(i)?;
        }
        Ok(s)
    }

    /// Reads back slot `i`'s blocks: representatives of the full ones,
    /// rows of the partial one.
    fn reload(&mut self, i: usize) -> Result<(), BackendError> {
        let l = self.layout;
        let (kvh, block) = (l.shape.kv_heads, l.block);
        let rows_bytes = block * l.row_bytes();
        for layer in 0..l.shape.layers {
            let len = self.slots[i].lens[layer];
            for head in 0..kvh {
                let idx = layer * kvh + head;
                for b in 0..len.div_ceil(block) {
                    let rows = (len - b * block).min(block);
                    let data = self.read_block_sync((i, layer, head, b))?;
                    if rows == block {
                        let reps = self.reps_of(&data[..rows_bytes]);
                        self.slots[i].reps[idx].extend(reps);
                    } else {
                        self.slots[i].tails[idx] = data[..rows * l.row_bytes()].to_vec();
                    }
                }
            }
        }
        Ok(())
    }

    /// The geometry.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The file, if on disk.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether the blocks live in DRAM.
    pub fn is_dram(&self) -> bool {
        matches!(self.media, Media::Dram(_))
    }

    /// Arena slots the scheduler may read into (0 in DRAM).
    pub fn read_slots(&self) -> usize {
        match &self.media {
            Media::Disk { read_slots, .. } => *read_slots,
            Media::Dram(_) => 0,
        }
    }

    /// The slot holding sequence `seq`, if any.
    pub fn slot_of(&self, seq: u32) -> Option<usize> {
        self.slots.iter().position(|s| s.seq == seq && seq != FREE)
    }

    /// Sequences stored (slot order).
    pub fn sequences(&self) -> Vec<u32> {
        self.slots
            .iter()
            .filter(|s| s.seq != FREE)
            .map(|s| s.seq)
            .collect()
    }

    /// Takes a free slot for `seq` (an empty sequence).
    pub fn open_seq(&mut self, seq: u32, shape: ModelShape) -> Result<usize, BackendError> {
        let l = &self.layout.shape;
        if (shape.layers, shape.kv_heads, shape.head_dim) != (l.layers, l.kv_heads, l.head_dim) {
            return Err(BackendError::Shape(format!(
                "the KV store holds {} layers × {} KV heads × d {}, the model has {} × {} × {}",
                l.layers, l.kv_heads, l.head_dim, shape.layers, shape.kv_heads, shape.head_dim
            )));
        }
        if seq == FREE {
            return Err(BackendError::Shape(format!(
                "sequence id {FREE} is reserved"
            )));
        }
        if self.slot_of(seq).is_some() {
            return Err(BackendError::SequenceExists(seq));
        }
        let i = self
            .slots
            .iter()
            .position(|s| s.seq == FREE)
            .ok_or_else(|| storage(format!("all {} sequence slots in use", self.slots.len())))?;
        self.slots[i] = Self::empty_slot(&self.layout);
        self.slots[i].seq = seq;
        if let Media::Dram(d) = &mut self.media {
            d[i].iter_mut().for_each(Vec::clear);
        }
        Ok(i)
    }

    /// Frees `seq`'s slot (its blocks become garbage).
    pub fn close_seq(&mut self, seq: u32) -> Result<(), BackendError> {
        let i = self
            .slot_of(seq)
            .ok_or(BackendError::UnknownSequence(seq))?;
        self.slots[i] = Self::empty_slot(&self.layout);
        Ok(())
    }

    /// Tokens of slot `i`, layer `layer`.
    pub fn len(&self, i: usize, layer: usize) -> usize {
        self.slots[i].lens[layer]
    }

    /// Full blocks of (slot, layer) on the medium.
    pub fn full_blocks(&self, i: usize, layer: usize) -> usize {
        self.slots[i].lens[layer] / self.layout.block
    }

    /// Appends `n` tokens to slot `i`, `layer`: `k`, `v` `[kv_heads][n][d]`
    /// (rounded to fp16). Blocks that fill up are written.
    pub fn append(
        &mut self,
        i: usize,
        layer: usize,
        k: &[f32],
        v: &[f32],
    ) -> Result<(), BackendError> {
        let l = self.layout;
        let (kvh, d, block) = (l.shape.kv_heads, l.shape.head_dim, l.block);
        let n = k.len() / (kvh * d).max(1);
        if k.len() != n * kvh * d || v.len() != k.len() {
            return Err(BackendError::Length {
                what: "k/v",
                expected: n * kvh * d,
                actual: v.len(),
            });
        }
        let len = self.slots[i].lens[layer];
        if len + n > l.capacity_tokens() {
            return Err(storage(format!(
                "the KV store holds {} tokens per sequence; {} + {n} do not fit (larger --capacity)",
                l.capacity_tokens(),
                len
            )));
        }
        for head in 0..kvh {
            let idx = layer * kvh + head;
            for t in 0..n {
                let tail = &mut self.slots[i].tails[idx];
                if tail.len() == block * l.row_bytes() {
                    tail.clear();
                }
                let at = (head * n + t) * d;
                for &x in &k[at..at + d] {
                    tail.extend_from_slice(&f16_bytes(x));
                }
                for &x in &v[at..at + d] {
                    tail.extend_from_slice(&f16_bytes(x));
                }
                if tail.len() == block * l.row_bytes() {
                    let b = (len + t) / block;
                    let data = std::mem::take(&mut self.slots[i].tails[idx]);
                    let reps = self.reps_of(&data);
                    self.slots[i].reps[idx].extend(reps);
                    self.put_block((i, layer, head, b), &data)?;
                    self.slots[i].tails[idx] = data;
                }
            }
        }
        self.slots[i].lens[layer] = len + n;
        let (kv, dram) = (self.kv_bytes() as u64, self.dram_bytes() as u64);
        self.stats.peak_kv_bytes = self.stats.peak_kv_bytes.max(kv);
        self.stats.peak_dram_bytes = self.stats.peak_dram_bytes.max(dram);
        Ok(())
    }

    /// fp16 representative keys of one full block's rows.
    fn reps_of(&self, rows: &[u8]) -> Vec<u16> {
        let d = self.layout.shape.head_dim;
        let keys: Vec<f32> = rows
            .chunks_exact(self.layout.row_bytes())
            .flat_map(|r| (0..d).map(move |j| f16_at(r, j)))
            .collect();
        representative_keys(&keys, d)
            .into_iter()
            .map(|x| half::f16::from_f32(x).to_bits())
            .collect()
    }

    /// The representative keys (f32, `[REPS][d]`) of full block `b`.
    pub fn reps(&self, i: usize, layer: usize, head: usize, b: usize, out: &mut Vec<f32>) {
        let d = self.layout.shape.head_dim;
        let r = &self.slots[i].reps[layer * self.layout.shape.kv_heads + head];
        use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
        let bits = &r[b * REPS * d..(b + 1) * REPS * d];
        out.clear();
        out.resize(bits.len(), 0.0);
        bits.reinterpret_cast::<half::f16>()
            .convert_to_f32_slice(out);
    }

    /// The newest block of (slot, layer, head) held in DRAM: its index and
    /// rows (none when empty).
    pub fn tail(&self, i: usize, layer: usize, head: usize) -> Option<(usize, &[u8])> {
        let t = &self.slots[i].tails[layer * self.layout.shape.kv_heads + head];
        if t.is_empty() {
            return None;
        }
        let rows = t.len() / self.layout.row_bytes();
        let len = self.slots[i].lens[layer];
        Some(((len - rows) / self.layout.block, t))
    }

    /// In DRAM media: full block `b`'s rows.
    pub fn dram_block(&self, i: usize, layer: usize, head: usize, b: usize) -> Option<&[u8]> {
        let bytes = self.layout.block * self.layout.row_bytes();
        match &self.media {
            Media::Dram(d) => {
                d[i][layer * self.layout.shape.kv_heads + head].get(b * bytes..(b + 1) * bytes)
            }
            Media::Disk { .. } => None,
        }
    }

    /// Writes one block (a full one, or a partial one padded) at its place.
    fn put_block(&mut self, key: BlockKey, rows: &[u8]) -> Result<(), BackendError> {
        let l = self.layout;
        let (i, layer, head, b) = key;
        match &mut self.media {
            Media::Dram(d) => {
                let bytes = l.block * l.row_bytes();
                let v = &mut d[i][layer * l.shape.kv_heads + head];
                if v.len() < (b + 1) * bytes {
                    v.resize((b + 1) * bytes, 0);
                }
                v[b * bytes..b * bytes + rows.len()].copy_from_slice(rows);
                Ok(())
            }
            Media::Disk { .. } => {
                let ws = self.write_slot()?;
                let Media::Disk {
                    io,
                    writes,
                    pending,
                    ..
                } = &mut self.media
                else {
                    return Err(storage("medium changed"));
                };
                let buf = io.slot_mut(ws).map_err(direct)?;
                buf[..rows.len()].copy_from_slice(rows);
                buf[rows.len()..].fill(0);
                let tag = io
                    .write(ws, l.offset(i, layer, head, b), l.block_bytes())
                    .map_err(direct)?;
                io.submit().map_err(direct)?;
                writes.insert(tag, (ws, key));
                pending.insert(key);
                self.stats.writes += 1;
                self.stats.bytes_written += l.block_bytes() as u64;
                Ok(())
            }
        }
    }

    /// A free write slot, reaping completions until one frees.
    fn write_slot(&mut self) -> Result<usize, BackendError> {
        loop {
            let Media::Disk { free_writes, .. } = &mut self.media else {
                return Err(storage("no write slots in DRAM"));
            };
            if let Some(s) = free_writes.pop() {
                return Ok(s);
            }
            self.reap_one()?;
        }
    }

    /// Reaps one completion: a write frees its slot; a read is kept for
    /// [`Self::wait_read`].
    fn reap_one(&mut self) -> Result<(), BackendError> {
        let Media::Disk {
            io,
            free_writes,
            writes,
            pending,
            reaped,
            ..
        } = &mut self.media
        else {
            return Err(storage("nothing in flight in DRAM"));
        };
        let done = io.wait().map_err(direct)?;
        if let Some((ws, key)) = writes.remove(&done.tag) {
            free_writes.push(ws);
            pending.remove(&key);
            if done.moved != done.len {
                return Err(storage(format!(
                    "short write of block {key:?}: {} of {} bytes",
                    done.moved, done.len
                )));
            }
        } else {
            reaped.push(done);
        }
        Ok(())
    }

    /// Queues a read of blocks `first..first + n` of (slot, layer, head)
    /// into read slots `slot..slot + n`; returns its tag. Waits for those
    /// blocks' writes if they are still in flight. Not submitted until
    /// [`Self::submit`] or [`Self::wait_read`].
    pub fn issue_read(
        &mut self,
        slot: usize,
        key: BlockKey,
        n: usize,
    ) -> Result<u64, BackendError> {
        let l = self.layout;
        let (i, layer, head, first) = key;
        if first + n > self.full_blocks(i, layer) {
            return Err(storage(format!(
                "blocks {first}..{} of layer {layer} are not on the drive",
                first + n
            )));
        }
        loop {
            let Media::Disk { pending, .. } = &self.media else {
                return Err(storage("reads from a DRAM store"));
            };
            if !(first..first + n).any(|b| pending.contains(&(i, layer, head, b))) {
                break;
            }
            self.reap_one()?;
        }
        let Media::Disk { io, read_slots, .. } = &mut self.media else {
            return Err(storage("reads from a DRAM store"));
        };
        if slot + n > *read_slots {
            return Err(storage(format!(
                "read slots {slot}..{} of {read_slots}",
                slot + n
            )));
        }
        let tag = io
            .read(slot, l.offset(i, layer, head, first), n * l.block_bytes())
            .map_err(direct)?;
        self.stats.reads += 1;
        self.stats.bytes_read += (n * l.block_bytes()) as u64;
        self.stats.depth_sum += io.in_flight() as u64;
        Ok(tag)
    }

    /// Hands queued reads and writes to the kernel.
    pub fn submit(&mut self) -> Result<(), BackendError> {
        match &mut self.media {
            Media::Disk { io, .. } => io.submit().map_err(direct),
            Media::Dram(_) => Ok(()),
        }
    }

    /// The next completed read (waiting for it); a short read is an error.
    pub fn wait_read(&mut self) -> Result<Done, BackendError> {
        loop {
            if let Media::Disk { reaped, .. } = &mut self.media
                && let Some(d) = reaped.pop()
            {
                if d.moved != d.len {
                    return Err(storage(format!(
                        "short read: {} of {} bytes (file truncated?)",
                        d.moved, d.len
                    )));
                }
                return Ok(d);
            }
            self.reap_one()?;
        }
    }

    /// Rows of read slot `slot` (a block's bytes).
    pub fn slot_rows(&self, slot: usize) -> Result<&[u8], BackendError> {
        match &self.media {
            Media::Disk { io, .. } => io
                .slot(slot)
                .map(|s| &s[..self.layout.block * self.layout.row_bytes()])
                .map_err(direct),
            Media::Dram(_) => Err(storage("no read slots in DRAM")),
        }
    }

    /// Reads one block now (bypassing the scheduler; used on reopen and by
    /// tests), through a write slot.
    pub fn read_block_sync(&mut self, key: BlockKey) -> Result<Vec<u8>, BackendError> {
        let (i, layer, head, b) = key;
        if self.is_dram() {
            return self
                .dram_block(i, layer, head, b)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| storage(format!("block {key:?} not stored")));
        }
        let ws = self.write_slot()?;
        let res = self.read_into(ws, key);
        if let Media::Disk { free_writes, .. } = &mut self.media {
            free_writes.push(ws);
        }
        let d = res?;
        if d.moved != d.len {
            return Err(storage(format!(
                "short read of block {key:?}: {} of {} bytes (file truncated?)",
                d.moved, d.len
            )));
        }
        let Media::Disk { io, .. } = &self.media else {
            return Err(storage("medium changed"));
        };
        Ok(io.slot(ws).map_err(direct)?.to_vec())
    }

    /// Reads block `key` into arena slot `ws` and waits for it (other
    /// completions reaped meanwhile keep their bookkeeping).
    fn read_into(&mut self, ws: usize, key: BlockKey) -> Result<Done, BackendError> {
        let l = self.layout;
        let (i, layer, head, b) = key;
        // A write of this block still in flight lands first.
        while matches!(&self.media, Media::Disk { pending, .. } if pending.contains(&key)) {
            self.reap_one()?;
        }
        let Media::Disk { io, .. } = &mut self.media else {
            return Err(storage("reads from a DRAM store"));
        };
        let tag = io
            .read(ws, l.offset(i, layer, head, b), l.block_bytes())
            .map_err(direct)?;
        loop {
            if let Media::Disk { reaped, .. } = &mut self.media
                && let Some(at) = reaped.iter().position(|d| d.tag == tag)
            {
                return Ok(reaped.swap_remove(at));
            }
            self.reap_one()?;
        }
    }

    /// Writes the partial blocks and the header, waits for every write and
    /// `fsync`s. Appends before a flush survive a reopen.
    pub fn flush(&mut self) -> Result<(), BackendError> {
        if self.is_dram() {
            return Ok(());
        }
        let l = self.layout;
        let rows_full = l.block * l.row_bytes();
        for i in 0..self.slots.len() {
            if self.slots[i].seq == FREE {
                continue;
            }
            for layer in 0..l.shape.layers {
                for head in 0..l.shape.kv_heads {
                    let idx = layer * l.shape.kv_heads + head;
                    let t = &self.slots[i].tails[idx];
                    if !t.is_empty() && t.len() < rows_full {
                        let b = self.slots[i].lens[layer] / l.block;
                        let rows = t.clone();
                        self.put_block((i, layer, head, b), &rows)?;
                    }
                }
            }
        }
        self.write_header()
    }

    /// Writes the header (through the write slots) and waits for all
    /// writes, then syncs the file.
    fn write_header(&mut self) -> Result<(), BackendError> {
        let records: Vec<SlotRecord> = self
            .slots
            .iter()
            .map(|s| SlotRecord {
                seq: s.seq,
                lens: s.lens.clone(),
            })
            .collect();
        let header = self.layout.encode(&records);
        let bb = self.layout.block_bytes();
        for (c, chunk) in header.chunks(bb).enumerate() {
            let ws = self.write_slot()?;
            let Media::Disk { io, writes, .. } = &mut self.media else {
                return Ok(());
            };
            let buf = io.slot_mut(ws).map_err(direct)?;
            buf[..chunk.len()].copy_from_slice(chunk);
            let len = chunk.len().next_multiple_of(ALIGN);
            let tag = io.write(ws, (c * bb) as u64, len).map_err(direct)?;
            writes.insert(tag, (ws, (usize::MAX, 0, 0, c)));
            self.stats.writes += 1;
            self.stats.bytes_written += len as u64;
        }
        loop {
            let Media::Disk { writes, io, .. } = &mut self.media else {
                return Ok(());
            };
            if writes.is_empty() {
                io.file()
                    .sync_all()
                    .map_err(|e| storage(format!("fsync: {e}")))?;
                return Ok(());
            }
            self.reap_one()?;
        }
    }

    /// DRAM this store holds: the I/O arena (disk) or the blocks (DRAM),
    /// the partial blocks and the representatives, in bytes.
    pub fn dram_bytes(&self) -> usize {
        let media = match &self.media {
            Media::Disk { io, .. } => io.arena_bytes(),
            Media::Dram(d) => d.iter().flatten().map(Vec::len).sum(),
        };
        let tails: usize = self
            .slots
            .iter()
            .filter(|s| s.seq != FREE)
            .map(|_| {
                self.layout.shape.layers
                    * self.layout.shape.kv_heads
                    * self.layout.block
                    * self.layout.row_bytes()
            })
            .sum();
        let reps: usize = self
            .slots
            .iter()
            .flat_map(|s| s.reps.iter())
            .map(|r| 2 * r.len())
            .sum();
        media + tails + reps
    }

    /// Bytes of the KV cache stored (all sequences, fp16 K and V).
    pub fn kv_bytes(&self) -> usize {
        let per_token = self.layout.shape.kv_heads * self.layout.row_bytes();
        self.slots
            .iter()
            .filter(|s| s.seq != FREE)
            .map(|s| s.lens.iter().sum::<usize>() * per_token)
            .sum()
    }
}

impl Drop for KvStore {
    fn drop(&mut self) {
        // Let writes in flight land (the DirectFile also waits, but here
        // their bookkeeping stays consistent for a final flush by callers).
        if let Media::Disk { io, .. } = &mut self.media {
            let _ = io.drain();
        }
    }
}
