//! The admin commands the board serves itself, because they program the
//! controller rather than the device core: Create/Delete I/O Submission
//! and Completion Queue (01h/00h, 05h/04h), Set/Get Features (09h/0Ah)
//! and Asynchronous Event Request (0Ch). Everything else goes to the
//! firmware core, as on the simulated board's queue engine.
//!
//! Limits are the controller's: 8 I/O queue pairs, at most 256 entries a
//! queue (QSIZE is an 8-bit field), physically contiguous queues only, a
//! completion queue's interrupt vector below 8 (a 3-bit field). The
//! Cosmos+ firmware serves the same set (`nvme_admin_cmd.c`); Number of
//! Queues answers what the controller has, the other features it lists
//! are accepted and read as 0.

use proto::{Opcode, Sqe, Status};

use super::regs::{HostLayout, QueueRegs};

/// Delete I/O Submission Queue.
pub const DELETE_SQ: Opcode = Opcode(0x00);
/// Create I/O Submission Queue.
pub const CREATE_SQ: Opcode = Opcode(0x01);
/// Delete I/O Completion Queue.
pub const DELETE_CQ: Opcode = Opcode(0x04);
/// Create I/O Completion Queue.
pub const CREATE_CQ: Opcode = Opcode(0x05);
/// Set Features.
pub const SET_FEATURES: Opcode = Opcode(0x09);
/// Get Features.
pub const GET_FEATURES: Opcode = Opcode(0x0A);
/// Asynchronous Event Request.
pub const ASYNC_EVENT: Opcode = Opcode(0x0C);

/// Feature: Number of Queues.
pub const FID_NUMBER_OF_QUEUES: u8 = 0x07;
/// Features accepted and reading as 0: Arbitration, Power Management,
/// Temperature Threshold, Volatile Write Cache, Interrupt Coalescing,
/// Asynchronous Event Configuration.
pub const FID_ACCEPTED: [u8; 6] = [0x01, 0x02, 0x04, 0x06, 0x08, 0x0B];

/// Completion Queue Invalid.
pub const CQ_INVALID: Status = Status::new(1, 0x00).with_dnr(true);
/// Invalid Queue Size.
pub const INVALID_QUEUE_SIZE: Status = Status::new(1, 0x02).with_dnr(true);
/// Invalid Interrupt Vector.
pub const INVALID_INTERRUPT_VECTOR: Status = Status::new(1, 0x08).with_dnr(true);
/// Invalid Queue Deletion.
pub const INVALID_QUEUE_DELETION: Status = Status::new(1, 0x0C).with_dnr(true);

/// A register write the served command needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueWrite {
    /// I/O submission queue register pair `index` (queue id − 1).
    Sq {
        /// Register index.
        index: u16,
        /// Contents.
        regs: QueueRegs,
    },
    /// I/O completion queue register pair `index`.
    Cq {
        /// Register index.
        index: u16,
        /// Contents.
        regs: QueueRegs,
    },
}

/// What to do with an admin command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Complete it now with `status` and dword 0, after `write` if any.
    Complete {
        /// Status.
        status: Status,
        /// Command-specific dword 0.
        dw0: u32,
        /// Queue registers to program first.
        write: Option<QueueWrite>,
    },
    /// Free its slot and keep it outstanding at the host (an AER).
    Hold,
    /// Not ours: the device core serves it.
    Firmware,
}

/// The I/O queues the host has created.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Queues {
    /// Completion queues by id (index 0 unused).
    cq: [bool; 17],
    /// Submission queues' completion queue by id (0 = none).
    sq_cq: [u16; 17],
}

impl Queues {
    /// Forgets every queue (controller reset).
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Whether I/O submission queue `qid` exists.
    pub fn has_sq(&self, qid: u16) -> bool {
        self.sq_cq.get(usize::from(qid)).is_some_and(|&c| c != 0)
    }
}

fn done(status: Status) -> Action {
    Action::Complete {
        status,
        dw0: 0,
        write: None,
    }
}

