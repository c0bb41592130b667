//! Moving a command's data: walk its PRPs (fetching PRP lists from host
//! memory) and DMA each segment.

use crate::hal::HostInterface;
use proto::prp::PrpWalker;
use proto::{ProtoError, Sqe, Status};

/// Why a transfer failed.
enum DmaFail {
    Prp(ProtoError),
    Host,
}

impl From<ProtoError> for DmaFail {
    fn from(e: ProtoError) -> Self {
        Self::Prp(e)
    }
}

fn status(f: DmaFail) -> Status {
    match f {
        DmaFail::Prp(ProtoError::PrpOffset { .. }) => Status::PRP_OFFSET_INVALID,
        DmaFail::Prp(_) => Status::INVALID_FIELD,
        DmaFail::Host => Status::DATA_TRANSFER_ERROR,
    }
}

/// Walks the PRPs of `sqe` for `len` bytes, calling `each(board, host
/// address, offset in the transfer, chunk length)`.
fn walk<B: HostInterface>(
    board: &mut B,
    sqe: &Sqe,
    len: usize,
    max: usize,
    mut each: impl FnMut(&mut B, u64, usize, usize) -> Result<(), DmaFail>,
) -> Result<(), Status> {
    let mut walker =
        PrpWalker::with_limit(sqe.prp1, sqe.prp2, len, max).map_err(|e| status(DmaFail::Prp(e)))?;
    let mut offset = 0;
    loop {
        let seg = walker.next_segment(|addr, entries: &mut [u64]| {
            let mut raw = [0u8; 8 * 32];
            if entries.len() > 32 {
                return Err(DmaFail::Host);
            }
            let bytes = &mut raw[..entries.len() * 8];
            board.dma_read(addr, bytes).map_err(|_| DmaFail::Host)?;
            for (e, c) in entries.iter_mut().zip(bytes.chunks_exact(8)) {
                let mut w = [0u8; 8];
                w.copy_from_slice(c);
                *e = u64::from_le_bytes(w);
            }
            Ok::<(), DmaFail>(())
        });
        match seg {
            Ok(Some((addr, n))) => {
                each(board, addr, offset, n).map_err(status)?;
                offset += n;
            }
            Ok(None) => return Ok(()),
            Err(e) => return Err(status(e)),
        }
    }
}

/// Copies the command's host→device data into `out` (its whole length).
pub(crate) fn from_host<B: HostInterface>(
    board: &mut B,
    sqe: &Sqe,
    out: &mut [u8],
    max: usize,
) -> Result<(), Status> {
    let len = out.len();
    walk(board, sqe, len, max, |b, addr, off, n| {
        b.dma_read(addr, &mut out[off..off + n])
            .map_err(|_| DmaFail::Host)
    })
}

/// Copies `data` to the command's device→host buffer.
pub(crate) fn to_host<B: HostInterface>(
    board: &mut B,
    sqe: &Sqe,
    data: &[u8],
    max: usize,
) -> Result<(), Status> {
    walk(board, sqe, data.len(), max, |b, addr, off, n| {
        b.dma_write(addr, &data[off..off + n])
            .map_err(|_| DmaFail::Host)
    })
}
