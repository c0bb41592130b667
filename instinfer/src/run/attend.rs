//! `instinfer attend`: one decode step through the device on `.npy` inputs.
//!
//! K and V are `[kv_heads, S, d]`, Q is `[q_heads, d]` (fp16 or f32). The
//! job opens a one-layer sequence, writes the KV with KV_APPEND (prefill),
//! runs one DECODE_SUBMIT (no APPEND_KV) at position S − 1 and its
//! DECODE_FETCH, and reports the decode step's own counters.
//!
//! SparF defaults (when not given): `r = max(1, d/8)`, `topk = max(1, S/8)`,
//! `local = topk/4` — the InstInfer paper's 1/8 compression on both axes,
//! with a quarter of the kept tokens reserved for the most recent ones.

use std::path::PathBuf;
use std::time::Instant;

use attention::shape::{Method, SparseParams};
use proto::SeqShape;
use serde_json::json;

use crate::npy::{NpyArray, NpyData, NpyError};
use host_driver::array::ArrayDecode;

use host_driver::measure::{Phase, PhaseCounters};

use super::sim::device_array;
use super::{RunError, check_caps, input, open_error};
use crate::device::DeviceSpec;

/// Which attention the device runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodChoice {
    /// Full attention.
    Dense,
    /// InstInfer's SparF.
    SparF,
}

impl MethodChoice {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Dense => "dense",
            Self::SparF => "sparf",
        }
    }
}

/// SparF parameters as given (None = default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SparseChoice {
    /// Dims for approximate scores (default `d/8`).
    pub r: Option<usize>,
    /// Tokens attended exactly (default `S/8`).
    pub topk: Option<usize>,
    /// Most recent tokens always kept (default `topk/4`).
    pub local: Option<usize>,
}

/// The method for a sequence of `s` tokens of width `d`, defaults filled in
/// and checked.
pub fn resolve_method(
    choice: MethodChoice,
    sparse: SparseChoice,
    s: usize,
    d: usize,
) -> Result<Method, RunError> {
    if choice == MethodChoice::Dense {
        return Ok(Method::Dense);
    }
    let r = sparse.r.unwrap_or((d / 8).max(1));
    let k = sparse.topk.unwrap_or((s / 8).max(1));
    let local = sparse.local.unwrap_or(k / 4);
    if r == 0 || r > d {
        return Err(input(format!(
            "--r {r} must be in 1..={d} (the head dimension)"
        )));
    }
    if k == 0 {
        return Err(input("--topk must be at least 1"));
    }
    if local > usize::from(u16::MAX) {
        return Err(input(format!("--local {local} exceeds {}", u16::MAX)));
    }
    if u32::try_from(k).is_err() {
        return Err(input(format!("--topk {k} too large")));
    }
    Ok(Method::SparF(SparseParams { r, k, local }))
}

/// Device settings of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceChoice {
    /// Which device (`sim` by default).
    pub device: DeviceSpec,
    /// Drives.
    pub devices: usize,
    /// Flash page size (4096 or 16384).
    pub page_size: u32,
    /// Dims per flash row group of the dim-indexed K layout.
    pub dim_group: u8,
}

impl Default for DeviceChoice {
    fn default() -> Self {
        Self {
            device: DeviceSpec::Sim,
            devices: 1,
            page_size: 4096,
            dim_group: 1,
        }
    }
}

/// Inputs of [`attend_files`].
#[derive(Clone, Debug)]
pub struct AttendFiles {
    /// K `[kv_heads, S, d]`.
    pub k: PathBuf,
    /// V `[kv_heads, S, d]`.
    pub v: PathBuf,
    /// Q `[q_heads, d]`.
    pub q: PathBuf,
    /// Output `[q_heads, d]` f32.
    pub out: PathBuf,
}

/// The validated inputs of one attend job, as fp16 bits.
#[derive(Clone, Debug, PartialEq)]
pub struct AttendInputs {
    /// K `[kv_heads][S][d]`.
    pub k: Vec<u16>,
    /// V `[kv_heads][S][d]`.
    pub v: Vec<u16>,
    /// Q `[q_heads][d]`.
    pub q: Vec<u16>,
    /// KV heads.
    pub kv_heads: usize,
    /// Query heads.
    pub q_heads: usize,
    /// Tokens.
    pub s: usize,
    /// Head dimension.
    pub d: usize,
}

fn f16_bits(a: &NpyArray) -> Vec<u16> {
    match &a.data {
        NpyData::F16(b) => b.clone(),
        NpyData::F32(x) => host_driver::backend::to_f16_bits(x),
    }
}