/// Serves `sqe` if it is one of this module's commands.
pub fn serve(layout: &HostLayout, queues: &mut Queues, sqe: &Sqe) -> Action {
    match sqe.opcode() {
        CREATE_CQ => create_cq(layout, queues, sqe),
        CREATE_SQ => create_sq(layout, queues, sqe),
        DELETE_CQ => delete_cq(layout, queues, sqe),
        DELETE_SQ => delete_sq(layout, queues, sqe),
        SET_FEATURES => features(layout, sqe, true),
        GET_FEATURES => features(layout, sqe, false),
        ASYNC_EVENT => Action::Hold,
        _ => Action::Firmware,
    }
}

/// Queue id and 0-based size from CDW10, if the id names an I/O queue.
fn qid_and_size(layout: &HostLayout, sqe: &Sqe) -> Result<(u16, u32), Status> {
    let qid = (sqe.cdw10 & 0xFFFF) as u16;
    if qid == 0 || qid > layout.io_queues {
        return Err(Status::INVALID_QUEUE_ID);
    }
    Ok((qid, sqe.cdw10 >> 16))
}

/// Checks a new queue's size and base; returns QSIZE.
fn check_new(layout: &HostLayout, sqe: &Sqe, qsize: u32) -> Result<u8, Status> {
    if qsize == 0 || qsize + 1 > layout.max_queue_entries {
        return Err(INVALID_QUEUE_SIZE);
    }
    let contiguous = sqe.cdw11 & 1 == 1;
    if !contiguous || !sqe.prp1.is_multiple_of(4096) || !layout.host_addr_ok(sqe.prp1) {
        return Err(Status::INVALID_FIELD);
    }
    Ok(qsize as u8)
}

fn create_cq(layout: &HostLayout, queues: &mut Queues, sqe: &Sqe) -> Action {
    written(try_create_cq(layout, queues, sqe))
}

fn try_create_cq(
    layout: &HostLayout,
    queues: &mut Queues,
    sqe: &Sqe,
) -> Result<QueueWrite, Status> {
    let (qid, size) = qid_and_size(layout, sqe)?;
    if queues.cq[usize::from(qid)] {
        return Err(Status::INVALID_QUEUE_ID);
    }
    let qsize = check_new(layout, sqe, size)?;
    let vector = sqe.cdw11 >> 16;
    if vector >= 8 {
        return Err(INVALID_INTERRUPT_VECTOR);
    }
    queues.cq[usize::from(qid)] = true;
    Ok(QueueWrite::Cq {
        index: qid - 1,
        regs: QueueRegs {
            base: sqe.prp1,
            qsize,
            vector: vector as u8,
            irq_en: sqe.cdw11 & 2 != 0,
            valid: true,
        },
    })
}

fn create_sq(layout: &HostLayout, queues: &mut Queues, sqe: &Sqe) -> Action {
    written(try_create_sq(layout, queues, sqe))
}

fn try_create_sq(
    layout: &HostLayout,
    queues: &mut Queues,
    sqe: &Sqe,
) -> Result<QueueWrite, Status> {
    let (qid, size) = qid_and_size(layout, sqe)?;
    if queues.has_sq(qid) {
        return Err(Status::INVALID_QUEUE_ID);
    }
    let qsize = check_new(layout, sqe, size)?;
    let cqid = (sqe.cdw11 >> 16) as u16;
    if cqid == 0 || cqid > layout.io_queues || !queues.cq[usize::from(cqid)] {
        return Err(CQ_INVALID);
    }
    queues.sq_cq[usize::from(qid)] = cqid;
    Ok(QueueWrite::Sq {
        index: qid - 1,
        regs: QueueRegs {
            base: sqe.prp1,
            qsize,
            vector: cqid as u8,
            irq_en: false,
            valid: true,
        },
    })
}

fn delete_sq(layout: &HostLayout, queues: &mut Queues, sqe: &Sqe) -> Action {
    written(try_delete_sq(layout, queues, sqe))
}

