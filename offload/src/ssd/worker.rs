//! [`SsdWorker`]: an [`SsdKv`] on a thread of its own. Calls travel as
//! messages with owned data; a submitted batch is checked and answered at
//! once, then computed while the caller goes on, and its result waits
//! for [`KvBackend::fetch_batch`]. So the SSD backend is `Send` (a
//! binding can release its interpreter lock around it) and its submit and
//! fetch are truly split.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use host_driver::backend::ModelShape;

use super::{SsdKv, SsdOptions};
use crate::backend::KvBackend;
use crate::method::MethodSpec;
use crate::{BatchOutput, OffloadError, Step, Values};

type Reply<T> = Sender<Result<T, OffloadError>>;

/// One owned step.
struct OwnedStep {
    seq: u32,
    layer: usize,
    q: Vec<f32>,
    kv: Option<(Vec<f32>, Vec<f32>)>,
    method: MethodSpec,
}

enum Call {
    Open(u32, Reply<()>),
    Close(u32, Reply<()>),
    Len(u32, usize, Reply<usize>),
    Append(u32, usize, Vec<f32>, Vec<f32>, Reply<usize>),
    Submit(Vec<OwnedStep>, Reply<u64>),
    Fetch(u64, Reply<BatchOutput>),
    Io(Reply<(u64, u64)>),
    Seqs(Reply<Vec<u32>>),
}

/// The SSD backend on its own thread.
#[derive(Debug)]
pub struct SsdWorker {
    tx: Option<Sender<Call>>,
    thread: Option<JoinHandle<()>>,
    shape: ModelShape,
    path: Option<std::path::PathBuf>,
}

fn gone() -> OffloadError {
    OffloadError::Storage("the SSD store's thread has stopped".into())
}

impl SsdWorker {
    /// Opens the store (see [`SsdKv::open`]) on a new thread.
    pub fn open(shape: ModelShape, opts: SsdOptions) -> Result<Self, OffloadError> {
        let (tx, rx) = channel::<Call>();
        let (ready_tx, ready_rx) = channel();
        let thread = std::thread::Builder::new()
            .name("instinfer-ssd".into())
            .spawn(move || match SsdKv::open(shape, &opts) {
                Ok(kv) => {
                    let _ = ready_tx.send(Ok(kv.path()));
                    serve(kv, rx);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(|e| OffloadError::Storage(format!("cannot start the store's thread: {e}")))?;
        let path = ready_rx.recv().map_err(|_| gone())??;
        Ok(Self {
            tx: Some(tx),
            thread: Some(thread),
            shape,
            path,
        })
    }

    /// The shape every sequence has.
    pub fn shape(&self) -> ModelShape {
        self.shape
    }

    /// The store file (none in DRAM).
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Call) -> Result<T, OffloadError> {
        let (tx, rx) = channel();
        self.tx
            .as_ref()
            .ok_or_else(gone)?
            .send(make(tx))
            .map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())?
    }

    /// Opens `seq`.
    pub fn open_sequence(&self, seq: u32) -> Result<(), OffloadError> {
        self.call(|r| Call::Open(seq, r))
    }

    /// Bytes read from and written to the drive so far.
    pub fn io_bytes(&self) -> Result<(u64, u64), OffloadError> {
        self.call(Call::Io)
    }
}

impl Drop for SsdWorker {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl KvBackend for SsdWorker {
    fn shape_of(&self, seq: u32) -> Result<ModelShape, OffloadError> {
        self.tokens(seq, 0)?;
        Ok(self.shape)
    }

    fn tokens(&self, seq: u32, layer: usize) -> Result<usize, OffloadError> {
        self.call(|r| Call::Len(seq, layer, r))
    }

    fn append_kv(
        &mut self,
        seq: u32,
        layer: usize,
        k: Values<'_>,
        v: Values<'_>,
    ) -> Result<usize, OffloadError> {
        let (k, v) = (k.f32s().into_owned(), v.f32s().into_owned());
        self.call(|r| Call::Append(seq, layer, k, v, r))
    }

