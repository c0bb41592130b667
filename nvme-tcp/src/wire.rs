//! Whole PDUs on a byte stream: read the 8-byte common header, refuse it
//! before buffering anything if its length is out of bounds, read the
//! rest, and check it with [`Pdu::decode`]; write a header, the data and
//! the data digest in one buffered write.

use std::io::{self, Read, Write};

use proto::tcp::{CommonHeader, Digests, Pdu, TcpError, crc32c};
use thiserror::Error;

/// A failure to read or write a PDU.
#[derive(Debug, Error)]
pub enum WireError {
    /// The peer closed the connection between PDUs.
    #[error("connection closed")]
    Closed,
    /// The stream failed (or closed inside a PDU).
    #[error("I/O: {0}")]
    Io(#[from] io::Error),
    /// The PDU is malformed.
    #[error("malformed PDU: {0}")]
    Pdu(TcpError),
    /// The PDU's header is sound but its data failed the data digest: a
    /// receiver may fail the one command the data belongs to and go on.
    #[error("data digest mismatch in a {} PDU ({len} bytes of data)", pdu.pdu_type())]
    DataDigest {
        /// The PDU (its data dropped).
        pdu: Box<Pdu>,
        /// Bytes of data it carried.
        len: usize,
    },
}

/// Reads one PDU of at most `max_plen` bytes; returns its header and data.
pub fn read_pdu<R: Read>(
    r: &mut R,
    digests: Digests,
    max_plen: u32,
) -> Result<(Pdu, Vec<u8>), WireError> {
    let mut ch = [0u8; CommonHeader::SIZE];
    let mut got = 0;
    while got < ch.len() {
        match r.read(&mut ch[got..]) {
            Ok(0) if got == 0 => return Err(WireError::Closed),
            Ok(0) => return Err(WireError::Io(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let h = CommonHeader::parse(&ch, max_plen).map_err(WireError::Pdu)?;
    let mut pdu = vec![0u8; h.plen as usize];
    pdu[..8].copy_from_slice(&ch);
    r.read_exact(&mut pdu[8..])?;
    let (p, data, data_ok) = Pdu::decode_with_data_digest(&pdu, digests).map_err(WireError::Pdu)?;
    if !data_ok {
        return Err(WireError::DataDigest {
            pdu: Box::new(p),
            len: data.len(),
        });
    }
    Ok((p, data.to_vec()))
}

/// Writes one PDU with `data` (and its digest when negotiated).
pub fn write_pdu<W: Write>(
    w: &mut W,
    pdu: &Pdu,
    digests: Digests,
    data: &[u8],
) -> Result<(), io::Error> {
    let h = pdu.encode_header(digests, data.len());
    let mut buf = Vec::with_capacity(h.as_bytes().len() + data.len() + 4);
    buf.extend_from_slice(h.as_bytes());
    buf.extend_from_slice(data);
    if pdu.data_digest_len(digests, data.len()) > 0 {
        buf.extend_from_slice(&crc32c(data).to_le_bytes());
    }
    w.write_all(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdus_cross_a_stream_and_bad_lengths_are_refused_early() {
        let d = Digests {
            header: true,
            data: true,
        };
        let mut buf = Vec::new();
        let p = Pdu::C2HData {
            cccid: 1,
            datao: 0,
            datal: 3,
            last: true,
            success: false,
        };
        write_pdu(&mut buf, &p, d, &[7, 8, 9]).unwrap();
        let mut r = &buf[..];
        let (q, data) = read_pdu(&mut r, d, 1 << 20).unwrap();
        assert_eq!((q, data), (p, vec![7, 8, 9]));
        assert!(matches!(
            read_pdu(&mut r, d, 1 << 20),
            Err(WireError::Closed)
        ));
        // A header claiming 1 GiB is refused before anything is buffered.
        let mut big = buf.clone();
        big[4..8].copy_from_slice(&(1u32 << 30).to_le_bytes());
        assert!(matches!(
            read_pdu(&mut &big[..], d, 1 << 20),
            Err(WireError::Pdu(TcpError::PduLength { .. }))
        ));
        // Cut inside a PDU: an I/O error, not a clean close.
        assert!(matches!(
            read_pdu(&mut &buf[..20], d, 1 << 20),
            Err(WireError::Io(_))
        ));
    }
}