fn try_delete_sq(
    layout: &HostLayout,
    queues: &mut Queues,
    sqe: &Sqe,
) -> Result<QueueWrite, Status> {
    let (qid, _) = qid_and_size(layout, sqe)?;
    if !queues.has_sq(qid) {
        return Err(Status::INVALID_QUEUE_ID);
    }
    queues.sq_cq[usize::from(qid)] = 0;
    Ok(QueueWrite::Sq {
        index: qid - 1,
        regs: cleared(),
    })
}

fn delete_cq(layout: &HostLayout, queues: &mut Queues, sqe: &Sqe) -> Action {
    written(try_delete_cq(layout, queues, sqe))
}

fn try_delete_cq(
    layout: &HostLayout,
    queues: &mut Queues,
    sqe: &Sqe,
) -> Result<QueueWrite, Status> {
    let (qid, _) = qid_and_size(layout, sqe)?;
    if !queues.cq[usize::from(qid)] {
        return Err(Status::INVALID_QUEUE_ID);
    }
    if queues.sq_cq.contains(&qid) {
        return Err(INVALID_QUEUE_DELETION);
    }
    queues.cq[usize::from(qid)] = false;
    Ok(QueueWrite::Cq {
        index: qid - 1,
        regs: cleared(),
    })
}

const fn cleared() -> QueueRegs {
    QueueRegs {
        base: 0,
        qsize: 0,
        vector: 0,
        irq_en: false,
        valid: false,
    }
}

fn written(result: Result<QueueWrite, Status>) -> Action {
    match result {
        Ok(w) => Action::Complete {
            status: Status::SUCCESS,
            dw0: 0,
            write: Some(w),
        },
        Err(s) => done(s),
    }
}

