//! [`DirectFile`]: block I/O that bypasses the page cache — a file (or a
//! raw namespace such as `/dev/nvme0n1`) opened with `O_DIRECT`, read and
//! written through io_uring (`IORING_OP_READ_FIXED` / `WRITE_FIXED`) into
//! one page-aligned arena of equal slots registered with the ring once.
//!
//! Every transfer names a run of consecutive slots, a file offset and a
//! length, all multiples of [`ALIGN`] (what `O_DIRECT` asks of block
//! devices and file systems with 4 KiB blocks). A slot that is part of a
//! transfer in flight cannot be borrowed ([`DirectFile::slot`] says
//! [`DirectError::Busy`]); it is released when its completion is reaped
//! by [`DirectFile::wait`]. Dropping the file waits for everything in
//! flight first, so the kernel never writes into freed memory.
#![allow(unsafe_code)] // the aligned arena and the io_uring entries that point into it

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::ptr::NonNull;

use io_uring::{IoUring, opcode, types};

/// Alignment of offsets, lengths and buffers.
pub const ALIGN: usize = 4096;

/// Why a direct transfer failed.
#[derive(Debug, thiserror::Error)]
pub enum DirectError {
    /// The operating system refused (open, io_uring, the transfer itself).
    #[error("{what}: {source}")]
    Io {
        /// What was attempted.
        what: String,
        /// The system error.
        source: std::io::Error,
    },
    /// The file system does not do direct I/O.
    #[error("{0}: the file system does not support O_DIRECT (tmpfs?); put the KV store on a disk")]
    NoDirectIo(String),
    /// An offset, length or slot run that is not aligned or out of range.
    #[error("bad transfer: {0}")]
    Bad(String),
    /// The slot is part of a transfer in flight.
    #[error("slot {0} is in flight")]
    Busy(usize),
}

fn io_err(what: impl Into<String>, source: std::io::Error) -> DirectError {
    DirectError::Io {
        what: what.into(),
        source,
    }
}

