//! The board thread: the only owner of the simulated board. It takes
//! commands from every connection, puts as many as its I/O queue holds on
//! the board together, runs it, and hands each completion back.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;

use proto::{Cqe, Status};

use host_driver::transport::{IoRequest, IoResult, SimTransport, Transport};

/// Where a completion goes.
pub(crate) type Reply = Box<dyn FnOnce(IoResult) + Send>;

/// One command for the firmware.
pub(crate) struct Job {
    pub admin: bool,
    pub req: IoRequest,
    pub reply: Reply,
}

/// Commands the board thread takes before senders wait (back-pressure).
const QUEUED: usize = 256;
/// Commands on the board at once (below its 64-entry I/O queue).
const BATCH: usize = 63;

/// The sending side.
#[derive(Debug)]
pub(crate) struct BoardQueue {
    tx: std::sync::Mutex<Option<SyncSender<Job>>>,
}

impl BoardQueue {
    /// Queues a job, waiting while the queue is full. `false` if the board
    /// has stopped.
    pub(crate) fn send(&self, job: Job) -> bool {
        let tx = match self.tx.lock() {
            Ok(g) => g.clone(),
            Err(_) => None,
        };
        let Some(tx) = tx else { return false };
        match tx.try_send(job) {
            Ok(()) => true,
            Err(TrySendError::Full(job)) => tx.send(job).is_ok(),
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Lets the board thread end once its queue is empty.
    pub(crate) fn close(&self) {
        if let Ok(mut g) = self.tx.lock() {
            g.take();
        }
    }
}

/// Starts the board thread.
pub(crate) fn start(t: SimTransport) -> (BoardQueue, JoinHandle<()>) {
    let (tx, rx) = sync_channel(QUEUED);
    let h = std::thread::spawn(move || run(t, rx));
    (
        BoardQueue {
            tx: std::sync::Mutex::new(Some(tx)),
        },
        h,
    )
}

/// A completion for a command the board could not take or finish (the
/// reply sets the host's cid and queue).
fn failed(what: &dyn std::fmt::Display) -> IoResult {
    eprintln!("instinfer serve: board: {what}");
    IoResult {
        cqe: Cqe::new(0, 0, 0, Status::INTERNAL_ERROR, 0, false),
        data: Vec::new(),
    }
}

fn run(mut t: SimTransport, rx: Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let mut waiting: HashMap<u16, Reply> = HashMap::new();
        for job in batch {
            if job.admin {
                let res = t.admin(job.req);
                (job.reply)(res.unwrap_or_else(|e| failed(&e)));
                continue;
            }
            match t.submit(job.req) {
                Ok(cid) => {
                    waiting.insert(cid, job.reply);
                }
                Err(e) => (job.reply)(failed(&e)),
            }
        }
        while !waiting.is_empty() {
            match t.reap() {
                Ok((cid, res)) => {
                    if let Some(reply) = waiting.remove(&cid) {
                        reply(res);
                    }
                }
                Err(e) => {
                    for (_, reply) in waiting.drain() {
                        reply(failed(&e));
                    }
                }
            }
        }
    }
}
