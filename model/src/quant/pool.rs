//! The kernels' worker threads: started once, each waiting for one job at
//! a time. A decode step runs a few hundred small matvecs (tens of
//! microseconds each), so a worker first spins on its slot for a while
//! before it parks: waking a parked thread through the kernel costs about
//! as much as a small matvec (measured with rayon's sleeping workers:
//! decode on two threads ran slower than on one). Jobs own what they use
//! (`Arc`s), so this is safe code; a caller that finds the pool busy
//! (another thread's matvec) runs its parts itself, with the same result,
//! and a caller done with its own part takes back any job its worker has
//! not started (a parked worker wakes later than a small job takes).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// A part of the work: writes its results into the (cleared) buffer it is
/// given, which the worker keeps from job to job so a large result does
/// not cost a fresh allocation (and its page faults) every time.
pub(super) type Job = Box<dyn FnOnce(&mut Vec<f32>) + Send>;

/// How long an idle worker spins before it parks. Longer than one layer's
/// attention on the simulated drive (which runs on the caller's thread),
/// so that the worker is still awake for the next matvec: a parked
/// worker's wake-up cost up to ~150 µs of kernel time per layer on a
/// 2-vCPU VM, and with 300 µs here SparF decode on the simulated drive
/// ran at 31 tokens/s against 42 with 2 ms.
const SPIN: Duration = Duration::from_micros(2000);

const IDLE: u8 = 0;
/// A job is in the slot, not yet taken.
const READY: u8 = 1;
/// The worker took the job.
const RUNNING: u8 = 2;
const DONE: u8 = 3;

struct Slot {
    state: AtomicU8,
    job: Mutex<Option<Job>>,
    /// The job's result buffer.
    result: Mutex<Vec<f32>>,
    /// Whether the last job finished (did not panic).
    ok: std::sync::atomic::AtomicBool,
}

struct Worker {
    slot: Arc<Slot>,
    thread: Thread,
}

/// The pool: `default_threads() − 1` workers (the caller is the other).
pub(super) struct Pool {
    workers: Mutex<Vec<Worker>>,
}

