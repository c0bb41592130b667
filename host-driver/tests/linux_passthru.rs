//! The Linux passthrough transport's command building and completion
//! parsing, with only the system-call layer swapped for the simulated
//! board: Identify, the vendor-command success path and the end-to-end
//! vectors give the simulated board's own bits; a command too large for
//! one passthrough is refused before it reaches the device.
#![cfg(target_os = "linux")]

use host_driver::csd::Csd;
use host_driver::run::vectors;
use host_driver::transport::{
    IoData, IoRequest, LinuxNvme, SimPassthru, SimTransport, Transport, TransportError,
};
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
