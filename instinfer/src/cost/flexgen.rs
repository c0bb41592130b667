//! FlexGen as published: its KV path modelled from its code (FlexLLMGen,
//! `flexllmgen/`, formerly `flexgen/`), not the SSD's datasheet rate.
//!
//! What its code does for a decode step, and what the model takes from it:
//!
//! - **Files.** The KV cache of a layer is two numpy memory maps (K and V),
//!   each of shape `(prompt + gen − 1, b·heads, d)` fp16
//!   (`pytorch_backend.py`, `TorchDisk::init_cache_one_gpu_batch`). A step
//!   at context s loads the slice `[0:s]` of both (`flex_opt.py`,
//!   `SelfAttention::load_cache`, path 0): a contiguous prefix of each file.
//! - **Copy threads.** Each slice is one item on a queue served by 4 copy
//!   threads (`TorchDisk::__init__`, `num_copy_threads=4`). An item is
//!   copied from the memory map (through the page cache) into a pinned
//!   buffer, then from that buffer to the GPU, in the same thread, one after
//!   the other (`copy_worker_func`). The model: a layer's bytes at the
//!   disk → host rate, plus its bytes at PCIe x16; the disk → host rate is
//!   measured on this machine with the same layout and pattern
//!   ([`crate::run::flexgen_probe`]) or FlexGen's own fit (0.473 GB/s,
//!   `experimental/cost_model.py`, whose `Tgen` also adds `ctog` to `dtoc`).
//! - **Schedule.** By default (`--overlap` true, `--num-gpu-batches` 1)
//!   `OptLM::generation_loop_overlap_single_batch` issues layer j+1's load,
//!   computes layer j, stores layer j−1's new KV, then `OptLM::sync` (the
//!   copy queue joined, CUDA synchronised) before the next layer: a load
//!   overlaps one layer's compute and nothing more. Per layer:
//!   `pin + max(host → GPU, disk items, compute, store) + sync`.
//! - **KV in host memory** (`--percent`, the cache's CPU share): host memory
//!   holds what fits, the rest stays on disk (`TorchMixedDevice`, the split
//!   along `b·heads` rounded to whole sequences, an integer percent). The
//!   host part is unpinned (`pin_memory = False`), so `general_copy` pins a
//!   copy of it in the main thread before the copy to the GPU; that copy
//!   runs before the layer's compute is launched.
//! - **4-bit KV** (`--compress-cache`): groups of 64 values along the head
//!   dimension, 4 bits each, with a fp16 minimum and scale per group
//!   (`compression.py`, `TorchCompressedDevice`); data and scales travel as
//!   separate items. The GPU dequantises the loaded cache (`decompress` in
//!   `mha_gen`). A compressed cache lives on one device, never split
//!   (`init_cache_one_gpu_batch` asserts it): in host memory if all of it
//!   fits, else on disk.
//!
//! The disk line assumes every read misses the page cache: the KV of the
//! batches that matter (tens to hundreds of GB) is larger than host memory,
//! and a scan larger than the cache evicts each page before its reuse.

use super::hw::{Hardware, ModelShape};

/// Which disk → host rate FlexGen's reads get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskRate {
    /// Measured on this machine by the probe, same run.
    Measured,
    /// FlexGen's own fitted rate (0.473 GB/s).
    Fitted,
}

/// Where FlexGen's KV cache lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvHome {
    /// On disk (`--percent … 0 0 …`: cache 100% on disk).
    Disk,
    /// In host memory while it fits, the rest on disk.
    HostWhileFits,
}

/// A FlexGen configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlexGen {
    /// The disk → host rate.
    pub rate: DiskRate,
    /// The KV's home.
    pub home: KvHome,
    /// 4-bit group-wise KV (`--compress-cache`).
    pub four_bit: bool,
    /// SparQ at this compression on FlexGen's path (bytes as in
    /// [`sparq_bytes_factor`]).
    pub sparq: Option<f64>,
}

