//! A command's data in host memory: the pages behind it and its PRPs
//! (PRP1 / PRP2 / PRP lists built with [`proto::prp::build`]), shared by the
//! transports whose host memory is modelled ([`board_sim::HostMemory`]).

use board_sim::HostMemory;
use proto::Sqe;
use proto::prp::{self, ENTRIES_PER_LIST, PAGE};

use super::{IoData, TransportError};

/// Host memory pages behind one command's data.
#[derive(Debug)]
pub(crate) struct Buffers {
    pub(crate) data_pages: Vec<u64>,
    pub(crate) list_pages: Vec<u64>,
    /// Bytes to copy back on completion (device-to-host commands).
    pub(crate) read_back: usize,
}

/// Places the request's data in scattered 4 KiB pages of `mem` and fills
/// in the PRPs (PRP1 / PRP2 of a command without data are left as given).
pub(crate) fn stage(
    mem: &mut HostMemory,
    sqe: &mut Sqe,
    data: &IoData,
) -> Result<Buffers, TransportError> {
    let len = data.len();
    let mut bufs = Buffers {
        data_pages: Vec::new(),
        list_pages: Vec::new(),
        read_back: 0,
    };
    if len == 0 {
        // No data phase: PRP1 keeps what the caller set (queue creation
        // puts the queue's base address there).
        return Ok(bufs);
    }
    sqe.prp1 = 0;
    sqe.prp2 = 0;
    if len > prp::MAX_LEN {
        return Err(TransportError::BadTransfer {
            len,
            reason: format!("above the {} byte PRP limit", prp::MAX_LEN),
        });
    }
    let plan = prp::layout(len, 0);
    bufs.data_pages = mem.alloc(len);
    bufs.list_pages = mem.alloc(plan.list_pages * PAGE);
    let staged = match data {
        IoData::ToDevice(bytes) => bufs
            .data_pages
            .iter()
            .zip(bytes.chunks(PAGE))
            .try_for_each(|(&page, chunk)| mem.write(page, chunk)),
        IoData::FromDevice(n) => {
            bufs.read_back = *n;
            Ok(())
        }
        IoData::None => Ok(()),
    };
    let pair = staged.map_err(TransportError::from).and_then(|()| {
        prp::build(
            len,
            0,
            &bufs.data_pages,
            &bufs.list_pages,
            |addr, list: &[u64; ENTRIES_PER_LIST]| {
                let bytes: Vec<u8> = list.iter().flat_map(|e| e.to_le_bytes()).collect();
                mem.write(addr, &bytes).map_err(TransportError::from)
            },
        )
    });
    match pair {
        Ok(pair) => {
            sqe.prp1 = pair.prp1;
            sqe.prp2 = pair.prp2;
            Ok(bufs)
        }
        Err(e) => {
            release(mem, &bufs);
            Err(e)
        }
    }
}

/// Copies device-to-host data out of host memory and frees the pages.
pub(crate) fn unstage(mem: &mut HostMemory, bufs: Buffers) -> Result<Vec<u8>, TransportError> {
    let mut out = vec![0u8; bufs.read_back];
    let copied = bufs
        .data_pages
        .iter()
        .zip(out.chunks_mut(PAGE))
        .try_for_each(|(&page, chunk)| mem.read(page, chunk));
    release(mem, &bufs);
    copied?;
    Ok(out)
}

/// Frees the command's pages.
pub(crate) fn release(mem: &mut HostMemory, bufs: &Buffers) {
    mem.free(&bufs.data_pages);
    mem.free(&bufs.list_pages);
}