impl AttendInputs {
    /// Checks shapes: K and V `[kv_heads, S, d]` alike, Q `[q_heads, d]`
    /// with `q_heads` a multiple of `kv_heads`, and the device's limits.
    pub fn from_arrays(k: &NpyArray, v: &NpyArray, q: &NpyArray) -> Result<Self, RunError> {
        let [kv_heads, s, d] = k.shape[..] else {
            return Err(input(format!(
                "K must have shape [kv_heads, S, d], got {:?}",
                k.shape
            )));
        };
        if v.shape != k.shape {
            return Err(input(format!(
                "V has shape {:?}, K has {:?}: they must match",
                v.shape, k.shape
            )));
        }
        let [q_heads, qd] = q.shape[..] else {
            return Err(input(format!(
                "Q must have shape [q_heads, d], got {:?}",
                q.shape
            )));
        };
        if qd != d {
            return Err(input(format!("Q has head dimension {qd}, K has {d}")));
        }
        if kv_heads == 0 || s == 0 || d == 0 || q_heads == 0 {
            return Err(input("empty arrays: every dimension must be at least 1"));
        }
        if q_heads % kv_heads != 0 {
            return Err(input(format!(
                "{q_heads} query heads is not a multiple of {kv_heads} KV heads"
            )));
        }
        if kv_heads > 255 || q_heads / kv_heads > 255 {
            return Err(input(
                "at most 255 KV heads and 255 query heads per KV head",
            ));
        }
        if d % 2 != 0 || d > usize::from(proto::vendor::MAX_HEAD_DIM) {
            return Err(input(format!(
                "head dimension {d} must be even and at most 256"
            )));
        }
        if u32::try_from(s).is_err() {
            return Err(input(format!(
                "{s} tokens exceed the device's u32 positions"
            )));
        }
        Ok(Self {
            k: f16_bits(k),
            v: f16_bits(v),
            q: f16_bits(q),
            kv_heads,
            q_heads,
            s,
            d,
        })
    }

    /// Bytes a host would stream over PCIe to attend itself: all of K and
    /// V in fp16.
    pub fn host_offload_bytes(&self) -> u64 {
        2 * (self.kv_heads * self.s * self.d * 2) as u64
    }
}

/// What one attend job measured.
#[derive(Clone, Debug, PartialEq)]
pub struct AttendReport {
    /// The method as run.
    pub method: Method,
    /// Method name (`dense` / `sparf`).
    pub method_name: &'static str,
    /// The decode step's counters.
    pub counters: PhaseCounters,
    /// Bytes a host-side attention would move over PCIe.
    pub host_offload_pcie_bytes: u64,
    /// Wall time of the decode step (submit + fetch), ms.
    pub wall_ms: f64,
    /// Wall time of the whole job, ms.
    pub wall_total_ms: f64,
    /// Devices used.
    pub devices: usize,
    /// Tokens.
    pub s: usize,
    /// Head dimension.
    pub d: usize,
    /// Query heads.
    pub q_heads: usize,
    /// KV heads.
    pub kv_heads: usize,
    /// Tokens the device attended (per KV head group).
    pub tokens_attended: u32,
}

impl AttendReport {
    /// The one-line JSON report.
    pub fn to_json(&self) -> serde_json::Value {
        let c = &self.counters;
        let (r, topk, local) = match self.method {
            Method::SparF(p)
            | Method::SparQ(p)
            | Method::SparFPlus(attention::shape::SparfPlus { p, .. }) => {
                (Some(p.r), Some(p.k), Some(p.local))
            }
            Method::Dense
            | Method::Local { .. }
            | Method::H2o(_)
            | Method::Block(_)
            | Method::Oracle { .. }
            | Method::Pages(_) => (None, None, None),
        };
        json!({
            "method": self.method_name,
            "r": r,
            "topk": topk,
            "local": local,
            "virtual_device_us": c.virtual_ns as f64 / 1e3,
            "virtual_flash_busy_us": c.busy.flash_ns as f64 / 1e3,
            "virtual_bus_busy_us": c.busy.bus_ns as f64 / 1e3,
            "virtual_engine_busy_us": c.busy.engine_ns as f64 / 1e3,
            "virtual_dma_busy_us": c.busy.dma_ns as f64 / 1e3,
            "flash_pages_read": c.flash_pages_read,
            "flash_pages_skipped": c.flash_pages_skipped,
            "engine_bytes": c.engine_bytes,
            "channel_bus_bytes": c.channel_bus_bytes,
            "elements_filtered": c.elements_filtered,
            "pcie_bytes": c.pcie_bytes,
            "host_offload_pcie_bytes": self.host_offload_pcie_bytes,
            "tokens_attended": self.tokens_attended,
            "wall_ms": self.wall_ms,
            "wall_total_ms": self.wall_total_ms,
            "devices": self.devices,
            "s": self.s,
            "d": self.d,
            "q_heads": self.q_heads,
            "kv_heads": self.kv_heads,
        })
    }
}

