//! [`GpuStaged`]: a backend whose decode inputs and outputs pass through
//! real GPU buffers (`instinfer run --gpu`).
//!
//! Each decode step's q, new K and V are written into GPU memory (where a
//! GPU model would have produced them) and its outputs are written back
//! into GPU memory (where the next layer would read them). The drives
//! reached here cannot address GPU memory (see [`crate::dma`]: the kernel
//! interfaces pin host pages, and the simulated board's GPU window models
//! a GPU it cannot reach in this process), so every byte takes the bounce
//! path through host memory, and is counted.

use gpu::{Gpu, GpuBuffer, GpuError};

use super::{AttentionBackend, BackendError, DecodeStep, FlashCount, ModelShape};
use crate::measure::{Phase, PhaseCounters};

/// The inner backend, with GPU buffers in front of its decode steps.
#[derive(Debug)]
pub struct GpuStaged<'a, B: AttentionBackend + ?Sized> {
    inner: &'a mut B,
    gpu: Gpu,
    buf: Option<GpuBuffer>,
    /// Bytes copied between GPU and host memory.
    pub bounce_bytes: u64,
}

fn gpu_err(e: GpuError) -> BackendError {
    BackendError::Gpu(e.to_string())
}

impl<'a, B: AttentionBackend + ?Sized> GpuStaged<'a, B> {
    /// Stages `inner`'s decode data through `gpu`'s memory.
    pub fn new(inner: &'a mut B, gpu: Gpu) -> Self {
        Self {
            inner,
            gpu,
            buf: None,
            bounce_bytes: 0,
        }
    }

    /// The GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// `xs` into GPU memory and back out (the bounce), counted.
    fn through_gpu(&mut self, xs: &[f32]) -> Result<Vec<f32>, BackendError> {
        let bytes: Vec<u8> = xs.iter().flat_map(|x| x.to_le_bytes()).collect();
        if self.buf.as_ref().is_none_or(|b| b.len() < bytes.len()) {
            self.buf = Some(
                self.gpu
                    .alloc(bytes.len().next_power_of_two())
                    .map_err(gpu_err)?,
            );
        }
        let buf = self
            .buf
            .as_mut()
            .ok_or_else(|| BackendError::Gpu("no GPU buffer".into()))?;
        buf.write(&bytes).map_err(gpu_err)?;
        let mut back = vec![0u8; bytes.len()];
        buf.read(&mut back).map_err(gpu_err)?;
        self.bounce_bytes += 2 * bytes.len() as u64;
        Ok(back
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

impl<B: AttentionBackend + ?Sized> AttentionBackend for GpuStaged<'_, B> {
    fn open(&mut self, seq: u32, shape: ModelShape) -> Result<(), BackendError> {
        self.inner.open(seq, shape)
    }

    fn append(&mut self, seq: u32, layer: usize, k: &[f32], v: &[f32]) -> Result<(), BackendError> {
        let (k, v) = (self.through_gpu(k)?, self.through_gpu(v)?);
        self.inner.append(seq, layer, &k, &v)
    }

    fn decode(&mut self, batch: &[DecodeStep<'_>]) -> Result<Vec<Vec<f32>>, BackendError> {
        let mut staged = Vec::with_capacity(batch.len());
        for s in batch {
            let q = self.through_gpu(s.q)?;
            let kv = match s.kv_new {
                Some((k, v)) => Some((self.through_gpu(k)?, self.through_gpu(v)?)),
                None => None,
            };
            staged.push((q, kv));
        }
        let steps: Vec<DecodeStep<'_>> = batch
            .iter()
            .zip(&staged)
            .map(|(s, (q, kv))| DecodeStep {
                q,
                kv_new: kv.as_ref().map(|(k, v)| (k.as_slice(), v.as_slice())),
                ..*s
            })
            .collect();
        let out = self.inner.decode(&steps)?;
        out.iter().map(|o| self.through_gpu(o)).collect()
    }

    fn close(&mut self, seq: u32) -> Result<(), BackendError> {
        self.inner.close(seq)
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn last_read_fraction(&self) -> Option<f64> {
        self.inner.last_read_fraction()
    }

    fn last_flash(&self) -> Option<FlashCount> {
        self.inner.last_flash()
    }

    fn measure_begin(&mut self) -> Result<Option<Phase>, BackendError> {
        self.inner.measure_begin()
    }

    fn measure_end(&mut self, phase: Phase) -> Result<Option<(f64, PhaseCounters)>, BackendError> {
        self.inner.measure_end(phase)
    }
}
