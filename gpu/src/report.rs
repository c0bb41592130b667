//! Which peer-to-peer paths between a GPU and an NVMe device this machine
//! accepts, each tried or checked, never assumed.

use std::fmt;

use crate::{Gpu, GpuError};

/// What one path did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathOutcome {
    /// It works here.
    Works(String),
    /// It was tried and refused; the reason.
    Refused(String),
    /// It could not be tried here; why.
    NotTried(String),
}

/// The paths and their outcomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingReport {
    /// (path, outcome), in the order checked.
    pub paths: Vec<(&'static str, PathOutcome)>,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Checks every path: the GPU itself, its dma-buf export, the kernel
/// modules GPU peer-to-peer DMA needs (`nvidia_peermem`, GPUDirect
/// Storage's `nvidia_fs`), the kernel's PCI P2PDMA, and what the NVMe
/// passthrough and VFIO interfaces of this kernel do with GPU memory.
pub fn report(gpu: Result<&Gpu, &GpuError>) -> MappingReport {
    let mut paths = Vec::new();
    let kernel = read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into());
    paths.push(("kernel", PathOutcome::Works(kernel)));
    match gpu {
        Ok(g) => {
            paths.push((
                "GPU",
                PathOutcome::Works(format!("{}, {} MiB", g.name, g.total_mem >> 20)),
            ));
            let export = if !g.dma_buf_supported {
                PathOutcome::Refused("CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0".into())
            } else {
                match g.alloc(2 << 20).and_then(|b| b.export_dma_buf()) {
                    Ok(fd) => PathOutcome::Works(format!("2 MiB exported as dma-buf fd {fd:?}")),
                    Err(e) => PathOutcome::Refused(e.to_string()),
                }
            };
            paths.push(("dma-buf export (cuMemGetHandleForAddressRange)", export));
        }
        Err(e) => {
            paths.push(("GPU", PathOutcome::NotTried(e.to_string())));
            paths.push((
                "dma-buf export (cuMemGetHandleForAddressRange)",
                PathOutcome::NotTried("no GPU".into()),
            ));
        }
    }
    for (name, module) in [
        ("nvidia_peermem (RDMA peer memory)", "nvidia_peermem"),
        ("nvidia_fs (GPUDirect Storage)", "nvidia_fs"),
    ] {
        let loaded = std::path::Path::new(&format!("/sys/module/{module}")).exists();
        paths.push((
            name,
            if loaded {
                PathOutcome::Works("module loaded".into())
            } else {
                PathOutcome::NotTried("module not loaded".into())
            },
        ));
    }
    let p2pmem = std::fs::read_dir("/sys/bus/pci/devices")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().join("p2pmem").exists())
                .count()
        })
        .unwrap_or(0);
    paths.push((
        "PCI P2PDMA (p2pmem)",
        if p2pmem > 0 {
            PathOutcome::Works(format!("{p2pmem} device(s) publish p2pmem"))
        } else {
            PathOutcome::NotTried("no device publishes p2pmem".into())
        },
    ));
    // What the kernel interfaces do with a GPU pointer, from how they map
    // user memory (not tried without an NVMe device and a GPU together).
    paths.push((
        "NVMe passthrough ioctl / io_uring with a GPU pointer",
        PathOutcome::NotTried(
            "needs a GPU and an NVMe device together; the kernel maps passthrough buffers with get_user_pages, which device memory is not, so expect EFAULT and use the bounce".into(),
        ),
    ));
    paths.push((
        "VFIO_IOMMU_MAP_DMA of GPU memory",
        PathOutcome::NotTried(
            "needs a GPU and a device bound to vfio-pci; type1 VFIO pins user pages too, and importing a dma-buf into the IOMMU is not a VFIO type1 operation, so expect a refusal and use the bounce".into(),
        ),
    ));
    MappingReport { paths }
}

impl fmt::Display for MappingReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, o) in &self.paths {
            let (tag, why) = match o {
                PathOutcome::Works(s) => ("yes", s),
                PathOutcome::Refused(s) => ("no", s),
                PathOutcome::NotTried(s) => ("not tried", s),
            };
            writeln!(f, "{name:<55} {tag:<9} {why}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_every_path() {
        let g = crate::open(0);
        let r = report(g.as_ref());
        assert!(r.paths.len() >= 7);
        let text = r.to_string();
        assert!(text.contains("dma-buf export"));
        assert!(text.contains("passthrough"));
        if let Err(e) = &g {
            assert!(text.contains(&e.to_string()));
        }
    }
}
