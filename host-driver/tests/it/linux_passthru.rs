//! The Linux passthrough transport's command building and completion
//! parsing, with only the system-call layer swapped for the simulated
//! board: Identify, the vendor-command success path and the end-to-end
//! vectors give the simulated board's own bits; a command too large for
//! one passthrough is refused before it reaches the device.
#![cfg(target_os = "linux")]

use host_driver::csd::Csd;
use host_driver::transport::{
    IoData, IoRequest, LinuxNvme, SimPassthru, SimTransport, Transport, TransportError,
};
use host_driver::vectors;
use proto::{Opcode, Sqe};

#[test]
fn linux_passthrough_runs_the_vectors_on_the_simulated_board() {
    for page_size in [4096u32, 16384] {
        let t = LinuxNvme::new(SimPassthru::new(page_size).expect("sim"));
        let mut csd = Csd::new(t).expect("identify through passthrough");
        assert!(csd.info().caps.channels > 0);
        let got = vectors::run(&mut csd).expect("vectors through passthrough");
        let mut sim = Csd::new(SimTransport::new(page_size).expect("sim")).expect("identify");
        let want = vectors::run(&mut sim).expect("vectors");
        assert_eq!(
            vectors::first_difference(&got, &want),
            None,
            "page size {page_size}"
        );
    }
}

#[test]
fn passthrough_limits_and_statuses() {
    let mut t = LinuxNvme::new(SimPassthru::new(4096).expect("sim"));
    let big = IoRequest {
        sqe: Sqe::new(Opcode(0x81)),
        data: IoData::ToDevice(vec![0; 600 << 10]),
    };
    assert!(matches!(
        t.submit(big),
        Err(TransportError::BadTransfer { .. })
    ));
    // An unknown vendor opcode comes back as an error status, not an error.
    let cid = t
        .submit(IoRequest {
            sqe: Sqe::new(Opcode(0x99)),
            data: IoData::None,
        })
        .expect("submit");
    let (c, res) = t.reap().expect("reap");
    assert_eq!(c, cid);
    assert!(!res.cqe.status().is_success());
    assert!(matches!(t.reap(), Err(TransportError::NothingInFlight)));
}

/// The user-space (VFIO) driver's registers, queues and PRPs against the
/// simulated board's controller: Identify, the vendor success path and the
/// end-to-end vectors give the simulated board's own bits.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn user_space_driver_runs_the_vectors_on_the_simulated_board() {
    use host_driver::transport::SimPci;
    use nvme_linux::vfio::UserNvme;
    for page_size in [4096u32, 16384] {
        let drv = UserNvme::start(SimPci::new(page_size).expect("sim")).expect("controller up");
        let mut csd = Csd::new(LinuxNvme::new(drv)).expect("identify through the queues");
        let got = vectors::run(&mut csd).expect("vectors through the user-space driver");
        let mut sim = Csd::new(SimTransport::new(page_size).expect("sim")).expect("identify");
        let want = vectors::run(&mut sim).expect("vectors");
        assert_eq!(
            vectors::first_difference(&got, &want),
            None,
            "page size {page_size}"
        );
    }
}

