//! The plain-storage backend against an in-memory NVMe namespace (a
//! stand-in that serves standard Read and Write by LBA, nothing else):
//! outputs equal the host reference's on the same fp16 values, the KV
//! really comes back from the namespace, and running out of space or
//! reserved tokens is a clean error.

use std::collections::VecDeque;

use attention::shape::Method;
use host_driver::backend::{
    AttentionBackend, BackendError, DecodeStep, HostDense, ModelShape, SsdOffload,
};
use host_driver::transport::{DeviceTime, IoData, IoRequest, IoResult, Transport, TransportError};
use proto::{Cqe, Status};

/// A namespace of `blocks` × 512 B in memory.
struct RamNamespace {
    data: Vec<u8>,
    ready: VecDeque<(u16, IoResult)>,
    reads: usize,
}

impl RamNamespace {
    fn new(blocks: usize) -> Self {
        Self {
            data: vec![0; blocks * 512],
            ready: VecDeque::new(),
            reads: 0,
        }
    }
}

impl Transport for RamNamespace {
    /// Identify Controller (model, MDTS 5 = 128 KiB, no InstCSD block)
    /// and Identify Namespace (512 B blocks); nothing else.
    fn admin(&mut self, req: IoRequest) -> Result<IoResult, TransportError> {
        let mut data = vec![0u8; 4096];
        let status = match (req.sqe.opcode().0, req.sqe.cdw10) {
            (0x06, 1) => {
                data[24..24 + 12].copy_from_slice(b"RAM NVMe 512");
                data[77] = 5;
                Status::SUCCESS
            }
            (0x06, 0) => {
                let blocks = (self.data.len() / 512) as u64;
                data[0..8].copy_from_slice(&blocks.to_le_bytes());
                data[130] = 9;
                Status::SUCCESS
            }
            _ => Status::INVALID_OPCODE,
        };
        Ok(IoResult {
            cqe: Cqe::new(0, 0, 0, status, 0, false),
            data,
        })
    }

    fn submit(&mut self, req: IoRequest) -> Result<u16, TransportError> {
        let lba = u64::from(req.sqe.cdw10) | u64::from(req.sqe.cdw11) << 32;
        let len = (req.sqe.cdw12 as usize + 1) * 512;
        let at = lba as usize * 512;
        let (status, data) = if at + len > self.data.len() || len != req.data.len() {
            (Status::INVALID_FIELD, Vec::new())
        } else {
            match (req.sqe.opcode().0, req.data) {
                (0x01, IoData::ToDevice(b)) => {
                    self.data[at..at + len].copy_from_slice(&b);
                    (Status::SUCCESS, Vec::new())
                }
                (0x02, IoData::FromDevice(_)) => {
                    self.reads += 1;
                    (Status::SUCCESS, self.data[at..at + len].to_vec())
                }
                _ => (Status::INVALID_FIELD, Vec::new()),
            }
        };
        let cid = self.ready.len() as u16;
        let cqe = Cqe::new(cid, 1, 0, status, 0, false);
        self.ready.push_back((cid, IoResult { cqe, data }));
        Ok(cid)
    }

    fn reap(&mut self) -> Result<(u16, IoResult), TransportError> {
        self.ready
            .pop_front()
            .ok_or(TransportError::NothingInFlight)
    }

    fn in_flight(&self) -> usize {
        self.ready.len()
    }

    fn device_time(&self) -> Option<DeviceTime> {
        None
    }
}

fn data(seed: u64, n: usize) -> Vec<f32> {
    let mut r = attention::testdata::SplitMix64::new(seed);
    (0..n).map(|_| r.normal()).collect()
}

