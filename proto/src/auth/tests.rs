use super::*;
use proptest::prelude::*;
use std::vec;
use std::vec::Vec;

fn round_trip(m: AuthMessage<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; m.encoded_len()];
    assert_eq!(m.encode(&mut buf).unwrap(), buf.len());
    assert_eq!(AuthMessage::parse(&buf).unwrap(), m, "{m:?}");
    buf
}

#[test]
fn every_message_round_trips_at_the_kernels_offsets() {
    let neg = round_trip(AuthMessage::Negotiate {
        t_id: 7,
        sc_c: 0,
        hashes: IdSet(0b1110),
        groups: IdSet(0b11_1111),
    });
    // Header, then one descriptor: authid, rsvd, halen, dhlen, hash ids
    // from byte 4, group ids from byte 34.
    assert_eq!(&neg[..8], &[0, 0, 0, 0, 7, 0, 0, 1]);
    assert_eq!(&neg[8..12], &[PROTOCOL_DHCHAP, 0, 3, 6]);
    assert_eq!(&neg[12..15], &[1, 2, 3]);
    assert_eq!(&neg[42..48], &[0, 1, 2, 3, 4, 5]);
    let (cval, dhv) = ([0xAB; 48], [0x11; 384]);
    let ch = round_trip(AuthMessage::Challenge {
        t_id: 7,
        hash: HashId::Sha384,
        group: DhGroup::Ffdhe3072,
        seqnum: 0x0102_0304,
        cval: &cval,
        dhv: &dhv,
    });
    assert_eq!(
        &ch[..16],
        &[1, 1, 0, 0, 7, 0, 48, 0, 2, 2, 0x80, 1, 4, 3, 2, 1]
    );
    let (r, c) = ([0x22; 32], [0x33; 32]);
    let rep = round_trip(AuthMessage::Reply {
        t_id: 7,
        seqnum: 9,
        rval: &r,
        cval: Some(&c),
        dhv: &[],
    });
    assert_eq!(&rep[6..12], &[32, 0, 1, 0, 0, 0]);
    round_trip(AuthMessage::Reply {
        t_id: 7,
        seqnum: 0,
        rval: &r,
        cval: None,
        dhv: &[5; 256],
    });
    round_trip(AuthMessage::Success1 {
        t_id: 7,
        hl: 32,
        rval: Some(&r),
    });
    round_trip(AuthMessage::Success1 {
        t_id: 7,
        hl: 32,
        rval: None,
    });
    assert_eq!(round_trip(AuthMessage::Success2 { t_id: 7 }).len(), 16);
    let f = round_trip(AuthMessage::Failure {
        t_id: 7,
        from_host: false,
        rescode: REASON_FAILED,
        explanation: explanation::INCORRECT_MESSAGE,
    });
    assert_eq!(f, [0, ID_FAILURE1, 0, 0, 7, 0, 1, 7]);
}

#[test]
fn malformed_messages_are_refused() {
    let (cval, r) = ([1u8; 32], [2u8; 32]);
    let good = round_trip(AuthMessage::Challenge {
        t_id: 1,
        hash: HashId::Sha256,
        group: DhGroup::Null,
        seqnum: 1,
        cval: &cval,
        dhv: &[],
    });
    let mut cases: Vec<Vec<u8>> = Vec::new();
    for (at, v) in [
        (0, 9u8),
        (1, 0x77),
        (2, 1),
        (6, 31),
        (7, 1),
        (8, 4),
        (9, 6),
        (10, 1),
    ] {
        let mut b = good.clone();
        b[at] = v;
        cases.push(b);
    }
    cases.push(good[..good.len() - 1].to_vec());
    cases.push([good.as_slice(), &[0]].concat());
    cases.push(vec![0; 5]);
    // A reply with cvalid 0 but a challenge, and one with cvalid 2.
    let rep = round_trip(AuthMessage::Reply {
        t_id: 1,
        seqnum: 0,
        rval: &r,
        cval: None,
        dhv: &[],
    });
    let mut b = rep.clone();
    b[16 + 32] = 1;
    cases.push(b);
    let mut b = rep.clone();
    b[8] = 2;
    cases.push(b);
    // A negotiate without descriptors, or with a list too long.
    let neg = round_trip(AuthMessage::Negotiate {
        t_id: 1,
        sc_c: 0,
        hashes: IdSet(2),
        groups: IdSet(1),
    });
    let mut b = neg.clone();
    b[7] = 0;
    cases.push(b);
    let mut b = neg.clone();
    b[10] = 31;
    cases.push(b);
    let mut b = neg.clone();
    b[8] = 2; // another protocol only
    cases.push(b);
    for c in &cases {
        assert!(AuthMessage::parse(c).is_err(), "{c:?}");
    }
    // Encoding checks lengths too.
    let short = AuthMessage::Challenge {
        t_id: 1,
        hash: HashId::Sha512,
        group: DhGroup::Null,
        seqnum: 1,
        cval: &cval,
        dhv: &[],
    };
    assert!(short.encode(&mut [0u8; 128]).is_err());
    assert!(
        AuthMessage::Success2 { t_id: 1 }
            .encode(&mut [0u8; 8])
            .is_err()
    );
}

proptest! {
    /// Arbitrary bytes never panic the parser, and whatever parses
    /// encodes back to the same bytes (nothing ignored but unknown ids
    /// in a negotiate).
    #[test]
    fn arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..600)) {
        if let Ok(m) = AuthMessage::parse(&b) {
            let mut out = vec![0u8; m.encoded_len()];
            m.encode(&mut out).unwrap();
            prop_assert_eq!(AuthMessage::parse(&out).unwrap(), m);
            if !matches!(m, AuthMessage::Negotiate { .. }) {
                prop_assert_eq!(out, b);
            }
        }
    }
}