impl Pool {
    /// The process's pool.
    pub(super) fn get() -> &'static Pool {
        static POOL: OnceLock<Pool> = OnceLock::new();
        POOL.get_or_init(|| {
            let n = super::parallel::default_threads().saturating_sub(1);
            let workers = (0..n).filter_map(|i| spawn(i).ok()).collect();
            Pool {
                workers: Mutex::new(workers),
            }
        })
    }

    /// Runs `local` here and `jobs` on the workers (or here, when the pool
    /// is busy or has too few workers), then hands job i's results to
    /// `sink(i, ..)`, in order.
    pub(super) fn run(
        &self,
        local: impl FnOnce(),
        jobs: Vec<Job>,
        mut sink: impl FnMut(usize, &[f32]),
    ) {
        let Ok(workers) = self.workers.try_lock() else {
            return inline(local, jobs, sink);
        };
        if workers.len() < jobs.len() {
            return inline(local, jobs, sink);
        }
        let n = jobs.len();
        for (w, job) in workers.iter().zip(jobs) {
            *lock(&w.slot.job) = Some(job);
            w.slot.state.store(READY, Ordering::Release);
            w.thread.unpark();
        }
        local();
        let mut buf = Vec::new();
        for (i, w) in workers.iter().take(n).enumerate() {
            // A job its worker has not taken yet (the worker parked, and
            // waking it takes longer than the job) is run here instead.
            if w.slot
                .state
                .compare_exchange(READY, IDLE, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                let job = lock(&w.slot.job).take();
                buf.clear();
                if let Some(job) = job {
                    job(&mut buf);
                }
                sink(i, &buf);
                continue;
            }
            let start = Instant::now();
            let mut spins = 0u32;
            while w.slot.state.load(Ordering::Acquire) != DONE {
                spins = spins.wrapping_add(1);
                // The clock is read once per 64 spins.
                if !spins.is_multiple_of(64) || start.elapsed() < SPIN {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            w.slot.state.store(IDLE, Ordering::Relaxed);
            if !w.slot.ok.load(Ordering::Relaxed) {
                panic!("a kernel worker's job panicked");
            }
            sink(i, &lock(&w.slot.result));
        }
    }
}

/// What a worker does with chunk c: append its results to the buffer.
pub(crate) type Remote = Arc<dyn Fn(usize, &mut Vec<f32>) + Send + Sync>;

/// Work in `chunks` numbered pieces that the caller (`local`) and up to
/// `threads − 1` workers (`remote`) take from a shared counter until none
/// is left, so a thread that runs slower, or starts later, does less of
/// the work instead of holding up the others. Back on the caller's
/// thread, `sink` gets each chunk a worker took with its results (`len`
/// of chunk c floats).
///
/// A worker's buffer holds the results of the chunks it took, one after
/// another, then their indices as f32 (exact: far fewer than 2^24), then
/// how many it took; nothing beyond what it computes is zero-filled (a
/// job taken back by a caller that already ran every chunk costs nothing).
pub(crate) fn chunked(
    chunks: usize,
    threads: usize,
    remote: Remote,
    len: impl Fn(usize) -> usize,
    mut local: impl FnMut(usize),
    mut sink: impl FnMut(usize, &[f32]),
) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let jobs: Vec<Job> = (1..threads.min(chunks))
        .map(|_| {
            let (remote, next) = (Arc::clone(&remote), Arc::clone(&next));
            Box::new(move |buf: &mut Vec<f32>| {
                let mut taken = Vec::new();
                loop {
                    let c = next.fetch_add(1, Ordering::Relaxed);
                    if c >= chunks {
                        break;
                    }
                    remote(c, buf);
                    taken.push(c as f32);
                }
                let count = taken.len() as f32;
                buf.extend(taken);
                buf.push(count);
            }) as Job
        })
        .collect();
    Pool::get().run(
        || {
            loop {
                let c = next.fetch_add(1, Ordering::Relaxed);
                if c >= chunks {
                    break;
                }
                local(c);
            }
        },
        jobs,
        |_, part| {
            let Some((&count, part)) = part.split_last() else {
                return;
            };
            let (results, taken) = part.split_at(part.len() - count as usize);
            let mut at = 0;
            for &c in taken {
                let c = c as usize;
                let l = len(c);
                sink(c, &results[at..at + l]);
                at += l;
            }
        },
    );
}

fn inline(local: impl FnOnce(), jobs: Vec<Job>, mut sink: impl FnMut(usize, &[f32])) {
    local();
    let mut buf = Vec::new();
    for (i, j) in jobs.into_iter().enumerate() {
        buf.clear();
        j(&mut buf);
        sink(i, &buf);
    }
}

/// A poisoned lock only means a job panicked; its data is still sound.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn spawn(i: usize) -> std::io::Result<Worker> {
    let slot = Arc::new(Slot {
        state: AtomicU8::new(IDLE),
        job: Mutex::new(None),
        result: Mutex::new(Vec::new()),
        ok: std::sync::atomic::AtomicBool::new(false),
    });
    let mine = Arc::clone(&slot);
    let handle = std::thread::Builder::new()
        .name(format!("kernel-{i}"))
        .spawn(move || work(&mine))?;
    Ok(Worker {
        slot,
        thread: handle.thread().clone(),
    })
}

fn work(slot: &Slot) {
    loop {
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            if slot.state.load(Ordering::Relaxed) == READY
                && slot
                    .state
                    .compare_exchange(READY, RUNNING, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                break;
            }
            spins = spins.wrapping_add(1);
            if !spins.is_multiple_of(64) || start.elapsed() < SPIN {
                std::hint::spin_loop();
            } else {
                std::thread::park_timeout(Duration::from_millis(50));
            }
        }
        let job = lock(&slot.job).take();
        let ok = {
            let mut buf = lock(&slot.result);
            buf.clear();
            job.is_some_and(|j| catch_unwind(AssertUnwindSafe(|| j(&mut buf))).is_ok())
        };
        slot.ok.store(ok, Ordering::Relaxed);
        slot.state.store(DONE, Ordering::Release);
    }
}