impl FlexGen {
    /// FlexGen as published: KV on disk, fp16, dense, the measured rate.
    pub const PUBLISHED: FlexGen = FlexGen {
        rate: DiskRate::Measured,
        home: KvHome::Disk,
        four_bit: false,
        sparq: None,
    };

    /// A short name for tables and plots (no commas: it goes into CSVs).
    pub fn name(&self) -> String {
        let mut n = String::from("FlexGen");
        if self == &Self::PUBLISHED || self == &Self::fitted(Self::PUBLISHED) {
            n.push_str(" as published");
        }
        if self.four_bit {
            n.push_str(" + 4-bit KV");
        }
        if self.home == KvHome::HostWhileFits {
            n.push_str(" + host-memory KV");
        }
        if let Some(c) = self.sparq {
            n.push_str(&format!(" + SparQ 1/{}", (1.0 / c).round()));
        }
        if self.rate == DiskRate::Fitted {
            n.push_str(" @ 0.473 GB/s fit");
        }
        n
    }

    /// The same configuration at FlexGen's fitted rate.
    pub const fn fitted(self) -> FlexGen {
        FlexGen {
            rate: DiskRate::Fitted,
            ..self
        }
    }

    fn disk_rate(&self, hw: &Hardware) -> f64 {
        match self.rate {
            DiskRate::Measured => hw.flexgen_disk_measured.value,
            DiskRate::Fitted => hw.flexgen_disk_fitted.value,
        }
    }
}

/// Bytes of a stored KV row over its fp16 bytes: 1 for fp16; with 4-bit
/// groups, `group·bits/8` bytes of data and a fp16 minimum and scale per
/// group, for each group of the head dimension (72 / 256 at d = 128).
pub fn stored_bytes_factor(fg: &FlexGen, hw: &Hardware, m: &ModelShape) -> f64 {
    if !fg.four_bit {
        return 1.0;
    }
    let group = hw.flexgen_kv_group.value;
    let groups = (m.head_dim as f64 / group).ceil();
    let data = groups * group * hw.flexgen_kv_bits.value / 8.0;
    let scales = groups * 2.0 * m.bytes_per_value;
    (data + scales) / (m.head_dim as f64 * m.bytes_per_value)
}

/// Bytes SparQ at compression `c` loads over dense's, on a token-major
/// layout: the r = c·d dims of K cost each token's whole K row, then
/// k = c·s/2 whole K and V rows: `(s + 2k) / 2s`.
pub fn sparq_bytes_factor(c: Option<f64>, s: usize) -> f64 {
    match c {
        None => 1.0,
        Some(c) => {
            let k = (c / 2.0 * s as f64).max(1.0);
            (s as f64 + 2.0 * k) / (2.0 * s as f64)
        }
    }
}

/// GPU memory bytes moved by dequantising one fp16 byte of 4-bit KV
/// (`compression.py`, `decompress`): the packed data read once (0.25), the
/// fp16 values written by the two nibble stores (1), then `div_` and
/// `add_` each read and write them (2 + 2).
pub const DEQUANT_TRAFFIC: f64 = 5.25;

/// Share of the KV (over `b·heads` rows) FlexGen keeps in host memory for
/// a batch of `b` whose cache has `seq_len` rows per sequence.
pub fn host_share(fg: &FlexGen, hw: &Hardware, m: &ModelShape, b: usize, seq_len: usize) -> f64 {
    if fg.home == KvHome::Disk {
        return 0.0;
    }
    let cache = b as f64 * seq_len as f64 * m.kv_bytes_per_token() * stored_bytes_factor(fg, hw, m);
    let fits = hw.host_kv_capacity.value / cache;
    if fits >= 1.0 {
        return 1.0;
    }
    if fg.four_bit {
        // A compressed cache is never split across devices.
        return 0.0;
    }
    // An integer percent, then whole sequences (multiples of `heads` rows).
    let percent = (100.0 * fits).floor();
    let rows = b * m.heads;
    let cpu = ((rows as f64 * percent / 100.0) as usize) / m.heads * m.heads;
    cpu as f64 / rows as f64
}

