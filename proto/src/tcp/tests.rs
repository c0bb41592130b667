use super::*;
use crate::{Opcode, Status};
use proptest::prelude::*;
use std::vec;
use std::vec::Vec;

fn encode(p: &Pdu, digests: Digests, data: &[u8]) -> Vec<u8> {
    let mut v = p.encode_header(digests, data.len()).as_bytes().to_vec();
    v.extend_from_slice(data);
    if p.data_digest_len(digests, data.len()) > 0 {
        v.extend_from_slice(&crc32c(data).to_le_bytes());
    }
    v
}

fn samples() -> Vec<(Pdu, Vec<u8>)> {
    let mut sqe = Sqe::new(Opcode(0x81));
    sqe.cdw10 = 0xdead_beef;
    sqe.set_cid(42);
    vec![
        (
            Pdu::IcReq {
                pfv: 0,
                hpda: 0,
                digests: Digests {
                    header: true,
                    data: false,
                },
                maxr2t: 0,
            },
            vec![],
        ),
        (
            Pdu::IcResp {
                pfv: 0,
                cpda: 0,
                digests: Digests::default(),
                maxdata: 131072,
            },
            vec![],
        ),
        (Pdu::CapsuleCmd(sqe), vec![]),
        (
            Pdu::CapsuleCmd(sqe),
            (0..1024u32).map(|i| i as u8).collect(),
        ),
        (
            Pdu::CapsuleResp(Cqe::new(42, 1, 3, Status::SEQ_NOT_OPEN, 7, false)),
            vec![],
        ),
        (
            Pdu::H2CData {
                cccid: 42,
                ttag: 3,
                datao: 4096,
                datal: 100,
                last: true,
            },
            vec![9; 100],
        ),
        (
            Pdu::C2HData {
                cccid: 42,
                datao: 0,
                datal: 5,
                last: true,
                success: false,
            },
            vec![1, 2, 3, 4, 5],
        ),
        (
            Pdu::R2T {
                cccid: 42,
                ttag: 3,
                r2to: 0,
                r2tl: 65536,
            },
            vec![],
        ),
        (
            Pdu::TermReq {
                from_host: false,
                fes: FES_INVALID_HEADER,
                fei: 2,
            },
            vec![],
        ),
    ]
}

const ALL: [Digests; 4] = [
    Digests {
        header: false,
        data: false,
    },
    Digests {
        header: true,
        data: false,
    },
    Digests {
        header: false,
        data: true,
    },
    Digests {
        header: true,
        data: true,
    },
];

#[test]
fn every_pdu_round_trips_with_every_digest_setting() {
    for d in ALL {
        for (p, data) in samples() {
            let bytes = encode(&p, d, &data);
            let (back, got) = Pdu::decode(&bytes, d).unwrap_or_else(|e| panic!("{p:?} {d:?}: {e}"));
            assert_eq!(back, p, "{d:?}");
            assert_eq!(got, &data[..]);
            let mut ch = [0u8; 8];
            ch.copy_from_slice(&bytes[..8]);
            let h = CommonHeader::parse(&ch, 1 << 20).unwrap();
            assert_eq!(h.plen as usize, bytes.len());
        }
    }
}

#[test]
fn crc32c_matches_the_known_check_value() {
    // The CRC-32C check value of "123456789" (RFC 3720, appendix B.4).
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn digests_are_checked() {
    let d = ALL[3];
    for (p, data) in samples() {
        if matches!(
            p,
            Pdu::IcReq { .. } | Pdu::IcResp { .. } | Pdu::TermReq { .. }
        ) {
            continue;
        }
        let mut bytes = encode(&p, d, &data);
        let hlen = usize::from(bytes[2]);
        bytes[hlen - 1] ^= 0x40;
        assert_eq!(Pdu::decode(&bytes, d), Err(TcpError::HeaderDigest), "{p:?}");
        if !data.is_empty() {
            let mut bytes = encode(&p, d, &data);
            let n = bytes.len();
            bytes[n - 5] ^= 1;
            assert_eq!(Pdu::decode(&bytes, d), Err(TcpError::DataDigest), "{p:?}");
            // Kept: the same header, the data as received, flagged.
            let (q, got, ok) = Pdu::decode_with_data_digest(&bytes, d).unwrap();
            assert_eq!((q, ok, got.len()), (p, false, data.len()), "{p:?}");
            let good = encode(&p, d, &data);
            assert_eq!(
                Pdu::decode_with_data_digest(&good, d).map(|(_, _, ok)| ok),
                Ok(true)
            );
        }
        // A PDU without the negotiated header digest is refused.
        let plain = encode(&p, ALL[0], &data);
        assert!(Pdu::decode(&plain, d).is_err(), "{p:?}");
    }
}

#[test]
fn bad_headers_are_named() {
    let ok = encode(&samples()[4].0, ALL[0], &[]);
    let mut t = ok.clone();
    t[0] = 0x08;
    assert_eq!(Pdu::decode(&t, ALL[0]), Err(TcpError::UnknownType(8)));
    let mut t = ok.clone();
    t[2] = 72;
    assert!(matches!(
        Pdu::decode(&t, ALL[0]),
        Err(TcpError::HeaderLength { .. })
    ));
    let mut ch = [0u8; 8];
    ch.copy_from_slice(&ok[..8]);
    ch[4..8].copy_from_slice(&(1u32 << 30).to_le_bytes());
    assert!(matches!(
        CommonHeader::parse(&ch, 1 << 20),
        Err(TcpError::PduLength { .. })
    ));
    ch[4..8].copy_from_slice(&10u32.to_le_bytes());
    assert!(matches!(
        CommonHeader::parse(&ch, 1 << 20),
        Err(TcpError::PduLength { .. })
    ));
    // DATAL must match the carried bytes.
    let (p, data) = samples()[5].clone();
    let mut t = encode(&p, ALL[0], &data);
    t[16] = 99;
    assert!(matches!(
        Pdu::decode(&t, ALL[0]),
        Err(TcpError::DataLength { .. })
    ));
    // SUCCESS without LAST_PDU.
    let (p, data) = samples()[6].clone();
    let mut t = encode(&p, ALL[0], &data);
    t[1] = FLAG_SUCCESS;
    assert!(matches!(
        Pdu::decode(&t, ALL[0]),
        Err(TcpError::Flags { .. })
    ));
    // Data on a response capsule.
    let mut t = ok.clone();
    t.extend_from_slice(&[0; 4]);
    t[3] = 24;
    let n = t.len() as u32;
    t[4..8].copy_from_slice(&n.to_le_bytes());
    assert!(Pdu::decode(&t, ALL[0]).is_err());
}

proptest! {
    /// Any bytes either decode or fail with an error: never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), d in 0usize..4) {
        let _ = Pdu::decode(&bytes, ALL[d]);
        if bytes.len() >= 8 {
            let mut ch = [0u8; 8];
            ch.copy_from_slice(&bytes[..8]);
            let _ = CommonHeader::parse(&ch, 4096);
        }
    }

    /// A digested PDU with one bit flipped is refused, or decodes to a PDU
    /// whose encoding is those very bytes: nothing changes unnoticed.
    #[test]
    fn flipped_bytes_are_caught(i in 2usize..8, at in any::<usize>(), bit in 0u8..8) {
        let (p, data) = samples()[i].clone();
        let d = ALL[3];
        let mut bytes = encode(&p, d, &data);
        let at = at % bytes.len();
        bytes[at] ^= 1 << bit;
        if let Ok((q, got)) = Pdu::decode(&bytes, d) {
            let again = encode(&q, d, got);
            prop_assert_eq!(again, bytes);
        }
    }
}