/// Page-aligned, zeroed memory that the kernel may DMA into.
struct Arena {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Arena {
    fn new(len: usize) -> Result<Self, DirectError> {
        let layout = Layout::from_size_align(len.max(ALIGN), ALIGN)
            .map_err(|e| DirectError::Bad(format!("arena of {len} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size (at least ALIGN).
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| {
            io_err(
                format!("allocating {len} aligned bytes"),
                std::io::Error::from(std::io::ErrorKind::OutOfMemory),
            )
        })?;
        Ok(Self { ptr, layout })
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// A transfer in flight.
#[derive(Debug, Clone, Copy)]
struct Op {
    first: usize,
    slots: usize,
    len: usize,
    write: bool,
}

/// What a reaped completion says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    /// The tag [`DirectFile::read`] / [`DirectFile::write`] returned.
    pub tag: u64,
    /// First slot of the transfer.
    pub slot: usize,
    /// Bytes asked.
    pub len: usize,
    /// Bytes moved (a read past the end of the file moves fewer).
    pub moved: usize,
    /// Whether it was a write.
    pub write: bool,
}

/// An `O_DIRECT` file with an io_uring and a registered slot arena.
pub struct DirectFile {
    ring: IoUring,
    file: File,
    /// Freed by `Drop` once the kernel is done with it (leaked if the ring
    /// fails so that this cannot be known).
    arena: std::mem::ManuallyDrop<Arena>,
    slot_size: usize,
    slots: usize,
    busy: Vec<bool>,
    inflight: HashMap<u64, Op>,
    next: u64,
    queued: usize,
}

impl std::fmt::Debug for DirectFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectFile")
            .field("slots", &self.slots)
            .field("slot_size", &self.slot_size)
            .field("in_flight", &self.inflight.len())
            .finish_non_exhaustive()
    }
}

impl DirectFile {
    /// Opens (or creates, with `create`) `path` for direct I/O with `slots`
    /// slots of `slot_size` bytes (a multiple of [`ALIGN`]) and a ring of
    /// `entries` submission entries.
    pub fn open(
        path: &Path,
        create: bool,
        slots: usize,
        slot_size: usize,
        entries: u32,
    ) -> Result<Self, DirectError> {
        if slot_size == 0 || !slot_size.is_multiple_of(ALIGN) || slots == 0 {
            return Err(DirectError::Bad(format!(
                "{slots} slots of {slot_size} bytes (need ≥ 1 slot of a multiple of {ALIGN})"
            )));
        }
        let total = slots
            .checked_mul(slot_size)
            .filter(|&t| t <= u32::MAX as usize)
            .ok_or_else(|| DirectError::Bad(format!("{slots} × {slot_size} bytes is too much")))?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::EINVAL) {
                    DirectError::NoDirectIo(path.display().to_string())
                } else {
                    io_err(format!("open {}", path.display()), e)
                }
            })?;
        let ring = IoUring::new(entries.max(2)).map_err(|e| io_err("io_uring setup", e))?;
        let arena = Arena::new(total)?;
        let iov = libc::iovec {
            iov_base: arena.ptr.as_ptr().cast(),
            iov_len: total,
        };
        // SAFETY: the arena outlives the registration: `Drop` reaps every
        // transfer and unregisters before freeing it.
        unsafe { ring.submitter().register_buffers(&[iov]) }
            .map_err(|e| io_err("io_uring register_buffers", e))?;
        Ok(Self {
            ring,
            file,
            arena: std::mem::ManuallyDrop::new(arena),
            slot_size,
            slots,
            busy: vec![false; slots],
            inflight: HashMap::new(),
            next: 0,
            queued: 0,
        })
    }

    /// The underlying file (for its length, `set_len`, `sync_all`).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Bytes per slot.
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// Slots in the arena.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Bytes of the arena (the DRAM this file holds).
    pub fn arena_bytes(&self) -> usize {
        self.slots * self.slot_size
    }

    /// Transfers submitted or queued and not yet reaped.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    fn range(&self, slot: usize, n: usize) -> Result<std::ops::Range<usize>, DirectError> {
        if n == 0 || slot.checked_add(n).is_none_or(|end| end > self.slots) {
            return Err(DirectError::Bad(format!(
                "slots {slot}..{} of {}",
                slot.saturating_add(n),
                self.slots
            )));
        }
        if let Some(i) = (slot..slot + n).find(|&i| self.busy[i]) {
            return Err(DirectError::Busy(i));
        }
        Ok(slot * self.slot_size..(slot + n) * self.slot_size)
    }

    /// Slots `slot..slot + n` as one byte run.
    pub fn slots_ref(&self, slot: usize, n: usize) -> Result<&[u8], DirectError> {
        let r = self.range(slot, n)?;
        // SAFETY: in bounds of the arena; no transfer in flight touches
        // these slots (checked), and none can start while `&self` is held
        // (starting one takes `&mut self`).
        Ok(unsafe { std::slice::from_raw_parts(self.arena.ptr.as_ptr().add(r.start), r.len()) })
    }

    /// Slots `slot..slot + n` as one mutable byte run.
    pub fn slots_mut(&mut self, slot: usize, n: usize) -> Result<&mut [u8], DirectError> {
        let r = self.range(slot, n)?;
        // SAFETY: as in `slots_ref`, and `&mut self` makes the borrow
        // unique.
        Ok(
            unsafe {
                std::slice::from_raw_parts_mut(self.arena.ptr.as_ptr().add(r.start), r.len())
            },
        )
    }

    /// One slot.
    pub fn slot(&self, slot: usize) -> Result<&[u8], DirectError> {
        self.slots_ref(slot, 1)
    }

    /// One slot, mutable.
    pub fn slot_mut(&mut self, slot: usize) -> Result<&mut [u8], DirectError> {
        self.slots_mut(slot, 1)
    }

    /// Queues a read of `len` bytes at `offset` into slots `slot..`; returns
    /// its tag. Nothing moves until [`Self::submit`] or [`Self::wait`].
    pub fn read(&mut self, slot: usize, offset: u64, len: usize) -> Result<u64, DirectError> {
        self.queue(slot, offset, len, false)
    }

    /// Queues a write of `len` bytes from slots `slot..` at `offset`.
    pub fn write(&mut self, slot: usize, offset: u64, len: usize) -> Result<u64, DirectError> {
        self.queue(slot, offset, len, true)
    }

    fn queue(
        &mut self,
        slot: usize,
        offset: u64,
        len: usize,
        write: bool,
    ) -> Result<u64, DirectError> {
        if len == 0 || !len.is_multiple_of(ALIGN) || !offset.is_multiple_of(ALIGN as u64) {
            return Err(DirectError::Bad(format!(
                "{len} bytes at offset {offset}: both must be non-zero multiples of {ALIGN}"
            )));
        }
        let n = len.div_ceil(self.slot_size);
        let r = self.range(slot, n)?;
        let tag = self.next;
        self.next += 1;
        // SAFETY: in bounds of the arena (checked by `range`).
        let ptr = unsafe { self.arena.ptr.as_ptr().add(r.start) };
        let fd = types::Fd(self.file.as_raw_fd());
        let entry = if write {
            opcode::WriteFixed::new(fd, ptr, len as u32, 0)
                .offset(offset)
                .build()
        } else {
            opcode::ReadFixed::new(fd, ptr, len as u32, 0)
                .offset(offset)
                .build()
        }
        .user_data(tag);
        loop {
            // SAFETY: the entry points into the registered arena, which
            // lives until every transfer is reaped (see `Drop`); the slots
            // are marked busy below, so no borrow of them exists or can be
            // made until the completion is reaped.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_ok() {
                break;
            }
            self.submit()?;
        }
        self.busy[slot..slot + n].fill(true);
        self.inflight.insert(
            tag,
            Op {
                first: slot,
                slots: n,
                len,
                write,
            },
        );
        self.queued += 1;
        Ok(tag)
    }

    /// Hands the queued transfers to the kernel without waiting.
    pub fn submit(&mut self) -> Result<(), DirectError> {
        if self.queued > 0 {
            self.ring
                .submit()
                .map_err(|e| io_err("io_uring submit", e))?;
            self.queued = 0;
        }
        Ok(())
    }

    /// Submits what is queued and reaps one completion (waiting for it),
    /// releasing its slots. A failed transfer is an error naming it; its
    /// slots are released too.
    pub fn wait(&mut self) -> Result<Done, DirectError> {
        loop {
            if let Some(cqe) = self.ring.completion().next() {
                let tag = cqe.user_data();
                let op = self.inflight.remove(&tag).ok_or_else(|| {
                    io_err(
                        "io_uring",
                        std::io::Error::other(format!("completion of unknown tag {tag}")),
                    )
                })?;
                self.busy[op.first..op.first + op.slots].fill(false);
                let res = cqe.result();
                if res < 0 {
                    return Err(io_err(
                        format!(
                            "{} of {} bytes",
                            if op.write { "write" } else { "read" },
                            op.len
                        ),
                        std::io::Error::from_raw_os_error(-res),
                    ));
                }
                return Ok(Done {
                    tag,
                    slot: op.first,
                    len: op.len,
                    moved: res as usize,
                    write: op.write,
                });
            }
            if self.inflight.is_empty() {
                return Err(io_err(
                    "io_uring wait",
                    std::io::Error::other("nothing in flight"),
                ));
            }
            self.queued = 0;
            self.ring
                .submit_and_wait(1)
                .map_err(|e| io_err("io_uring submit_and_wait", e))?;
        }
    }

    /// Reaps every transfer in flight; the first failure (after all are
    /// reaped) is returned.
    pub fn drain(&mut self) -> Result<Vec<Done>, DirectError> {
        let mut done = Vec::with_capacity(self.inflight.len());
        let mut first_err = None;
        while !self.inflight.is_empty() {
            match self.wait() {
                Ok(d) => done.push(d),
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(e);
                    }
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(done),
        }
    }
}

