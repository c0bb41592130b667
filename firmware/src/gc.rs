//! When the FTL's garbage collection runs on the device ([`ftl::GcConfig`]
//! says how): in the background after a command has completed, one victim
//! while a die's free pool is under the low watermark (or one wear
//! levelling move); in the foreground before a host write, while a die is
//! down to its reserve, a bounded number of victims. The copies and
//! erases go through [`crate::flash::run_ftl_ops`] like any other flash
//! operation: the board times them and its fault injection reaches them.
//! Their virtual time is counted (`virtual_ns_gc` in the statistics log).
//!
//! GC runs only between commands, so a decode never sees a head half
//! moved: the FTL re-points a moved page in the call that queues its copy.

use ftl::Ftl;
use proto::Status;

use crate::counters::Counters;
use crate::flash::run_ftl_ops;
use crate::hal::{Clock, Nand};
use crate::state::State;

/// Foreground calls before a host write gives up (each up to
/// `max_victims` blocks): the write then fails with its own status.
const FOREGROUND_ROUNDS: u32 = 4;

fn timed<B: Nand + Clock>(
    board: &mut B,
    ftl: &mut Ftl,
    page: &mut [u8],
    counters: &mut Counters,
    step: impl FnOnce(&mut Ftl) -> Result<ftl::GcReport, ftl::FtlError>,
) -> Result<u32, Status> {
    let start = board.now_ns();
    let report = step(ftl).map_err(crate::error::ftl_status)?;
    run_ftl_ops(board, ftl, page, counters)?;
    counters.gc_ns += board.now_ns().saturating_sub(start);
    Ok(report.victims)
}

/// One background step if the FTL wants one (after a command, or while
/// idle); true if it collected a block (more may be wanted). A failure is
/// logged and ends the step: the command that ran before it is done.
pub(crate) fn background<B: Nand + Clock>(board: &mut B, st: &mut State) -> bool {
    let State {
        ftl,
        scratch,
        counters,
        ..
    } = st;
    if !ftl.gc_wanted() {
        return false;
    }
    match timed(board, ftl, &mut scratch.page, counters, Ftl::gc_step) {
        Ok(victims) => victims > 0,
        Err(_e) => {
            log_debug!("background gc: status {=u16:#x}", _e.to_field());
            false
        }
    }
}

/// Foreground GC before a host write: while a die is down to its
/// reserve and victims are found, at most [`FOREGROUND_ROUNDS`] calls.
pub(crate) fn foreground<B: Nand + Clock>(
    board: &mut B,
    ftl: &mut Ftl,
    page: &mut [u8],
    counters: &mut Counters,
) -> Result<(), Status> {
    for _ in 0..FOREGROUND_ROUNDS {
        if !ftl.gc_critical() {
            break;
        }
        if timed(board, ftl, page, counters, Ftl::gc_urgent)? == 0 {
            break;
        }
    }
    Ok(())
}

/// Foreground GC after a host write found no room (`NoSpace` with nothing
/// changed): one call; true if it collected anything (worth a retry).
pub(crate) fn make_room<B: Nand + Clock>(
    board: &mut B,
    ftl: &mut Ftl,
    page: &mut [u8],
    counters: &mut Counters,
) -> Result<bool, Status> {
    Ok(timed(board, ftl, page, counters, Ftl::gc_make_room)? > 0)
}
