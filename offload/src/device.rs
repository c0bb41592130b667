//! [`DeviceSpec`] (which device a command runs on: `sim`, `qemu:zynqmp`,
//! `qemu:zynq7000`) and [`AnyTransport`], the transport of whichever it is.

use host_driver::transport::{
    DeviceTime, IoRequest, IoResult, QemuBoard, QemuTransport, SimTransport, Transport,
    TransportError,
};

/// Which device to use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceSpec {
    /// The simulated board, in process.
    #[default]
    Sim,
    /// The firmware under QEMU on this board.
    Qemu(QemuBoard),
    /// A drive behind the Linux NVMe driver: its namespace
    /// (`/dev/nvmeXnY` or `/dev/ngXnY`), reached by passthrough ioctls.
    #[cfg(target_os = "linux")]
    Linux(std::path::PathBuf),
    /// A drive driven from user space over VFIO: its PCI address
    /// (`vfio:0000:00:04.0`, bound to `vfio-pci`).
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    Vfio(String),
    /// A controller on an NVMe/TCP target (`tcp://HOST:PORT/NQN`).
    Tcp(nvme_tcp::TcpUrl),
}

impl DeviceSpec {
    /// `sim`, `qemu:zynqmp`, `qemu:zynq7000`, `tcp://HOST:PORT/NQN` or
    /// (Linux) a namespace path under `/dev` or `vfio:<PCI address>`.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.starts_with("tcp://") {
            return nvme_tcp::TcpUrl::parse(s).map(Self::Tcp);
        }
        #[cfg(target_os = "linux")]
        if s.starts_with("/dev/") {
            return Ok(Self::Linux(std::path::PathBuf::from(s)));
        }
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if let Some(bdf) = s.strip_prefix("vfio:") {
            return Ok(Self::Vfio(bdf.to_string()));
        }
        match s.split_once(':') {
            None if s == "sim" => Ok(Self::Sim),
            Some(("qemu", b)) => QemuBoard::parse(b)
                .map(Self::Qemu)
                .ok_or_else(|| format!("unknown QEMU board {b:?} (zynqmp or zynq7000)")),
            _ => Err(format!(
                "unknown device {s:?} (sim, qemu:zynqmp, qemu:zynq7000, tcp://HOST:PORT/NQN, /dev/ngXnY or vfio:<PCI address>)"
            )),
        }
    }

    /// Starts one device with `page_size`-byte flash pages (the simulated
    /// and QEMU boards; a real drive has its own).
    pub fn open(&self, page_size: u32) -> Result<AnyTransport, TransportError> {
        Ok(match self {
            #[cfg(target_os = "linux")]
            Self::Linux(path) => AnyTransport::Linux(Box::new(
                host_driver::transport::LinuxNvme::new(nvme_linux::Device::open(path)?),
            )),
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            Self::Vfio(bdf) => {
                let link = std::fs::read_link(format!("/sys/bus/pci/devices/{bdf}/iommu_group"))
                    .map_err(|e| TransportError::Setup(format!("{bdf}: no IOMMU group ({e})")))?;
                let group =
                    std::path::Path::new("/dev/vfio").join(link.file_name().unwrap_or_default());
                AnyTransport::Vfio(Box::new(host_driver::transport::LinuxNvme::new(
                    nvme_linux::vfio::VfioNvme::open(bdf, &group)?,
                )))
            }
            Self::Tcp(url) => AnyTransport::Tcp(Box::new(nvme_tcp::NvmeTcp::connect(url)?)),
            Self::Sim => AnyTransport::Sim(Box::new(SimTransport::new(page_size)?)),
            Self::Qemu(b) => {
                let elf = b.find_firmware()?;
                AnyTransport::Qemu(Box::new(QemuTransport::spawn(*b, &elf, page_size)?))
            }
        })
    }
}

impl std::fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sim => f.write_str("sim"),
            Self::Qemu(b) => write!(f, "qemu:{}", b.name()),
            #[cfg(target_os = "linux")]
            Self::Linux(p) => write!(f, "{}", p.display()),
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            Self::Vfio(b) => write!(f, "vfio:{b}"),
            Self::Tcp(u) => write!(f, "{u}"),
        }
    }
}

