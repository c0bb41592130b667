//! A command's data in host memory: the pages behind it and its PRPs
//! (PRP1 / PRP2 / PRP lists built with [`proto::prp::build`]), shared by the
//! transports whose host memory is modelled ([`board_sim::HostMemory`]).

use board_sim::{HostMemory, SimCsd};
use proto::Sqe;
use proto::prp::{self, ENTRIES_PER_LIST, PAGE};

use super::{IoData, TransportError};
use crate::dma::{GpuPath, Placement};

/// Refuses a transfer the PRPs cannot describe.
fn prp_limit(len: usize) -> Result<(), TransportError> {
    if len > prp::MAX_LEN {
        return Err(TransportError::BadTransfer {
            len,
            reason: format!("above the {} byte PRP limit", prp::MAX_LEN),
        });
    }
    Ok(())
}

/// Host memory pages behind one command's data.
#[derive(Debug)]
pub(crate) struct Buffers {
    pub(crate) data_pages: Vec<u64>,
    pub(crate) list_pages: Vec<u64>,
    /// Bytes to copy back on completion (device-to-host commands).
    pub(crate) read_back: usize,
    /// GPU placement: the GPU buffer, and the contiguous host bounce
    /// buffer when the path is a bounce.
    pub(crate) gpu: Option<GpuStage>,
}

/// A command's data in GPU memory.
#[derive(Debug)]
pub(crate) struct GpuStage {
    base: u64,
    len: usize,
    bounce: Option<u64>,
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
        gpu: None,
    };
    if len == 0 {
        // No data phase: PRP1 keeps what the caller set (queue creation
        // puts the queue's base address there).
        return Ok(bufs);
    }
    sqe.prp1 = 0;
    sqe.prp2 = 0;
    prp_limit(len)?;
    let plan = prp::layout(len, 0);
    bufs.data_pages = mem.alloc(len);
    bufs.list_pages = mem.alloc(plan.list_pages * PAGE);
    fill(mem, sqe, data, bufs)
}

/// Writes the data (host to device) into `bufs.data_pages` and the PRPs
/// (lists in `bufs.list_pages`) into `sqe`; frees everything on failure.
fn fill(
    mem: &mut HostMemory,
    sqe: &mut Sqe,
    data: &IoData,
    mut bufs: Buffers,
) -> Result<Buffers, TransportError> {
    let len = data.len();
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
    if let Some(g) = &bufs.gpu {
        mem.free_range(g.base, g.len);
        if let Some(b) = g.bounce {
            mem.free_range(b, g.len);
        }
    } else {
        mem.free(&bufs.data_pages);
    }
    mem.free(&bufs.list_pages);
}

/// [`stage`] on the simulated board with the data placed as `placement`
/// says. GPU data is written into the board's GPU window (standing for the
/// GPU that produced it); peer to peer, the PRPs point there; with a
/// bounce, the board's copy engine first copies it into a contiguous host
/// buffer (virtual time charged) and the PRPs point at that.
pub(crate) fn stage_on(
    dev: &mut SimCsd,
    sqe: &mut Sqe,
    data: &IoData,
    placement: Placement,
) -> Result<Buffers, TransportError> {
    let Placement::Gpu(path) = placement else {
        return stage(dev.host_memory(), sqe, data);
    };
    let len = data.len();
    if len == 0 {
        return stage(dev.host_memory(), sqe, data);
    }
    prp_limit(len)?;
    sqe.prp1 = 0;
    sqe.prp2 = 0;
    let mem = dev.host_memory();
    let base = mem.alloc_gpu(len);
    let bounce = (path == GpuPath::Bounce).then(|| mem.alloc_contiguous(len));
    let device_side = bounce.unwrap_or(base);
    let plan = prp::layout(len, 0);
    let bufs = Buffers {
        data_pages: (0..len.div_ceil(PAGE))
            .map(|i| device_side + (i * PAGE) as u64)
            .collect(),
        list_pages: mem.alloc(plan.list_pages * PAGE),
        read_back: 0,
        gpu: Some(GpuStage { base, len, bounce }),
    };
    if let IoData::ToDevice(bytes) = data {
        // The GPU's buffer holds the data; a bounce copies it out first.
        let written = dev.host_memory().write(base, bytes);
        let copied = written.and_then(|()| match bounce {
            Some(b) => dev.gpu_copy(base, b, len),
            None => Ok(()),
        });
        if let Err(e) = copied {
            release(dev.host_memory(), &bufs);
            return Err(e.into());
        }
    }
    // The data is in place: `fill` only builds the PRPs.
    let mut bufs = fill(dev.host_memory(), sqe, &IoData::FromDevice(len), bufs)?;
    bufs.read_back = if matches!(data, IoData::FromDevice(_)) {
        len
    } else {
        0
    };
    Ok(bufs)
}

/// [`unstage`] on the simulated board: GPU data is read from the GPU
/// window, after the bounce copy back when there is one.
pub(crate) fn unstage_on(dev: &mut SimCsd, bufs: Buffers) -> Result<Vec<u8>, TransportError> {
    let Some(g) = &bufs.gpu else {
        return unstage(dev.host_memory(), bufs);
    };
    let mut out = vec![0u8; bufs.read_back];
    let r = if out.is_empty() {
        Ok(())
    } else {
        let copied = match g.bounce {
            Some(b) => dev.gpu_copy(b, g.base, g.len),
            None => Ok(()),
        };
        copied.and_then(|()| dev.host_memory().read(g.base, &mut out))
    };
    release(dev.host_memory(), &bufs);
    r?;
    Ok(out)
}
