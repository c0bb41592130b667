//! Host-side bookkeeping of one NVMe queue pair: where the next SQE goes,
//! how far the device has consumed the SQ (from the CQEs' `sq_head`), and
//! which CQ slot is next with which phase tag.
//!
//! Pure arithmetic, no memory access: the transports read and write the
//! rings; this type says where.

use proto::{Cqe, Sqe};

/// One submission queue and its completion queue.
#[derive(Clone, Debug)]
pub struct QueuePair {
    /// Queue identifier (0 = admin).
    pub qid: u16,
    /// Bus address of the SQ ring.
    pub sq_base: u64,
    /// Bus address of the CQ ring.
    pub cq_base: u64,
    /// Entries of each ring (the SQ holds at most `entries - 1` commands).
    pub entries: u16,
    sq_tail: u16,
    sq_head: u16,
    cq_head: u16,
    phase: bool,
}

impl QueuePair {
    /// A fresh pair: both rings empty, expected phase 1.
    pub fn new(qid: u16, sq_base: u64, cq_base: u64, entries: u16) -> Self {
        Self {
            qid,
            sq_base,
            cq_base,
            entries,
            sq_tail: 0,
            sq_head: 0,
            cq_head: 0,
            phase: true,
        }
    }

    /// Slots the device has not consumed yet.
    pub fn sq_used(&self) -> u16 {
        (self.sq_tail + self.entries - self.sq_head) % self.entries
    }

    /// `true` when one more SQE would make tail == head.
    pub fn sq_full(&self) -> bool {
        self.sq_used() + 1 >= self.entries
    }

    /// Bus address of the next SQE slot.
    pub fn sq_slot(&self) -> u64 {
        self.sq_base + u64::from(self.sq_tail) * Sqe::SIZE as u64
    }

    /// Advances the tail past the slot just written; returns the new tail
    /// for the doorbell.
    pub fn push(&mut self) -> u16 {
        self.sq_tail = (self.sq_tail + 1) % self.entries;
        self.sq_tail
    }

    /// Bus address of the next CQ slot to inspect.
    pub fn cq_slot(&self) -> u64 {
        self.cq_base + u64::from(self.cq_head) * Cqe::SIZE as u64
    }

    /// `true` if `cqe` (read from [`Self::cq_slot`]) is new.
    pub fn is_new(&self, cqe: &Cqe) -> bool {
        cqe.phase() == self.phase
    }

    /// Consumes the completion just read: records its `sq_head` (if it is a
    /// slot index), advances the head and flips the phase on wrap; returns
    /// the new head for the doorbell.
    pub fn pop(&mut self, cqe: &Cqe) -> u16 {
        if cqe.sq_head < self.entries {
            self.sq_head = cqe.sq_head;
        }
        self.cq_head += 1;
        if self.cq_head == self.entries {
            self.cq_head = 0;
            self.phase = !self.phase;
        }
        self.cq_head
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::Status;

    #[test]
    fn wraps_and_flips_phase() {
        let mut q = QueuePair::new(1, 0x1000, 0x2000, 4);
        assert_eq!(q.sq_slot(), 0x1000);
        assert_eq!(q.push(), 1);
        assert_eq!(q.push(), 2);
        assert_eq!(q.push(), 3);
        assert!(q.sq_full());
        let done = |head, phase| Cqe::new(0, 1, head, Status::SUCCESS, 0, phase);
        for i in 0..4u16 {
            assert_eq!(q.cq_slot(), 0x2000 + 16 * u64::from(i));
            assert!(q.is_new(&done(1, true)));
            assert!(!q.is_new(&done(1, false)));
            q.pop(&done(3, true));
        }
        assert!(!q.sq_full());
        assert_eq!(q.sq_used(), 0);
        // Wrapped: the expected phase is now 0.
        assert_eq!(q.cq_slot(), 0x2000);
        assert!(q.is_new(&done(3, false)));
        assert_eq!(q.push(), 0);
        assert_eq!(q.sq_slot(), 0x1000);
    }
}