    fn submit_batch(&mut self, steps: &[Step<'_>]) -> Result<u64, OffloadError> {
        let owned = steps
            .iter()
            .map(|s| OwnedStep {
                seq: s.seq,
                layer: s.layer,
                q: s.q.f32s().into_owned(),
                kv: s
                    .kv_new
                    .map(|(k, v)| (k.f32s().into_owned(), v.f32s().into_owned())),
                method: s.method,
            })
            .collect();
        self.call(|r| Call::Submit(owned, r))
    }

    fn fetch_batch(&mut self, id: u64) -> Result<BatchOutput, OffloadError> {
        self.call(|r| Call::Fetch(id, r))
    }

    fn close(&mut self, seq: u32) -> Result<(), OffloadError> {
        self.call(|r| Call::Close(seq, r))
    }

    fn sequences(&self) -> Vec<u32> {
        self.call(Call::Seqs).unwrap_or_default()
    }
}

/// The thread's loop: answers calls; between them, computes submitted
/// batches in order.
fn serve(mut kv: SsdKv, rx: Receiver<Call>) {
    let mut queued: Vec<u64> = Vec::new();
    let mut done: HashMap<u64, Result<BatchOutput, OffloadError>> = HashMap::new();
    loop {
        // Work queued batches while no call waits.
        let call = match rx.try_recv() {
            Ok(c) => c,
            Err(std::sync::mpsc::TryRecvError::Empty) if !queued.is_empty() => {
                let id = queued.remove(0);
                done.insert(id, kv.fetch(id));
                continue;
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => match rx.recv() {
                Ok(c) => c,
                Err(_) => return,
            },
            Err(std::sync::mpsc::TryRecvError::Disconnected) => return,
        };
        match call {
            Call::Open(seq, r) => {
                let _ = r.send(kv.open_sequence(seq));
            }
            Call::Close(seq, r) => {
                // Batches of the sequence: computed (dropped) first.
                finish_all(&mut kv, &mut queued, &mut done);
                let _ = r.send(kv.close_sequence(seq));
            }
            Call::Len(seq, layer, r) => {
                let _ = r.send(kv.len(seq, layer));
            }
            Call::Append(seq, layer, k, v, r) => {
                finish_all(&mut kv, &mut queued, &mut done);
                let _ = r.send(kv.append(seq, layer, Values::F32(&k), Values::F32(&v)));
            }
            Call::Submit(steps, r) => {
                let borrowed: Vec<Step<'_>> = steps
                    .iter()
                    .map(|s| Step {
                        seq: s.seq,
                        layer: s.layer,
                        q: Values::F32(&s.q),
                        kv_new: s.kv.as_ref().map(|(k, v)| (Values::F32(k), Values::F32(v))),
                        method: s.method,
                    })
                    .collect();
                let res = kv.submit(&borrowed);
                if let Ok(id) = res {
                    queued.push(id);
                }
                let _ = r.send(res);
            }
            Call::Fetch(id, r) => {
                if let Some(pos) = queued.iter().position(|&q| q == id) {
                    // Earlier batches first: their tokens come first.
                    for q in queued.drain(..=pos).collect::<Vec<_>>() {
                        done.insert(q, kv.fetch(q));
                    }
                }
                let _ = r.send(
                    done.remove(&id)
                        .unwrap_or(Err(OffloadError::UnknownBatch(id))),
                );
            }
            Call::Io(r) => {
                let _ = r.send(Ok(kv.io_bytes()));
            }
            Call::Seqs(r) => {
                let _ = r.send(Ok(kv.sequences()));
            }
        }
    }
}

fn finish_all(
    kv: &mut SsdKv,
    queued: &mut Vec<u64>,
    done: &mut HashMap<u64, Result<BatchOutput, OffloadError>>,
) {
    for id in queued.drain(..) {
        done.insert(id, kv.fetch(id));
    }
}
