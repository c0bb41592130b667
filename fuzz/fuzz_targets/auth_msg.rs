//! DH-HMAC-CHAP authentication messages: the parser never panics, and a
//! message it accepts encodes back to the same bytes (a Negotiate to the
//! same message: unknown identifiers are dropped).
#![no_main]

use libfuzzer_sys::fuzz_target;
use proto::auth::AuthMessage;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = AuthMessage::parse(data) {
        let mut out = vec![0u8; m.encoded_len()];
        let n = m.encode(&mut out).expect("an accepted message encodes");
        assert_eq!(n, out.len());
        let again = AuthMessage::parse(&out).expect("its encoding parses");
        assert_eq!(again, m);
        if !matches!(m, AuthMessage::Negotiate { .. }) {
            assert_eq!(out.as_slice(), data);
        }
    }
});
