//! The board link end to end in one process: the firmware on a
//! `board_ram::LinkBoard` (the QEMU boards' board, minus the CPU) in a
//! thread, the host's `LinkTransport` over a socket pair, and the
//! end-to-end vectors compared bit for bit with the simulated board.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use board_ram::{ByteLink, LinkBoard, LinkHost, RamNand};
use firmware::Device;
use firmware::hal::{Clock, SoftEngine};
use ftl::Geometry;
use host_driver::csd::Csd;
use host_driver::transport::{LinkTransport, SimTransport};
use host_driver::vectors;

struct Sock(UnixStream);

impl ByteLink for Sock {
    type Error = std::io::Error;
    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), std::io::Error> {
        self.0.read_exact(buf)
    }
    fn write_all(&mut self, data: &[u8]) -> Result<(), std::io::Error> {
        self.0.write_all(data)
    }
}

#[derive(Debug)]
struct Ticks(u64);

impl Clock for Ticks {
    fn now_ns(&self) -> u64 {
        self.0
    }
}

fn device_thread(sock: UnixStream, geo: Geometry) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let host = LinkHost::connect(Sock(sock), 7).expect("hello");
        let board = LinkBoard {
            host,
            nand: RamNand::new(geo, 1 << 16, 8),
            engine: SoftEngine::default(),
            clock: Ticks(0),
        };
        let cfg = board_ram::device_config(geo, 64 << 20, "LINK-TEST", "InstCSD link test");
        let mut dev = Device::new(board, cfg).expect("device");
        let served = dev.run_until_idle().expect("serve");
        assert!(dev.board().host.shutdown_requested(), "stopped by the host");
        served
    })
}

#[test]
fn link_board_matches_simulated_board() {
    for page_size in [4096u32, 16384] {
        let geo = Geometry {
            page_size,
            ..Geometry::daisyplus()
        };
        let (host_end, dev_end) = UnixStream::pair().expect("socket pair");
        let dev = device_thread(dev_end, geo);
        let t = LinkTransport::connect(host_end.try_clone().expect("clone"), host_end)
            .expect("connect");
        assert_eq!(t.board(), 7);
        let mut link = Csd::new(t).expect("identify over the link");
        let got = vectors::run(&mut link).expect("vectors over the link");
        let mut sim = Csd::new(SimTransport::new(page_size).expect("sim")).expect("sim identify");
        let want = vectors::run(&mut sim).expect("vectors on the simulated board");
        assert_eq!(
            vectors::first_difference(&got, &want),
            None,
            "page size {page_size}"
        );
        assert_eq!(got.len(), 12);
        assert!(got.iter().all(|r| r.raw.iter().any(|&x| x != 0)));
        link.transport_mut().shutdown().expect("shutdown");
        let served = dev.join().expect("device thread");
        assert!(served > 20, "served {served} commands");
    }
}
