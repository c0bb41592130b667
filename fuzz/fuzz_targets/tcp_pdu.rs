//! NVMe/TCP PDUs and fabrics commands: the decoder never panics, and a
//! PDU it accepts encodes back to the same bytes (header and data digests
//! on, so nothing is ignored).
#![no_main]

use libfuzzer_sys::fuzz_target;
use proto::Sqe;
use proto::fabrics::{ConnectData, FabricsCmd};
use proto::tcp::{CommonHeader, Digests, Pdu, crc32c};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, bytes)) = data.split_first() else {
        return;
    };
    let digests = Digests::from_byte(sel & 3);
    if bytes.len() >= 8 {
        let mut ch = [0u8; 8];
        ch.copy_from_slice(&bytes[..8]);
        let _ = CommonHeader::parse(&ch, 1 << 20);
    }
    if let Ok((pdu, payload)) = Pdu::decode(bytes, digests) {
        let digested = !matches!(
            pdu,
            Pdu::IcReq { .. } | Pdu::IcResp { .. } | Pdu::TermReq { .. }
        );
        if digested && digests.header && (digests.data || payload.is_empty()) {
            let mut again = pdu
                .encode_header(digests, payload.len())
                .as_bytes()
                .to_vec();
            again.extend_from_slice(payload);
            if pdu.data_digest_len(digests, payload.len()) > 0 {
                again.extend_from_slice(&crc32c(payload).to_le_bytes());
            }
            assert_eq!(again, bytes, "{pdu:?}");
        }
    }
    if let Ok(sqe) = Sqe::from_bytes(bytes.get(..64).unwrap_or(bytes)) {
        let _ = FabricsCmd::parse(&sqe);
    }
    let _ = ConnectData::from_bytes(bytes.get(..1024).unwrap_or(bytes));
});
