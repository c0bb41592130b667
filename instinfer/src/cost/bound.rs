//! The physical limit of one simulated CSD point: the time its decode
//! would take if its busiest resource worked without a gap. Each resource's
//! need is the work the point actually did on it, spread evenly over its
//! parallel units: array time over dies, bus time over channels, engine
//! time (one engine), PCIe DMA time (one link).

use super::csd::CsdPoint;

/// A resource of the CSD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// NAND arrays (tR per page read), summed over dies / dies.
    Arrays,
    /// Channel buses (transfers), summed over channels / channels.
    Buses,
    /// The attention engine.
    Engine,
    /// The host link (DMA of queries, outputs, new KV).
    Pcie,
}

impl Resource {
    /// Every resource, in the order of [`CsdPoint::needs`].
    pub const ALL: [Resource; 4] = [Self::Arrays, Self::Buses, Self::Engine, Self::Pcie];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Arrays => "arrays",
            Self::Buses => "buses",
            Self::Engine => "engine",
            Self::Pcie => "pcie",
        }
    }
}

/// The bound of a point and its resource.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    /// The busiest resource.
    pub resource: Resource,
    /// Virtual ns the decode needs on it at full use.
    pub ns: u64,
}

impl Bound {
    /// Decode time over the bound (1.0 = at the limit).
    pub fn ratio(&self, decode_ns: u64) -> f64 {
        decode_ns as f64 / self.ns.max(1) as f64
    }
}

impl CsdPoint {
    /// Need of each resource during the decode, virtual ns.
    pub fn needs(&self) -> [(Resource, u64); 4] {
        [
            (
                Resource::Arrays,
                self.flash_busy_ns / self.dies.max(1) as u64,
            ),
            (
                Resource::Buses,
                self.bus_busy_ns / self.channels.max(1) as u64,
            ),
            (Resource::Engine, self.engine_busy_ns),
            (Resource::Pcie, self.dma_busy_ns),
        ]
    }

    /// Busy fraction of each resource during the decode: its need over the
    /// decode's virtual time (1.0 = busy throughout).
    pub fn utilisation(&self) -> [(Resource, f64); 4] {
        let t = self.decode_ns.max(1) as f64;
        self.needs().map(|(r, ns)| (r, ns as f64 / t))
    }

    /// The busiest resource's need.
    pub fn bound(&self) -> Bound {
        let (resource, ns) = self
            .needs()
            .into_iter()
            .max_by_key(|&(_, ns)| ns)
            .unwrap_or((Resource::Arrays, 0));
        Bound { resource, ns }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point() -> CsdPoint {
        CsdPoint {
            bus_busy_ns: 8 * 300,
            engine_busy_ns: 200,
            flash_busy_ns: 64 * 500,
            dma_busy_ns: 100,
            ..CsdPoint::idle(1_000)
        }
    }

    #[test]
    fn the_busiest_resource_sets_the_bound() {
        let b = point().bound();
        assert_eq!((b.resource, b.ns), (Resource::Arrays, 500));
        assert!((b.ratio(1_000) - 2.0).abs() < 1e-12);
        let mut p = point();
        p.engine_busy_ns = 900;
        assert_eq!(p.bound().resource, Resource::Engine);
    }

    #[test]
    fn utilisation_is_each_need_over_the_decode() {
        let u = point().utilisation();
        let want = [0.5, 0.3, 0.2, 0.1];
        for ((r, f), (res, w)) in u.iter().zip(Resource::ALL.iter().zip(want)) {
            assert_eq!(r, res);
            assert!((f - w).abs() < 1e-12, "{r:?}: {f}");
        }
    }
}