fn features(layout: &HostLayout, sqe: &Sqe, set: bool) -> Action {
    let fid = sqe.cdw10 as u8;
    if fid == FID_NUMBER_OF_QUEUES {
        let most = u32::from(layout.io_queues - 1);
        // Set: what the host asked for, capped; Get: what it has.
        let (nsq, ncq) = if set {
            ((sqe.cdw11 & 0xFFFF).min(most), (sqe.cdw11 >> 16).min(most))
        } else {
            (most, most)
        };
        if set && (sqe.cdw11 & 0xFFFF == 0xFFFF || sqe.cdw11 >> 16 == 0xFFFF) {
            return done(Status::INVALID_FIELD);
        }
        return Action::Complete {
            status: Status::SUCCESS,
            dw0: ncq << 16 | nsq,
            write: None,
        };
    }
    if FID_ACCEPTED.contains(&fid) {
        return done(Status::SUCCESS);
    }
    done(Status::INVALID_FIELD)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvme::regs::COSMOS_PLUS;

    fn cmd(op: Opcode, cdw10: u32, cdw11: u32, prp1: u64) -> Sqe {
        let mut s = Sqe::new(op);
        s.cdw10 = cdw10;
        s.cdw11 = cdw11;
        s.prp1 = prp1;
        s
    }

    fn status_of(a: Action) -> Status {
        match a {
            Action::Complete { status, .. } => status,
            other => panic!("not completed: {other:?}"),
        }
    }

    #[test]
    fn a_queue_pair_is_created_programmed_and_deleted_in_order() {
        let l = &COSMOS_PLUS;
        let mut q = Queues::default();
        // SQ before its CQ: refused.
        let sq = cmd(CREATE_SQ, 63 << 16 | 1, 1 << 16 | 1, 0x8000_1000);
        assert_eq!(status_of(serve(l, &mut q, &sq)), CQ_INVALID);
        // CQ 1, 64 entries, IV 2, interrupts on.
        let cq = cmd(CREATE_CQ, 63 << 16 | 1, 2 << 16 | 0b11, 0x8000_0000);
        assert_eq!(
            serve(l, &mut q, &cq),
            Action::Complete {
                status: Status::SUCCESS,
                dw0: 0,
                write: Some(QueueWrite::Cq {
                    index: 0,
                    regs: QueueRegs {
                        base: 0x8000_0000,
                        qsize: 63,
                        vector: 2,
                        irq_en: true,
                        valid: true
                    }
                })
            }
        );
        match serve(l, &mut q, &sq) {
            Action::Complete {
                status,
                write: Some(QueueWrite::Sq { index: 0, regs }),
                ..
            } => {
                assert!(status.is_success());
                assert_eq!((regs.vector, regs.qsize, regs.base), (1, 63, 0x8000_1000));
            }
            other => panic!("{other:?}"),
        }
        assert!(q.has_sq(1));
        // The CQ cannot go while the SQ uses it.
        let del_cq = cmd(DELETE_CQ, 1, 0, 0);
        assert_eq!(status_of(serve(l, &mut q, &del_cq)), INVALID_QUEUE_DELETION);
        assert!(status_of(serve(l, &mut q, &cmd(DELETE_SQ, 1, 0, 0))).is_success());
        match serve(l, &mut q, &del_cq) {
            Action::Complete {
                write: Some(QueueWrite::Cq { regs, .. }),
                ..
            } => assert!(!regs.valid),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_queues_are_refused_with_the_spec_status() {
        let l = &COSMOS_PLUS;
        let mut q = Queues::default();
        let cases = [
            (
                cmd(CREATE_CQ, 9 | 15 << 16, 1, 0x1000),
                Status::INVALID_QUEUE_ID,
            ),
            (cmd(CREATE_CQ, 1, 1, 0x1000), INVALID_QUEUE_SIZE),
            (cmd(CREATE_CQ, 1 | 256 << 16, 1, 0x1000), INVALID_QUEUE_SIZE),
            (
                cmd(CREATE_CQ, 1 | 15 << 16, 0, 0x1000),
                Status::INVALID_FIELD,
            ),
            (
                cmd(CREATE_CQ, 1 | 15 << 16, 1, 0x1008),
                Status::INVALID_FIELD,
            ),
            (
                cmd(CREATE_CQ, 1 | 15 << 16, 1, 1 << 40),
                Status::INVALID_FIELD,
            ),
            (cmd(DELETE_SQ, 3, 0, 0), Status::INVALID_QUEUE_ID),
        ];
        for (sqe, want) in cases {
            let got = status_of(serve(l, &mut q, &sqe));
            assert!(got.same_code(&want), "{sqe:?}: {got:?} != {want:?}");
        }
        assert_eq!(q, Queues::default(), "nothing was created");
    }

    #[test]
    fn number_of_queues_reports_the_controller_and_caps_requests() {
        let l = &COSMOS_PLUS;
        let mut q = Queues::default();
        let set = cmd(SET_FEATURES, 0x07, 63 << 16 | 3, 0);
        match serve(l, &mut q, &set) {
            Action::Complete { status, dw0, .. } => {
                assert!(status.is_success());
                assert_eq!(dw0, 7 << 16 | 3);
            }
            other => panic!("{other:?}"),
        }
        match serve(l, &mut q, &cmd(GET_FEATURES, 0x07, 0, 0)) {
            Action::Complete { dw0, .. } => assert_eq!(dw0, 7 << 16 | 7),
            other => panic!("{other:?}"),
        }
        assert!(status_of(serve(l, &mut q, &cmd(SET_FEATURES, 0x08, 0, 0))).is_success());
        assert!(!status_of(serve(l, &mut q, &cmd(SET_FEATURES, 0x80, 0, 0))).is_success());
    }

    #[test]
    fn events_are_held_and_other_commands_go_to_the_firmware() {
        let mut q = Queues::default();
        assert_eq!(
            serve(&COSMOS_PLUS, &mut q, &Sqe::new(ASYNC_EVENT)),
            Action::Hold
        );
        assert_eq!(
            serve(&COSMOS_PLUS, &mut q, &Sqe::new(Opcode::IDENTIFY)),
            Action::Firmware
        );
    }
}