/// Runs one decode step on simulated drives; returns the output
/// `[q_heads][d]` and the report.
pub fn attend(
    inputs: &AttendInputs,
    method: MethodChoice,
    sparse: SparseChoice,
    dev: DeviceChoice,
) -> Result<(Vec<f32>, AttendReport), RunError> {
    let started = Instant::now();
    let resolved = resolve_method(method, sparse, inputs.s, inputs.d)?;
    if dev.dim_group == 0
        || !inputs.d.is_multiple_of(usize::from(dev.dim_group))
        || dev.dim_group > proto::vendor::MAX_DIM_GROUP
    {
        return Err(input(format!(
            "--dim-group {} must divide the head dimension {} and be in 1..={}",
            dev.dim_group,
            inputs.d,
            proto::vendor::MAX_DIM_GROUP
        )));
    }
    let mut array = device_array(&dev.device, dev.devices, dev.page_size)?;
    let group = inputs.q_heads / inputs.kv_heads;
    check_caps(
        &array.devices()[0].info().caps,
        inputs.kv_heads.div_ceil(dev.devices),
        group,
        inputs.d,
        dev.dim_group,
    )?;
    let shape = SeqShape {
        layers: 1,
        kv_heads: inputs.kv_heads as u8,
        group: group as u8,
        head_dim: inputs.d as u16,
        dim_group: dev.dim_group,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    array.open(0, shape).map_err(open_error)?;
    array.append(0, 0, 0, &inputs.k, &inputs.v)?;
    let phase = Phase::begin(&mut array)?;
    let req = ArrayDecode {
        seq: 0,
        layer: 0,
        position: (inputs.s - 1) as u32,
        q: &inputs.q,
        kv_new: None,
        approx: None,
        method: resolved,
    };
    let mut outs = array.decode_batch(&[req])?;
    let (wall_ms, counters) = phase.end(&mut array)?;
    array.close(0)?;
    let out = outs
        .pop()
        .ok_or_else(|| input("device returned no output"))?;
    let report = AttendReport {
        method: resolved,
        method_name: method.name(),
        counters,
        host_offload_pcie_bytes: inputs.host_offload_bytes(),
        wall_ms,
        wall_total_ms: started.elapsed().as_secs_f64() * 1e3,
        devices: dev.devices,
        s: inputs.s,
        d: inputs.d,
        q_heads: inputs.q_heads,
        kv_heads: inputs.kv_heads,
        tokens_attended: out.report.tokens_attended,
    };
    Ok((out.out, report))
}

/// A `.npy` failure as a job error; I/O errors already name the file.
fn npy_error(path: &std::path::Path, e: NpyError) -> RunError {
    match e {
        NpyError::Io { .. } => RunError::Input(e.to_string()),
        source => RunError::Npy {
            path: path.display().to_string(),
            source,
        },
    }
}

fn read(path: &std::path::Path) -> Result<NpyArray, RunError> {
    NpyArray::read(path).map_err(|e| npy_error(path, e))
}

/// The whole `attend` job: read the files, run, write `out`.
pub fn attend_files(
    files: &AttendFiles,
    method: MethodChoice,
    sparse: SparseChoice,
    dev: DeviceChoice,
) -> Result<AttendReport, RunError> {
    let k = read(&files.k)?;
    let v = read(&files.v)?;
    let q = read(&files.q)?;
    let inputs = AttendInputs::from_arrays(&k, &v, &q)?;
    let (out, mut report) = attend(&inputs, method, sparse, dev)?;
    let arr = NpyArray::from_f32(vec![inputs.q_heads, inputs.d], out)
        .map_err(|e| npy_error(&files.out, e))?;
    let t = Instant::now();
    arr.write(&files.out)
        .map_err(|e| npy_error(&files.out, e))?;
    report.wall_total_ms += t.elapsed().as_secs_f64() * 1e3;
    Ok(report)
}
