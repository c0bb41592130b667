//! FlexGen's disk → host rate, measured on this machine: the files and the
//! reads of one decode step as FlexGen does them, from a cold page cache.
//!
//! FlexGen (FlexLLMGen `flexllmgen/pytorch_backend.py`) keeps each layer's
//! K and V caches as two `.npy` memory maps of shape `(prompt + gen − 1,
//! b·heads, d)` fp16 (`TorchDisk::allocate`, `init_cache_one_gpu_batch`).
//! A decode step at context s copies the prefix `[0:s]` of each into a
//! pinned buffer, one item per file on its copy threads (4 of them,
//! `copy_worker_func`), and waits for the layer before the next one
//! (`flex_opt.py`, `OptLM::sync`). The probe does the same: per layer, the
//! K and V prefixes shared among 4 threads, each read into the thread's
//! own buffer, and a wait at the end of the layer. Reads go through the
//! page cache in 128 KiB calls (Linux's default readahead window, the unit
//! a memory map's page faults are served in); a memory map's faults cost
//! more per page than these reads, so the rate is, if anything,
//! FlexGen's best case.
//!
//! Before the reads every file is written, flushed to the disk and dropped
//! from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`), so every
//! byte comes from the disk. The rate is wall-clock bytes over seconds.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::RunError;

/// The `.npy` header numpy writes before the data (version 1, padded to 128).
const NPY_HEADER: u64 = 128;
/// Bytes per read call.
const CHUNK: usize = 128 << 10;
/// FlexGen's copy threads.
pub const COPY_THREADS: usize = 4;

/// The files and the step the probe reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeShape {
    /// Layers (two files each: K and V).
    pub layers: usize,
    /// Rows of a file: `prompt + gen − 1` tokens.
    pub rows: usize,
    /// Rows the step reads: its context s.
    pub rows_read: usize,
    /// Bytes of a row: `b·heads·d` fp16 values.
    pub row_bytes: usize,
}

impl ProbeShape {
    /// OPT-13B's cache (40 heads, d = 128) for 1024 + 1024 tokens, read at
    /// s = 1536 (the middle of the output), 4 layers, with the batch chosen
    /// so that about `bytes` are read.
    pub fn opt_13b(bytes: u64) -> Self {
        let (layers, rows, rows_read, per_seq) = (4, 2047, 1536, 40 * 128 * 2);
        let b = (bytes as usize / (2 * layers * rows_read * per_seq)).max(1);
        Self {
            layers,
            rows,
            rows_read,
            row_bytes: b * per_seq,
        }
    }

    /// Bytes of one file's data.
    pub fn file_bytes(&self) -> usize {
        self.rows * self.row_bytes
    }

    /// Bytes one item (one file's prefix) reads.
    pub fn item_bytes(&self) -> usize {
        self.rows_read * self.row_bytes
    }
}

/// What the probe measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeResult {
    /// The shape read.
    pub shape: ProbeShape,
    /// Bytes read.
    pub bytes: u64,
    /// Wall-clock seconds of the reads (writing the files not counted).
    pub wall_s: f64,
}

impl ProbeResult {
    /// Wall-clock rate, B/s.
    pub fn bytes_per_s(&self) -> f64 {
        self.bytes as f64 / self.wall_s.max(f64::MIN_POSITIVE)
    }
}

fn err(path: &Path, what: &str, e: impl std::fmt::Display) -> RunError {
    RunError::Output {
        path: path.display().to_string(),
        reason: format!("FlexGen disk probe: {what}: {e}"),
    }
}

/// Drops a written file's pages from the page cache.
#[cfg(target_os = "linux")]
fn drop_cached(f: &File, path: &Path) -> Result<(), RunError> {
    rustix::fs::fadvise(f, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| err(path, "posix_fadvise(DONTNEED)", e))
}

#[cfg(not(target_os = "linux"))]
fn drop_cached(_: &File, path: &Path) -> Result<(), RunError> {
    Err(err(
        path,
        "a cold page cache",
        "needs Linux's posix_fadvise",
    ))
}

