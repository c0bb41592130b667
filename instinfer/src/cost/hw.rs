//! Hardware and model parameters. Each [`Param`] names where its value
//! comes from: a datasheet, the InstInfer paper, or our own assumption
//! (said as such).

/// One parameter and its source.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Param {
    /// The value, in the unit of the field it fills.
    pub value: f64,
    /// Where it comes from.
    pub source: &'static str,
}

const fn p(value: f64, source: &'static str) -> Param {
    Param { value, source }
}

/// OPT-13B, as in the paper's evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelShape {
    /// Decoder layers.
    pub layers: usize,
    /// Attention heads (= KV heads: OPT has no GQA).
    pub heads: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// Parameters.
    pub params: f64,
    /// Bytes per value (fp16).
    pub bytes_per_value: f64,
}

impl ModelShape {
    /// OPT-13B: 40 layers × 40 heads × d = 128 (hidden 5120), 12.9e9
    /// parameters (Zhang et al., OPT, 2022, table 1), fp16.
    pub const OPT_13B: ModelShape = ModelShape {
        layers: 40,
        heads: 40,
        head_dim: 128,
        params: 12.9e9,
        bytes_per_value: 2.0,
    };

    /// KV bytes of one token over all layers and heads (K and V).
    pub fn kv_bytes_per_token(&self) -> f64 {
        2.0 * (self.layers * self.heads * self.head_dim) as f64 * self.bytes_per_value
    }

    /// Weight bytes.
    pub fn weight_bytes(&self) -> f64 {
        self.params * self.bytes_per_value
    }
}

/// The machine of the paper's evaluation, and the links and devices the
/// systems use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hardware {
    /// GPU fp16 tensor rate, FLOP/s.
    pub gpu_flops: Param,
    /// Fraction of that rate a decode step's GEMMs reach.
    pub gpu_efficiency: Param,
    /// GPU memory bandwidth, B/s.
    pub gpu_mem_bw: Param,
    /// GPU memory, bytes.
    pub gpu_mem: Param,
    /// Host ↔ GPU link (PCIe Gen4 x16), effective B/s.
    pub pcie_gpu: Param,
    /// Host ↔ SSD link (PCIe Gen4 x4, the 980 PRO's), raw B/s.
    pub pcie_ssd: Param,
    /// Host ↔ CSD link (PCIe Gen3 x4, the emulated CSD's), raw B/s.
    pub pcie_csd: Param,
    /// Commodity SSD sequential read, B/s.
    pub ssd_read: Param,
    /// Commodity SSD sequential write, B/s.
    pub ssd_write: Param,
    /// Host memory available for KV before it spills, bytes.
    pub host_kv_capacity: Param,
    /// Throughput of KV that spilled to swap, B/s.
    pub swap_bw: Param,
    /// Fixed cost of one GPU ↔ host copy (the bounce when the CSDs cannot
    /// reach GPU memory peer to peer), s.
    pub bounce_copy_latency: Param,
    /// FlexGen's disk → host rate as measured on this machine (replaced by
    /// `bench paper` with its probe's result), B/s.
    pub flexgen_disk_measured: Param,
    /// FlexGen's disk → host rate fitted by its own cost model, B/s.
    pub flexgen_disk_fitted: Param,
    /// FlexGen's copy threads (disk ↔ host ↔ GPU).
    pub flexgen_copy_threads: Param,
    /// FlexGen's per-layer synchronisation (copy queue join and CUDA
    /// synchronise), s.
    pub flexgen_layer_sync: Param,
    /// Host memory copy into freshly pinned memory (FlexGen's relay for KV
    /// held in unpinned host memory), B/s.
    pub host_memcpy: Param,
    /// FlexGen's KV quantisation group (values per group).
    pub flexgen_kv_group: Param,
    /// FlexGen's KV quantisation bits per value.
    pub flexgen_kv_bits: Param,
}