#[test]
fn offload_matches_the_host_reference() {
    let shape = ModelShape {
        layers: 2,
        q_heads: 6,
        kv_heads: 2,
        head_dim: 64,
    };
    // 4 KiB per transfer: the decode's reads split into many commands.
    let mut ssd = SsdOffload::new(RamNamespace::new(1 << 16), 512, 1 << 16, 4096, 512).unwrap();
    let mut host = HostDense::new();
    let prompt = 100;
    for b in [&mut ssd as &mut dyn AttentionBackend, &mut host] {
        b.open(7, shape).unwrap();
        for layer in 0..2 {
            let n = shape.kv_heads * prompt * shape.head_dim;
            b.append(
                7,
                layer,
                &data(layer as u64, n),
                &data(10 + layer as u64, n),
            )
            .unwrap();
        }
    }
    let mut worst = 0f32;
    for step in 0..20u64 {
        for layer in 0..2 {
            let q = data(100 + step, shape.q_heads * shape.head_dim);
            let kn = data(200 + step, shape.kv_heads * shape.head_dim);
            let vn = data(300 + step, shape.kv_heads * shape.head_dim);
            let method = match step % 3 {
                0 => Method::Dense,
                1 => Method::SparF(attention::shape::SparseParams {
                    r: 16,
                    k: 24,
                    local: 6,
                }),
                _ => Method::Local { window: 32 },
            };
            let st = [DecodeStep {
                seq: 7,
                layer,
                q: &q,
                kv_new: Some((&kn, &vn)),
                method,
            }];
            let a = ssd.decode(&st).unwrap();
            let b = host.decode(&st).unwrap();
            for (x, y) in a[0].iter().zip(&b[0]) {
                worst = worst.max((x - y).abs());
            }
        }
    }
    assert!(worst < 1e-4, "worst |ssd − host| = {worst}");
    // Every decode read K and V of its layer back from the namespace.
    assert!(ssd.last_read_bytes > 0);
    assert!(ssd.device_mut().reads > 40);
    ssd.close(7).unwrap();
    assert!(matches!(
        ssd.close(7),
        Err(BackendError::UnknownSequence(7))
    ));
}

#[test]
fn offload_space_and_capacity_errors() {
    let shape = ModelShape {
        layers: 1,
        q_heads: 1,
        kv_heads: 1,
        head_dim: 8,
    };
    // 16 tokens × 16 B = 256 B: one block per extent, two per sequence.
    let mut ssd = SsdOffload::new(RamNamespace::new(4), 512, 4, 4096, 16).unwrap();
    ssd.open(1, shape).unwrap();
    ssd.open(2, shape).unwrap();
    assert!(
        matches!(ssd.open(3, shape), Err(BackendError::Storage(_))),
        "namespace full"
    );
    assert!(matches!(
        ssd.open(1, shape),
        Err(BackendError::SequenceExists(1))
    ));
    let kv = vec![0.5f32; 17 * 8];
    assert!(
        ssd.append(1, 0, &kv, &kv).is_err(),
        "17 tokens of 16 reserved"
    );
    ssd.close(2).unwrap();
    ssd.open(3, shape).unwrap();
    assert!(SsdOffload::new(RamNamespace::new(4), 500, 4, 4096, 16).is_err());
}

#[test]
fn probe_tells_instcsd_from_plain_storage() {
    use host_driver::csd::{Drive, probe};
    use host_driver::transport::SimTransport;
    match probe(SimTransport::new(4096).unwrap()).unwrap() {
        Drive::InstCsd(csd) => assert!(csd.info().caps.channels > 0),
        Drive::Plain(..) => panic!("the simulated board is an InstCSD"),
    }
    match probe(RamNamespace::new(2048)).unwrap() {
        Drive::Plain(_, p) => {
            assert_eq!((p.lba_size, p.lbas, p.max_transfer), (512, 2048, 128 << 10));
            assert_eq!(p.model, "RAM NVMe 512");
        }
        Drive::InstCsd(_) => panic!("a plain namespace"),
    }
}

/// SparF reads all of K but only the blocks of the chosen tokens' value
/// rows: fewer bytes than dense.
#[test]
fn sparf_reads_less_than_dense() {
    let shape = ModelShape {
        layers: 1,
        q_heads: 3,
        kv_heads: 1,
        head_dim: 64,
    };
    let mut ssd = SsdOffload::new(RamNamespace::new(1 << 14), 512, 1 << 14, 1 << 20, 4096).unwrap();
    ssd.open(1, shape).unwrap();
    let n = 2048 * 64;
    ssd.append(1, 0, &data(1, n), &data(2, n)).unwrap();
    let q = data(3, 3 * 64);
    let mut read = |method| {
        ssd.decode(&[DecodeStep {
            seq: 1,
            layer: 0,
            q: &q,
            kv_new: None,
            method,
        }])
        .unwrap();
        ssd.last_read_bytes
    };
    let dense = read(Method::Dense);
    let sparf = read(Method::SparF(attention::shape::SparseParams {
        r: 8,
        k: 128,
        local: 32,
    }));
    assert_eq!(dense, 2 * 2048 * 64 * 2, "dense reads K and V");
    assert!(
        sparf < dense * 3 / 4,
        "SparF read {sparf} of dense's {dense}"
    );
    assert!(sparf >= 2048 * 64 * 2, "SparF reads all of K");
}
