//! Peer-to-peer DMA between a (simulated) GPU and the simulated board:
//! the same commands with their data in host memory, in GPU memory reached
//! peer to peer, and in GPU memory bounced through host memory. Same
//! outputs; the bytes through host DRAM and the virtual time differ as the
//! paths say.

use host_driver::csd::Csd;
use host_driver::dma::{DmaStats, GpuPath, Placement};
use host_driver::transport::{
    DeviceTime, IoRequest, IoResult, SimTransport, Transport, TransportError,
};
use host_driver::vectors;

/// Counts the data bytes of the I/O commands it passes on.
struct Counting {
    inner: SimTransport,
    io_bytes: u64,
}

impl Transport for Counting {
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        self.inner.admin(req)
    }
    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        self.io_bytes += req.data.len() as u64;
        self.inner.submit(req)
    }
    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        self.inner.reap()
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    fn device_time(&self) -> Option<DeviceTime> {
        self.inner.device_time()
    }
}

struct Run {
    results: Vec<vectors::VectorResult>,
    stats: DmaStats,
    io_bytes: u64,
    now_ns: u64,
    host_dram_written: u64,
}

fn run(placement: Placement) -> Run {
    let mut t = SimTransport::new(4096).unwrap();
    t.set_placement(placement);
    let mut csd = Csd::new(Counting {
        inner: t,
        io_bytes: 0,
    })
    .unwrap();
    let results = vectors::run(&mut csd).unwrap();
    let c = csd.into_transport();
    let stats = c.inner.dma_stats();
    let mem = c.inner.device().host_memory_counters();
    Run {
        results,
        stats,
        io_bytes: c.io_bytes,
        now_ns: c.inner.device().now_ns(),
        host_dram_written: mem.bytes_written,
    }
}

#[test]
fn p2p_moves_no_data_through_host_dram_and_bounce_moves_it_twice() {
    let host = run(Placement::Host);
    let p2p = run(Placement::Gpu(GpuPath::PeerToPeer));
    let bounce = run(Placement::Gpu(GpuPath::Bounce));
    // The same bits whatever the path.
    assert_eq!(vectors::first_difference(&p2p.results, &host.results), None);
    assert_eq!(
        vectors::first_difference(&bounce.results, &host.results),
        None
    );
    assert_eq!(host.io_bytes, p2p.io_bytes);
    assert!(host.io_bytes > 400_000, "{} data bytes", host.io_bytes);
    // Host memory: no peer-to-peer traffic, no copies.
    assert_eq!((host.stats.p2p_bytes, host.stats.bounce_bytes), (0, 0));
    // Peer to peer: every data byte between the GPU and the drive, none
    // through host DRAM; only SQEs, CQEs and PRP lists stay there.
    assert_eq!(p2p.stats.p2p_bytes, p2p.io_bytes);
    assert_eq!(
        p2p.stats.device_host_dram_bytes,
        host.stats.device_host_dram_bytes - host.io_bytes
    );
    assert_eq!(p2p.stats.bounce_bytes, 0);
    // Bounce: the drive's DMA is the host run's; every data byte is also
    // copied once on the GPU's link, written into host DRAM on the way in
    // (or by the drive on the way out) and read back out of it.
    assert_eq!(bounce.stats.p2p_bytes, 0);
    assert_eq!(
        bounce.stats.device_host_dram_bytes,
        host.stats.device_host_dram_bytes
    );
    assert_eq!(bounce.stats.bounce_bytes, bounce.io_bytes);
    assert!(bounce.stats.bounce_copies > 0 && bounce.stats.bounce_busy_ns > 0);
    // Virtual time: the copies come before the commands that need them.
    assert!(bounce.now_ns > host.now_ns);
    assert!(p2p.host_dram_written < host.host_dram_written);
}