impl Drop for DirectFile {
    fn drop(&mut self) {
        // The kernel must be done with the arena before it is freed.
        while !self.inflight.is_empty() {
            if self.ring.submit_and_wait(1).is_err() {
                // The ring itself failed: leak the arena rather than free
                // memory the kernel may still write.
                return;
            }
            while let Some(cqe) = self.ring.completion().next() {
                self.inflight.remove(&cqe.user_data());
            }
        }
        let _ = self.ring.submitter().unregister_buffers();
        // SAFETY: nothing is in flight and the buffers are unregistered;
        // the arena is dropped exactly once, here.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.arena) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("nvme-linux-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn writes_and_reads_back_through_the_ring() {
        let path = tmp("rw");
        let mut f = match DirectFile::open(&path, true, 4, 2 * ALIGN, 8) {
            Ok(f) => f,
            // A temp dir on tmpfs cannot do this test's subject.
            Err(DirectError::NoDirectIo(_)) => return,
            Err(e) => panic!("{e}"),
        };
        f.file().set_len(64 * 1024).unwrap();
        for (i, b) in f.slots_mut(0, 2).unwrap().iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        let w = f.write(0, 8192, 4 * ALIGN).unwrap();
        assert!(matches!(f.slot(1), Err(DirectError::Busy(1))));
        let d = f.wait().unwrap();
        assert_eq!((d.tag, d.moved, d.write), (w, 4 * ALIGN, true));
        // Two reads in flight at once, into other slots.
        f.read(2, 8192, 2 * ALIGN).unwrap();
        f.read(3, 8192 + 2 * ALIGN as u64, 2 * ALIGN).unwrap();
        assert_eq!(f.drain().unwrap().len(), 2);
        let got = f.slots_ref(2, 2).unwrap().to_vec();
        assert_eq!(got, f.slots_ref(0, 2).unwrap());
        // Past the end: a short read, not an error.
        f.read(0, 60 * 1024, 2 * ALIGN).unwrap();
        assert_eq!(f.wait().unwrap().moved, ALIGN);
        // Misaligned or out of range: refused before anything moves.
        assert!(matches!(f.read(0, 100, ALIGN), Err(DirectError::Bad(_))));
        assert!(matches!(f.read(0, 0, 100), Err(DirectError::Bad(_))));
        assert!(matches!(
            f.read(3, 0, 2 * ALIGN * 2),
            Err(DirectError::Bad(_))
        ));
        assert!(f.wait().is_err(), "nothing in flight");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn bad_geometry_is_refused() {
        let path = tmp("geom");
        assert!(matches!(
            DirectFile::open(&path, true, 1, 1000, 8),
            Err(DirectError::Bad(_))
        ));
        assert!(matches!(
            DirectFile::open(&path, true, 0, ALIGN, 8),
            Err(DirectError::Bad(_))
        ));
        assert!(DirectFile::open(&tmp("missing/x"), false, 1, ALIGN, 8).is_err());
    }
}