/// An append larger than one passthrough command may carry (504 KiB) is
/// split to the transport's limit, not only the device's (2 MiB), and gives
/// the simulated board's own bits.
#[test]
fn appends_are_split_to_the_passthrough_limit() {
    use attention::shape::Method;
    use proto::SeqShape;
    let shape = SeqShape {
        layers: 1,
        kv_heads: 8,
        group: 1,
        head_dim: 128,
        dim_group: 1,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    // 256 tokens × 8 heads × 128 dims × 2 bytes × (K, V) = 1 MiB.
    let n = 256 * 8 * 128;
    let k: Vec<u16> = (0..n)
        .map(|i| half::f16::from_f32(((i % 97) as f32 - 48.0) / 64.0).to_bits())
        .collect();
    let v: Vec<u16> = (0..n)
        .map(|i| half::f16::from_f32(((i % 89) as f32 - 44.0) / 64.0).to_bits())
        .collect();
    let q: Vec<u16> = (0..8 * 128)
        .map(|i| half::f16::from_f32(((i % 13) as f32 - 6.0) / 8.0).to_bits())
        .collect();
    let mut outs = Vec::new();
    let linux = Csd::new(LinuxNvme::new(SimPassthru::new(4096).expect("sim"))).expect("identify");
    assert_eq!(linux.info().max_transfer, 504 << 10);
    let sim = Csd::new(SimTransport::new(4096).expect("sim")).expect("identify");
    assert!(sim.info().max_transfer > 1 << 20);
    fn decode<T: Transport>(
        mut c: Csd<T>,
        k: &[u16],
        v: &[u16],
        q: &[u16],
        shape: SeqShape,
    ) -> Vec<i32> {
        c.open(1, shape).expect("open");
        c.append(1, 0, 0, k, v).expect("append");
        let t = c
            .submit_decode(1, 0, 255, q, None, Method::Dense)
            .expect("submit");
        c.fetch(t).expect("fetch").raw
    }
    outs.push(decode(linux, &k, &v, &q, shape));
    outs.push(decode(sim, &k, &v, &q, shape));
    assert_eq!(outs[0], outs[1]);
}

/// A controller that hangs: the user-space driver's command times out, the
/// driver resets the controller and brings its queues back, the command
/// fails with an error saying so, and the next commands run. A controller
/// reset is not a power loss: the open sequence is still there.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn a_stuck_controller_is_reset_and_the_driver_goes_on() {
    use attention::shape::Method;
    use host_driver::csd::CsdError;
    use host_driver::transport::SimPci;
    use nvme_linux::vfio::UserNvme;
    use proto::SeqShape;
    let mut drv = UserNvme::start(SimPci::new(4096).expect("sim")).expect("controller up");
    drv.set_command_timeout(std::time::Duration::from_millis(200));
    let mut csd = Csd::new(LinuxNvme::new(drv)).expect("identify");
    let shape = SeqShape {
        layers: 1,
        kv_heads: 2,
        group: 2,
        head_dim: 64,
        dim_group: 1,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    let n = 40 * 2 * 64;
    let k: Vec<u16> = (0..n)
        .map(|i| half::f16::from_f32(((i % 31) as f32 - 15.0) / 16.0).to_bits())
        .collect();
    let q: Vec<u16> = (0..2 * 2 * 64)
        .map(|i| half::f16::from_f32(((i % 7) as f32 - 3.0) / 4.0).to_bits())
        .collect();
    csd.open(3, shape).expect("open");
    csd.append(3, 0, 0, &k, &k).expect("append");
    let decode = |c: &mut Csd<LinuxNvme<UserNvme<SimPci>>>| {
        let t = c.submit_decode(3, 0, 39, &q, None, Method::Dense)?;
        c.fetch(t)
    };
    let want = decode(&mut csd).expect("decode").raw;
    csd.transport_mut().device_mut().pci_mut().csd_mut().stall();
    let e = decode(&mut csd).expect_err("a hung controller answers nothing");
    let text = e.to_string();
    assert!(matches!(e, CsdError::Transport(_)), "{text}");
    assert!(
        text.contains("stuck command") && text.contains("controller reset: done"),
        "{text}"
    );
    assert_eq!(csd.transport().device().resets(), 1);
    // The queues are back and the sequence survived the reset.
    assert_eq!(decode(&mut csd).expect("decode after the reset").raw, want);
    let got = vectors::run(&mut csd).expect("vectors after the reset");
    let mut sim = Csd::new(SimTransport::new(4096).expect("sim")).expect("identify");
    let want = vectors::run(&mut sim).expect("vectors");
    assert_eq!(vectors::first_difference(&got, &want), None);
}
