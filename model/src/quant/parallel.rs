//! How many threads a kernel uses: the machine's cores (at most 8), fewer
//! when the work is too small to pay for spawning.

use std::sync::OnceLock;

/// Most threads any kernel spawns.
pub const MAX_THREADS: usize = 8;
/// Multiply-adds below which another thread does not pay off.
const MIN_WORK_PER_THREAD: usize = 64 * 1024;

/// Threads available to kernels: `available_parallelism`, capped at 8.
pub fn default_threads() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_THREADS)
    })
}

/// Threads for `work` multiply-adds.
pub(crate) fn threads_for(work: usize) -> usize {
    (work / MIN_WORK_PER_THREAD).clamp(1, default_threads())
}
