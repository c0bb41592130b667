//! [`Inflight`]: a transport's I/O commands between submit and reap: what
//! each outstanding command holds, the completions taken from the device
//! and not yet handed out, and command identifiers reused only once their
//! command has been reaped.

use std::collections::{HashMap, VecDeque};

use super::{IoResult, TransportError};

/// I/O commands in flight; `P` is what an outstanding command holds
/// (its staged buffers, its expected data).
#[derive(Debug)]
pub struct Inflight<P> {
    next_cid: u16,
    /// Submitted, completion not seen yet, by command identifier.
    pub pending: HashMap<u16, P>,
    /// Completed, not reaped yet, in completion order.
    ready: VecDeque<(u16, IoResult)>,
}

impl<P> Default for Inflight<P> {
    fn default() -> Self {
        Self {
            next_cid: 0,
            pending: HashMap::new(),
            ready: VecDeque::new(),
        }
    }
}

impl<P> Inflight<P> {
    /// The first identifier from the last one given on that no command in
    /// flight (pending or ready) uses.
    pub fn free_cid(&mut self) -> u16 {
        let mut cid = self.next_cid;
        while self.pending.contains_key(&cid) || self.ready.iter().any(|(r, _)| *r == cid) {
            cid = cid.wrapping_add(1);
        }
        self.next_cid = cid.wrapping_add(1);
        cid
    }

    /// A completion taken from the device, to be reaped.
    pub fn complete(&mut self, cid: u16, res: IoResult) {
        self.ready.push_back((cid, res));
    }

    /// Commands submitted and not reaped.
    pub fn len(&self) -> usize {
        self.pending.len() + self.ready.len()
    }

    /// Whether no command is in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `reap` must first take a completion from the device (none
    /// is ready); `NothingInFlight` when nothing was submitted either.
    pub fn must_harvest(&self) -> Result<bool, TransportError> {
        if !self.ready.is_empty() {
            return Ok(false);
        }
        if self.pending.is_empty() {
            return Err(TransportError::NothingInFlight);
        }
        Ok(true)
    }

    /// The oldest completion not reaped.
    pub fn pop(&mut self) -> Result<(u16, IoResult), TransportError> {
        self.ready
            .pop_front()
            .ok_or(TransportError::NothingInFlight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{Cqe, Status};

    fn done(cid: u16) -> IoResult {
        IoResult {
            cqe: Cqe::new(cid, 1, 0, Status::SUCCESS, 0, true),
            data: Vec::new(),
        }
    }

    #[test]
    fn identifiers_are_reused_only_once_reaped() {
        let mut q = Inflight::<()>::default();
        assert!(matches!(
            q.must_harvest(),
            Err(TransportError::NothingInFlight)
        ));
        let a = q.free_cid();
        q.pending.insert(a, ());
        let b = q.free_cid();
        assert_ne!(a, b);
        q.pending.insert(b, ());
        assert!(q.must_harvest().unwrap());
        q.pending.remove(&a);
        q.complete(a, done(a));
        assert_eq!(q.len(), 2);
        assert!(!q.must_harvest().unwrap());
        // Wrapping round: `a` is still ready, `b` pending.
        q.next_cid = a;
        let c = q.free_cid();
        assert!(c != a && c != b);
        assert_eq!(q.pop().unwrap().0, a);
        assert_eq!(q.len(), 1);
        q.next_cid = a;
        assert_eq!(q.free_cid(), a);
    }
}
