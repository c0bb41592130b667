//! The device core on the Daisyplus board assembled from models of its
//! hardware: a host's Identify goes in through the NVMe controller's
//! command FIFO, the core serves it, the data comes out through the direct
//! DMA engine at the host's (64-bit) PRP address, and the completion goes
//! back through the completion FIFO by command slot.

use board_daisyplus::board::Daisyplus;
use board_openssd::board::{Hardware, OpenSsd};
use board_openssd::fake::{NvmeModel, Plain, Recorder, RegisterModel, SharedMem, StepCounter};
use board_openssd::flash::slots;
use board_openssd::nvme::regs::DAISYPLUS;
use firmware::{Device, Progress};
use proto::Status;

/// Host memory above 4 GiB: the Daisyplus controller carries 64-bit
/// addresses.
const HOST: u64 = 0x8_0000_0000;

/// The board's register windows: the NVMe controller model or plain
/// registers (NAND controllers, engine).
enum Model {
    Nvme(Box<NvmeModel>),
    Plain(Plain),
}

impl RegisterModel for Model {
    fn read(&mut self, offset: usize) -> u32 {
        match self {
            Model::Nvme(m) => m.read(offset),
            Model::Plain(p) => p.read(offset),
        }
    }

    fn write(&mut self, offset: usize, value: u32) {
        match self {
            Model::Nvme(m) => m.write(offset, value),
            Model::Plain(p) => p.write(offset, value),
        }
    }
}

#[test]
fn identify_is_served_end_to_end() {
    let bounce = SharedMem::new(0x4000_0000, 0x1_0000);
    let mut nvme = NvmeModel::new(&DAISYPLUS, HOST, 0x4000, bounce.clone());
    nvme.enable();
    let mut sqe = proto::identify_controller();
    sqe.set_cid(0x42);
    sqe.prp1 = HOST + 0x1000;
    nvme.submit(0, 700, &sqe);

    let plain = || Recorder::new(Model::Plain(Plain::default()));
    let hw = Hardware {
        nvme: Recorder::new(Model::Nvme(Box::new(nvme))),
        nsc: (0..4).map(|_| plain()).collect(),
        engine: plain(),
        host_bounce: bounce,
        nand_buffers: SharedMem::new(0x4010_0000, slots::window_bytes(8)),
        counter: StepCounter::new(1, 33_333_000),
    };
    let mut board = Daisyplus::assemble(hw).expect("board");
    let cfg = Daisyplus::config(&mut board);
    let mut device = Device::new(board, cfg).expect("device core");
    assert_eq!(device.poll().expect("poll"), Progress::Served);
    assert_eq!(device.poll().expect("poll"), Progress::Idle);

    let Model::Nvme(m) = &device.board_mut().host.regs_mut().model else {
        panic!("the NVMe window holds the controller model");
    };
    // One completion, for slot 700, successful.
    assert_eq!(m.completions.len(), 1);
    let (slot, kind, field, _) = m.completions[0];
    assert_eq!((slot, kind), (700, 1));
    assert_eq!(Status::from_field(field >> 1), Status::SUCCESS);
    // The Identify data reached the host: 4096 bytes, model number at 24.
    assert_eq!(
        m.ran.iter().filter(|r| r.0).map(|r| r.2).sum::<usize>(),
        4096
    );
    let data = m.host_at(HOST + 0x1000, 4096);
    assert!(data[24..64].starts_with(b"InstCSD Daisyplus OpenSSD"));
    assert_eq!(&data[0..2], &0x1d1du16.to_le_bytes(), "vendor id");
}