fn write_file(path: &Path, shape: &ProbeShape) -> Result<(), RunError> {
    let mut f = File::create(path).map_err(|e| err(path, "cannot create", e))?;
    // Not all zeros, so no layer below can skip the data.
    let mut buf = vec![0u8; 4 << 20];
    for (i, x) in buf.iter_mut().enumerate() {
        *x = (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3];
    }
    f.write_all(&buf[..NPY_HEADER as usize])
        .map_err(|e| err(path, "cannot write", e))?;
    let mut left = shape.file_bytes();
    while left > 0 {
        let n = left.min(buf.len());
        f.write_all(&buf[..n])
            .map_err(|e| err(path, "cannot write", e))?;
        left -= n;
    }
    f.sync_all().map_err(|e| err(path, "cannot flush", e))?;
    drop_cached(&f, path)
}

fn read_item(path: &Path, len: usize, buf: &mut [u8]) -> Result<u64, RunError> {
    let f = File::open(path).map_err(|e| err(path, "cannot open", e))?;
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK);
        f.read_exact_at(&mut buf[done..done + n], NPY_HEADER + done as u64)
            .map_err(|e| err(path, "cannot read", e))?;
        done += n;
    }
    Ok(done as u64)
}

/// The files of `shape` in `dir`, read once as one decode step reads them.
fn measure(dir: &Path, shape: &ProbeShape) -> Result<ProbeResult, RunError> {
    let mut layers: Vec<[PathBuf; 2]> = Vec::new();
    for l in 0..shape.layers {
        let kv = [dir.join(format!("k{l}.npy")), dir.join(format!("v{l}.npy"))];
        for p in &kv {
            write_file(p, shape)?;
        }
        layers.push(kv);
    }
    let mut bufs: Vec<Vec<u8>> = (0..COPY_THREADS)
        .map(|_| vec![0u8; shape.item_bytes()])
        .collect();
    let t0 = Instant::now();
    let mut bytes = 0;
    for items in &layers {
        // One layer: its items shared among the copy threads, then a wait.
        let next = AtomicUsize::new(0);
        let results: Vec<Result<u64, RunError>> = std::thread::scope(|sc| {
            let handles: Vec<_> = bufs
                .iter_mut()
                .map(|buf| {
                    let next = &next;
                    sc.spawn(move || {
                        let mut n = 0;
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(p) = items.get(i) else {
                                return Ok(n);
                            };
                            n += read_item(p, shape.item_bytes(), buf)?;
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(err(dir, "a copy thread", "panicked")))
                })
                .collect()
        });
        for r in results {
            bytes += r?;
        }
    }
    Ok(ProbeResult {
        shape: *shape,
        bytes,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

/// Measures FlexGen's disk → host rate with `shape`'s files in a fresh
/// folder under `parent`, removed afterwards (also on failure).
pub fn probe(parent: &Path, shape: &ProbeShape) -> Result<ProbeResult, RunError> {
    let dir = parent.join(format!("flexgen-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| err(&dir, "cannot create the folder", e))?;
    let r = measure(&dir, shape);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: ProbeShape = ProbeShape {
        layers: 2,
        rows: 64,
        rows_read: 48,
        row_bytes: 4096,
    };

    #[test]
    fn a_small_probe_reads_every_prefix_at_a_positive_rate() {
        let parent =
            std::env::temp_dir().join(format!("instinfer-fg-probe-{}", std::process::id()));
        let r = probe(&parent, &SMALL).expect("probe");
        assert_eq!(r.bytes, (2 * 2 * 48 * 4096) as u64);
        assert!(r.bytes_per_s() > 0.0);
        // The probe's own folder is gone.
        let left: Vec<_> = std::fs::read_dir(&parent).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
        let _ = std::fs::remove_dir_all(&parent);
    }

    #[test]
    fn an_unwritable_folder_is_a_clear_error() {
        // A folder under a regular file cannot be made (even by root).
        let file =
            std::env::temp_dir().join(format!("instinfer-fg-probe-file-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        let e = probe(&file.join("out"), &SMALL).unwrap_err();
        let _ = std::fs::remove_file(&file);
        let msg = e.to_string();
        assert!(
            msg.contains("FlexGen disk probe") && msg.contains("cannot create the folder"),
            "{msg}"
        );
    }

    #[test]
    fn the_opt_13b_shape_reads_about_the_budget() {
        let s = ProbeShape::opt_13b(256 << 20);
        let read = (2 * s.layers * s.item_bytes()) as f64;
        assert!(read > 0.8 * (256 << 20) as f64 && read <= (256 << 20) as f64);
        assert_eq!(s.row_bytes % (40 * 128 * 2), 0);
    }
}
