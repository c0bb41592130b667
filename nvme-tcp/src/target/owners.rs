//! Sequence ownership across hosts: every host (host NQN) has its own
//! sequence ids. The target maps each host's ids onto ids of the one
//! board, so that a host can neither reach nor detect another host's
//! sequences: a command naming an id this host has not opened is answered
//! `SEQ_NOT_OPEN` by the target itself, whatever the board holds.

use std::collections::{HashMap, HashSet};

/// The mapping.
#[derive(Debug, Default)]
pub(crate) struct Owners {
    map: HashMap<(String, u32), u32>,
    used: HashSet<u32>,
    next: u32,
}

impl Owners {
    /// The board id of `host`'s sequence `seq`, if it has one.
    pub(crate) fn get(&self, host: &str, seq: u32) -> Option<u32> {
        self.map.get(&(host.to_string(), seq)).copied()
    }

    /// Maps `host`'s `seq` to a fresh board id (the caller forwards the
    /// SEQ_OPEN with it, and calls [`Self::release`] if it fails).
    pub(crate) fn bind(&mut self, host: &str, seq: u32) -> u32 {
        while self.used.contains(&self.next) {
            self.next = self.next.wrapping_add(1);
        }
        let id = self.next;
        self.next = self.next.wrapping_add(1);
        self.used.insert(id);
        self.map.insert((host.to_string(), seq), id);
        id
    }

    /// Forgets `host`'s `seq` (closed, or its open failed).
    pub(crate) fn release(&mut self, host: &str, seq: u32) {
        if let Some(id) = self.map.remove(&(host.to_string(), seq)) {
            self.used.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_have_separate_ids() {
        let mut o = Owners::default();
        let a = o.bind("nqn.a", 1);
        let b = o.bind("nqn.b", 1);
        assert_ne!(a, b);
        assert_eq!(o.get("nqn.a", 1), Some(a));
        assert_eq!(o.get("nqn.b", 2), None);
        o.release("nqn.a", 1);
        assert_eq!(o.get("nqn.a", 1), None);
        assert_eq!(o.get("nqn.b", 1), Some(b));
        // Freed ids come back; live ones are never reused.
        let c = o.bind("nqn.c", 9);
        assert_ne!(c, b);
    }
}