impl Default for Hardware {
    fn default() -> Self {
        Self {
            gpu_flops: p(
                154.8e12,
                "NVIDIA RTX A6000 datasheet: 309.7 TFLOPS fp16 tensor with sparsity, 154.8 dense",
            ),
            gpu_efficiency: p(
                0.5,
                "assumption: half of peak for the decode step's skinny GEMMs",
            ),
            gpu_mem_bw: p(768e9, "NVIDIA RTX A6000 datasheet: 768 GB/s GDDR6"),
            gpu_mem: p(48e9, "NVIDIA RTX A6000 datasheet: 48 GB"),
            pcie_gpu: p(
                25e9,
                "PCIe Gen4 x16: 31.5 GB/s raw (PCIe 4.0 spec), ~80% after TLP overhead (assumption)",
            ),
            pcie_ssd: p(7.88e9, "PCIe Gen4 x4: 7.88 GB/s raw (PCIe 4.0 spec)"),
            pcie_csd: p(
                3.94e9,
                "PCIe Gen3 x4: 3.94 GB/s raw (PCIe 3.0 spec); the simulated board charges its own TLP model",
            ),
            ssd_read: p(
                7.0e9,
                "Samsung 980 PRO datasheet: 7,000 MB/s sequential read",
            ),
            ssd_write: p(
                5.0e9,
                "Samsung 980 PRO datasheet: 5,000 MB/s sequential write (1-2 TB)",
            ),
            host_kv_capacity: p(
                40e9,
                "assumption: the paper reports DeepSpeed's KV spilling between batch 16 and 32 (26 and 52 GB of OPT-13B KV at 2048 tokens); 40 GB sits between",
            ),
            swap_bw: p(
                0.8e9,
                "assumption: 4 KiB page faults served from the SSD by the kernel's swap",
            ),
            bounce_copy_latency: p(
                10e-6,
                "assumption: one cudaMemcpy call and its synchronization (the simulated board's GpuModel uses the same 10 us)",
            ),
            flexgen_disk_measured: p(
                0.473e9,
                "not measured in this run: FlexGen's fitted disk-to-CPU rate stands in",
            ),
            flexgen_disk_fitted: p(
                0.473e9,
                "FlexLLMGen experimental/cost_model.py CostModelConfig.dtoc_bdw: disk-to-CPU 0.473 GB/s fitted on its GCP T4 machine",
            ),
            flexgen_copy_threads: p(
                4.0,
                "FlexLLMGen flexllmgen/pytorch_backend.py TorchDisk: num_copy_threads=4",
            ),
            flexgen_layer_sync: p(
                20e-6,
                "assumption: FlexLLMGen flex_opt.py OptLM.sync joins the disk copy queue and calls torch.cuda.synchronize once per layer; two 10 us round trips",
            ),
            host_memcpy: p(
                10e9,
                "assumption: one core copying unpinned host memory into pinned memory (torch pin_memory, FlexLLMGen pytorch_backend.py general_copy)",
            ),
            flexgen_kv_group: p(
                64.0,
                "FlexLLMGen flex_opt.py run_flexllmgen: comp_cache_config CompressionConfig(num_bits=4, group_size=64, group_dim=2)",
            ),
            flexgen_kv_bits: p(
                4.0,
                "FlexLLMGen flex_opt.py run_flexllmgen: comp_cache_config num_bits=4 (compression.py asserts 4)",
            ),
        }
    }
}

impl Hardware {
    /// Every parameter with its name, for the report.
    pub fn params(&self) -> Vec<(&'static str, Param)> {
        vec![
            ("gpu_flops", self.gpu_flops),
            ("gpu_efficiency", self.gpu_efficiency),
            ("gpu_mem_bw", self.gpu_mem_bw),
            ("gpu_mem", self.gpu_mem),
            ("pcie_gpu", self.pcie_gpu),
            ("pcie_ssd", self.pcie_ssd),
            ("pcie_csd", self.pcie_csd),
            ("ssd_read", self.ssd_read),
            ("ssd_write", self.ssd_write),
            ("host_kv_capacity", self.host_kv_capacity),
            ("swap_bw", self.swap_bw),
            ("bounce_copy_latency", self.bounce_copy_latency),
            ("flexgen_disk_measured", self.flexgen_disk_measured),
            ("flexgen_disk_fitted", self.flexgen_disk_fitted),
            ("flexgen_copy_threads", self.flexgen_copy_threads),
            ("flexgen_layer_sync", self.flexgen_layer_sync),
            ("host_memcpy", self.host_memcpy),
            ("flexgen_kv_group", self.flexgen_kv_group),
            ("flexgen_kv_bits", self.flexgen_kv_bits),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opt_13b_kv_is_800_kib_per_token() {
        let m = ModelShape::OPT_13B;
        assert_eq!(m.kv_bytes_per_token(), 819_200.0);
        assert!(m.weight_bytes() > 25e9 && m.weight_bytes() < 27e9);
    }

    #[test]
    fn every_parameter_names_a_source() {
        for (name, p) in Hardware::default().params() {
            assert!(p.value > 0.0, "{name}");
            assert!(p.source.len() > 10, "{name} has no source");
        }
    }
}
