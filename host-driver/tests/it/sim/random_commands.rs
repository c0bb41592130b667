//! Arbitrary vendor command streams: every command completes with a
//! status (no panic, no hang, no fatal controller), and afterwards the
//! device still answers a valid open/append/decode exactly.

use super::{Problem, device};
use attention::shape::Method;
use host_driver::transport::{IoData, IoRequest, Transport};
use proptest::prelude::*;
use proto::{Opcode, Sqe};

fn command() -> impl Strategy<Value = (u8, [u32; 6], u16)> {
    (
        prop_oneof![
            Just(0x80u8),
            Just(0x81),
            Just(0x84),
            Just(0x85),
            Just(0x86),
            any::<u8>()
        ],
        prop::array::uniform6(prop_oneof![
            any::<u32>(),
            0u32..4,
            0u32..4096,
            Just(0x0103_0001u32),
            Just(0x0001_0040u32)
        ]),
        0u16..9000,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_command_completes_and_the_device_keeps_serving(
        cmds in prop::collection::vec(command(), 1..40)
    ) {
        let mut dev = device(4096);
        let p = Problem::structured(3, 1, 3, 50, 64);
        dev.open(1000, p.shape(1)).unwrap();
        dev.append(1000, 0, 0, &p.k, &p.v).unwrap();
        for (op, dw, len) in cmds {
            let mut sqe = Sqe::new(Opcode(op));
            sqe.nsid = 1;
            sqe.cdw10 = dw[0];
            sqe.cdw11 = dw[1];
            sqe.cdw12 = dw[2];
            sqe.cdw13 = dw[3];
            sqe.cdw14 = dw[4];
            sqe.cdw15 = dw[5];
            let len = usize::from(len);
            let data = match op & 3 {
                1 if len > 0 => IoData::ToDevice(vec![0x3c; len]),
                2 if len > 0 => IoData::FromDevice(len),
                _ => IoData::None,
            };
            let t = dev.transport_mut();
            let cid = t.submit(IoRequest { sqe, data }).unwrap();
            let (got, _) = t.reap().unwrap();
            prop_assert_eq!(got, cid);
            prop_assert!(!t.device().fatal());
        }
        // Sequence 1000 may have been appended to or closed by the random
        // stream: use a fresh one.
        dev.open(2000, p.shape(1)).unwrap();
        dev.append(2000, 0, 0, &p.k, &p.v).unwrap();
        let t = dev.submit_decode(2000, 0, 49, &p.q, None, Method::Dense).unwrap();
        prop_assert_eq!(dev.fetch(t).unwrap().raw, p.engine(Method::Dense));
    }
}