/// The transport of a [`DeviceSpec`].
#[derive(Debug)]
pub enum AnyTransport {
    /// The simulated board.
    Sim(Box<SimTransport>),
    /// The firmware under QEMU.
    Qemu(Box<QemuTransport>),
    /// A drive behind the Linux NVMe driver.
    #[cfg(target_os = "linux")]
    Linux(Box<host_driver::transport::LinuxNvme<nvme_linux::Device>>),
    /// A drive driven from user space over VFIO.
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    Vfio(Box<host_driver::transport::LinuxNvme<nvme_linux::vfio::VfioNvme>>),
    /// A controller on an NVMe/TCP target.
    Tcp(Box<nvme_tcp::NvmeTcp>),
}

impl AnyTransport {
    fn inner_ref(&self) -> &dyn Transport {
        match self {
            Self::Sim(t) => t.as_ref(),
            Self::Qemu(t) => t.as_ref(),
            #[cfg(target_os = "linux")]
            Self::Linux(t) => t.as_ref(),
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            Self::Vfio(t) => t.as_ref(),
            Self::Tcp(t) => t.as_ref(),
        }
    }

    fn inner(&mut self) -> &mut dyn Transport {
        match self {
            Self::Sim(t) => t.as_mut(),
            Self::Qemu(t) => t.as_mut(),
            #[cfg(target_os = "linux")]
            Self::Linux(t) => t.as_mut(),
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            Self::Vfio(t) => t.as_mut(),
            Self::Tcp(t) => t.as_mut(),
        }
    }
}

impl Transport for AnyTransport {
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        self.inner().admin(req)
    }

    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        self.inner().submit(req)
    }

    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        self.inner().reap()
    }

    fn in_flight(&self) -> usize {
        self.inner_ref().in_flight()
    }

    fn device_time(&self) -> Option<DeviceTime> {
        self.inner_ref().device_time()
    }

    fn max_transfer(&self) -> Option<usize> {
        self.inner_ref().max_transfer()
    }

    fn holds_caller(&self) -> bool {
        self.inner_ref().holds_caller()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_device_names() {
        assert_eq!(DeviceSpec::parse("sim"), Ok(DeviceSpec::Sim));
        assert_eq!(
            DeviceSpec::parse("qemu:zynqmp"),
            Ok(DeviceSpec::Qemu(QemuBoard::ZynqMp))
        );
        assert_eq!(
            DeviceSpec::parse("qemu:zynq7000").map(|d| d.to_string()),
            Ok("qemu:zynq7000".into())
        );
        assert!(DeviceSpec::parse("qemu:cosmos").is_err());
        assert!(DeviceSpec::parse("nvme0").is_err());
        assert_eq!(
            DeviceSpec::parse("tcp://127.0.0.1:4420/nqn.x:y").map(|d| d.to_string()),
            Ok("tcp://127.0.0.1:4420/nqn.x:y".into())
        );
        assert_eq!(
            DeviceSpec::parse("tcp://localhost").map(|d| d.to_string()),
            Ok(format!("tcp://localhost:4420/{}", nvme_tcp::DEFAULT_NQN))
        );
        assert!(DeviceSpec::parse("tcp://h:port/n").is_err());
        assert!(DeviceSpec::parse("tcp:///n").is_err());
        // The host NQN and its secrets file ride in the URL.
        let auth = "tcp://10.0.0.1:4420/nqn.x:y?hostnqn=nqn.h:1&secrets=/etc/s";
        assert_eq!(
            DeviceSpec::parse(auth).map(|d| d.to_string()),
            Ok(auth.into())
        );
        match DeviceSpec::parse(auth) {
            Ok(DeviceSpec::Tcp(u)) => {
                assert_eq!(u.nqn, "nqn.x:y");
                assert_eq!(u.hostnqn.as_deref(), Some("nqn.h:1"));
                assert_eq!(u.secrets, Some("/etc/s".into()));
            }
            other => panic!("{other:?}"),
        }
        for bad in ["tcp://h/n?key=1", "tcp://h/n?hostnqn=", "tcp://h/n?secrets"] {
            assert!(DeviceSpec::parse(bad).is_err(), "{bad}");
        }
        #[cfg(target_os = "linux")]
        assert_eq!(
            DeviceSpec::parse("/dev/ng0n1"),
            Ok(DeviceSpec::Linux("/dev/ng0n1".into()))
        );
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        assert_eq!(
            DeviceSpec::parse("vfio:0000:00:04.0"),
            Ok(DeviceSpec::Vfio("0000:00:04.0".into()))
        );
    }
}