/// One decode step of FlexGen, split into its parts (s).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlexGenStep {
    /// KV bytes loaded per layer from disk (after compression and SparQ).
    pub disk_bytes_per_layer: f64,
    /// KV bytes loaded per layer from host memory.
    pub host_bytes_per_layer: f64,
    /// Per layer: disk items (disk → pinned → GPU), s.
    pub disk_s: f64,
    /// Per layer: the host part pinned in the main thread, s.
    pub pin_s: f64,
    /// Per layer: the host part over PCIe, s.
    pub host_link_s: f64,
    /// Per layer: the new KV stored (GPU → pinned → page cache), s.
    pub store_s: f64,
    /// Per layer: GPU work (the layer's share of the step, attention over
    /// the loaded KV, dequantisation), s.
    pub compute_s: f64,
    /// The layer with FlexGen's schedule, s.
    pub layer_s: f64,
}

/// FlexGen's decode step at batch `b` and context `s` (see the module doc).
/// `gpu_step` is the GPU's non-attention work for the whole step.
pub fn step(
    fg: &FlexGen,
    hw: &Hardware,
    m: &ModelShape,
    gpu_step: f64,
    b: usize,
    s: usize,
    seq_len: usize,
) -> FlexGenStep {
    let layers = m.layers as f64;
    let pcie = hw.pcie_gpu.value;
    // K and V of one layer, fp16, as attention reads them.
    let fp16 =
        b as f64 * s as f64 * m.kv_bytes_per_token() / layers * sparq_bytes_factor(fg.sparq, s);
    let loaded = fp16 * stored_bytes_factor(fg, hw, m);
    let h = host_share(fg, hw, m, b, seq_len);
    let (host, disk) = (loaded * h, loaded * (1.0 - h));
    let disk_s = disk / fg.disk_rate(hw) + disk / pcie;
    let pin_s = host / hw.host_memcpy.value;
    let host_link_s = host / pcie;
    let new = b as f64 * m.kv_bytes_per_token() / layers * stored_bytes_factor(fg, hw, m);
    let store_s = new / pcie + new / hw.host_memcpy.value;
    let dequant = if fg.four_bit { DEQUANT_TRAFFIC } else { 0.0 };
    let compute_s = gpu_step / layers + fp16 * (1.0 + dequant) / hw.gpu_mem_bw.value;
    let layer_s =
        pin_s + host_link_s.max(disk_s).max(compute_s).max(store_s) + hw.flexgen_layer_sync.value;
    FlexGenStep {
        disk_bytes_per_layer: disk,
        host_bytes_per_layer: host,
        disk_s,
        pin_s,
        host_link_s,
        store_s,
        compute_s,
        layer_s,
    }
}

/// The step if FlexGen's busiest link or the GPU were its only cost: the
/// disk part at the disk → host rate, everything loaded at PCIe x16, the
/// new KV at the SSD's write rate, or the GPU's work; the whole step.
pub fn limit_step(st: &FlexGenStep, hw: &Hardware, m: &ModelShape) -> f64 {
    let layers = m.layers as f64;
    let pcie = (st.disk_bytes_per_layer + st.host_bytes_per_layer) / hw.pcie_gpu.value;
    let disk = st.disk_s - st.disk_bytes_per_layer / hw.pcie_gpu.value;
    layers * disk.max(pcie).max(st.compute_s)
}

