//! [`AnyBackend`]: drives or the SSD backend behind one value, as the
//! bindings put them behind one handle (`instinfer.Device`,
//! `instinfer_device *`): every call both make goes through
//! [`KvBackend`]; the calls only one makes say so when given the other.

use host_driver::backend::ModelShape;

use crate::backend::KvBackend;
use crate::{BatchOutput, Drives, OffloadError, SeqOptions, Step, Values};

/// Drives, or the SSD backend.
#[derive(Debug)]
pub enum AnyBackend {
    /// Computational SSDs.
    Drives(Drives),
    /// The SSD block-sparse backend on its thread.
    #[cfg(target_os = "linux")]
    Ssd(crate::SsdWorker),
}

impl AnyBackend {
    /// The drives (an error for the SSD backend).
    pub fn drives(&mut self) -> Result<&mut Drives, OffloadError> {
        match self {
            Self::Drives(d) => Ok(d),
            #[cfg(target_os = "linux")]
            Self::Ssd(_) => Err(OffloadError::invalid(
                "the SSD backend has no drives to ask",
            )),
        }
    }

    /// The drives' specs (none for the SSD backend).
    pub fn specs(&self) -> Vec<String> {
        match self {
            Self::Drives(d) => d.specs().to_vec(),
            #[cfg(target_os = "linux")]
            Self::Ssd(_) => Vec::new(),
        }
    }

    /// The SSD backend (an error for drives).
    #[cfg(target_os = "linux")]
    pub fn ssd(&self) -> Result<&crate::SsdWorker, OffloadError> {
        match self {
            Self::Ssd(s) => Ok(s),
            Self::Drives(_) => Err(OffloadError::invalid("drives have no SSD store")),
        }
    }

    /// Opens a sequence; on the SSD backend its shape must be the store's
    /// and the options the defaults.
    pub fn open_sequence(
        &mut self,
        seq: u32,
        shape: ModelShape,
        opts: SeqOptions,
    ) -> Result<(), OffloadError> {
        match self {
            Self::Drives(d) => d.open_sequence(seq, shape, opts),
            #[cfg(target_os = "linux")]
            Self::Ssd(s) => {
                if shape != s.shape() {
                    return Err(OffloadError::invalid(format!(
                        "the store holds sequences of {:?}, not {shape:?}",
                        s.shape()
                    )));
                }
                if opts != SeqOptions::default() {
                    return Err(OffloadError::invalid(
                        "the SSD backend takes no basis, layout or dim group",
                    ));
                }
                s.open_sequence(seq)
            }
        }
    }

    fn kv(&mut self) -> &mut dyn KvBackend {
        match self {
            Self::Drives(d) => d,
            #[cfg(target_os = "linux")]
            Self::Ssd(s) => s,
        }
    }

    fn kv_ref(&self) -> &dyn KvBackend {
        match self {
            Self::Drives(d) => d,
            #[cfg(target_os = "linux")]
            Self::Ssd(s) => s,
        }
    }
}

impl KvBackend for AnyBackend {
    fn shape_of(&self, seq: u32) -> Result<ModelShape, OffloadError> {
        self.kv_ref().shape_of(seq)
    }
    fn tokens(&self, seq: u32, layer: usize) -> Result<usize, OffloadError> {
        self.kv_ref().tokens(seq, layer)
    }
    fn append_kv(
        &mut self,
        seq: u32,
        layer: usize,
        k: Values<'_>,
        v: Values<'_>,
    ) -> Result<usize, OffloadError> {
        self.kv().append_kv(seq, layer, k, v)
    }
    fn submit_batch(&mut self, steps: &[Step<'_>]) -> Result<u64, OffloadError> {
        self.kv().submit_batch(steps)
    }
    fn fetch_batch(&mut self, id: u64) -> Result<BatchOutput, OffloadError> {
        self.kv().fetch_batch(id)
    }
    fn close(&mut self, seq: u32) -> Result<(), OffloadError> {
        self.kv().close(seq)
    }
    fn sequences(&self) -> Vec<u32> {
        self.kv_ref().sequences()
    }
}