/// The prompt's KV stored: the disk part written back at the SSD's write
/// rate, the host part over PCIe, against the prefill's compute.
pub fn prefill_store(
    fg: &FlexGen,
    hw: &Hardware,
    m: &ModelShape,
    b: usize,
    prompt: usize,
    seq_len: usize,
) -> f64 {
    let kv = b as f64 * prompt as f64 * m.kv_bytes_per_token() * stored_bytes_factor(fg, hw, m);
    let h = host_share(fg, hw, m, b, seq_len);
    (kv * (1.0 - h) / hw.ssd_write.value).max(kv * h / hw.pcie_gpu.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: ModelShape = ModelShape::OPT_13B;

    fn fg(home: KvHome, four_bit: bool) -> FlexGen {
        FlexGen {
            home,
            four_bit,
            ..FlexGen::PUBLISHED
        }
    }

    #[test]
    fn four_bit_moves_72_of_256_bytes() {
        let hw = Hardware::default();
        let f = stored_bytes_factor(&fg(KvHome::Disk, true), &hw, &M);
        assert!((f - 72.0 / 256.0).abs() < 1e-12, "{f}");
        let dense = step(&fg(KvHome::Disk, false), &hw, &M, 0.03, 32, 1536, 2047);
        let four = step(&fg(KvHome::Disk, true), &hw, &M, 0.03, 32, 1536, 2047);
        let r = four.disk_bytes_per_layer / dense.disk_bytes_per_layer;
        assert!((r - 72.0 / 256.0).abs() < 1e-12, "{r}");
        // The GPU pays for the dequantisation.
        assert!(four.compute_s > dense.compute_s);
    }

    #[test]
    fn host_memory_helps_while_the_kv_fits_and_not_once_almost_none_does() {
        let hw = Hardware::default();
        let t = |home, b| step(&fg(home, false), &hw, &M, 0.03, b, 1536, 2047).layer_s;
        // Batch 16: 27 GB of KV, under 40 GB of host memory.
        assert_eq!(
            host_share(&fg(KvHome::HostWhileFits, false), &hw, &M, 16, 2047),
            1.0
        );
        assert!(t(KvHome::HostWhileFits, 16) < 0.2 * t(KvHome::Disk, 16));
        // Under 1% fits: FlexGen's integer percent is 0, the disk line.
        let tiny = Hardware {
            host_kv_capacity: crate::cost::Param {
                value: 1e9,
                source: "test",
            },
            ..hw
        };
        let t_tiny = |home| step(&fg(home, false), &tiny, &M, 0.03, 256, 1536, 2047).layer_s;
        assert_eq!(t_tiny(KvHome::HostWhileFits), t_tiny(KvHome::Disk));
        // In between: a share of whole sequences, and a step in between.
        let h = host_share(&fg(KvHome::HostWhileFits, false), &hw, &M, 64, 2047);
        assert!(h > 0.3 && h < 0.4, "{h}");
        assert!((h * 64.0).fract().abs() < 1e-9, "whole sequences: {h}");
        assert!(t(KvHome::HostWhileFits, 64) < t(KvHome::Disk, 64));
        assert!(t(KvHome::HostWhileFits, 64) > 0.5 * t(KvHome::Disk, 64));
    }

    #[test]
    fn a_compressed_cache_is_never_split() {
        let hw = Hardware::default();
        let f = fg(KvHome::HostWhileFits, true);
        assert_eq!(host_share(&f, &hw, &M, 32, 2047), 1.0);
        assert_eq!(host_share(&f, &hw, &M, 256, 2047), 0.0);
    }

    #[test]
    fn the_limit_is_the_busiest_link() {
        let hw = Hardware::default();
        let st = step(&FlexGen::PUBLISHED, &hw, &M, 0.03, 64, 1536, 2047);
        let limit = limit_step(&st, &hw, &M);
        let disk_only = M.layers as f64 * st.disk_bytes_per_layer / hw.flexgen_disk_measured.value;
        assert!((limit - disk_only).abs() < 1e-9 * limit);
        assert!(limit < M.layers as f64 * st.layer_s);
    }
}
