//! Sequence ownership across hosts: every host (host NQN) has its own
//! sequence ids. The target maps each host's ids onto ids of the one
//! board, so that a host can neither reach nor detect another host's
//! sequences: a command naming an id this host has not opened is answered
//! `SEQ_NOT_OPEN` by the target itself, whatever the board holds.
//!
//! It also keeps each host's use against its quotas: sequences open, and
//! KV bytes appended to them (K, V and a rotated sequence's K̃, fp16),
//! freed when a sequence closes.

use std::collections::{HashMap, HashSet};

/// One host's use.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Use {
    pub seqs: u32,
    pub kv_bytes: u64,
}

/// The mapping.
#[derive(Debug, Default)]
pub(crate) struct Owners {
    map: HashMap<(String, u32), u32>,
    used: HashSet<u32>,
    next: u32,
    /// KV bytes per token and layer of each open sequence, and its bytes.
    seqs: HashMap<(String, u32), (u64, u64)>,
    hosts: HashMap<String, Use>,
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

    /// Forgets `host`'s `seq` (closed, or its open failed), and its use.
    pub(crate) fn release(&mut self, host: &str, seq: u32) {
        let key = (host.to_string(), seq);
        if let Some(id) = self.map.remove(&key) {
            self.used.remove(&id);
        }
        if let Some((_, bytes)) = self.seqs.remove(&key)
            && let Some(u) = self.hosts.get_mut(host)
        {
            u.seqs = u.seqs.saturating_sub(1);
            u.kv_bytes = u.kv_bytes.saturating_sub(bytes);
        }
    }

    /// `host`'s use now.
    pub(crate) fn usage(&self, host: &str) -> Use {
        self.hosts.get(host).copied().unwrap_or_default()
    }

    /// Counts `host`'s new sequence `seq` (`per_token` KV bytes per token
    /// and layer) if it stays within `max_seqs`.
    pub(crate) fn open(
        &mut self,
        host: &str,
        seq: u32,
        per_token: u64,
        max_seqs: Option<u32>,
    ) -> bool {
        let u = self.hosts.entry(host.to_string()).or_default();
        if max_seqs.is_some_and(|m| u.seqs >= m) {
            return false;
        }
        u.seqs += 1;
        self.seqs.insert((host.to_string(), seq), (per_token, 0));
        true
    }

    /// Charges `tokens` more tokens of `seq` to `host` if they stay within
    /// `max_bytes`; returns the bytes charged (to refund if the command
    /// fails), or `None` over the quota.
    pub(crate) fn charge(
        &mut self,
        host: &str,
        seq: u32,
        tokens: u64,
        max_bytes: Option<u64>,
    ) -> Option<u64> {
        let key = (host.to_string(), seq);
        let per = self.seqs.get(&key).map_or(0, |s| s.0);
        let bytes = per.saturating_mul(tokens);
        let u = self.hosts.entry(host.to_string()).or_default();
        if max_bytes.is_some_and(|m| u.kv_bytes.saturating_add(bytes) > m) {
            return None;
        }
        u.kv_bytes += bytes;
        if let Some(s) = self.seqs.get_mut(&key) {
            s.1 += bytes;
        }
        Some(bytes)
    }

    /// Gives back bytes [`Self::charge`] took for a command that failed.
    pub(crate) fn refund(&mut self, host: &str, seq: u32, bytes: u64) {
        if let Some(u) = self.hosts.get_mut(host) {
            u.kv_bytes = u.kv_bytes.saturating_sub(bytes);
        }
        if let Some(s) = self.seqs.get_mut(&(host.to_string(), seq)) {
            s.1 = s.1.saturating_sub(bytes);
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

    #[test]
    fn quotas_count_per_host_and_free_on_close() {
        let mut o = Owners::default();
        for seq in 0..2 {
            o.bind("a", seq);
            assert!(o.open("a", seq, 100, Some(2)));
        }
        assert!(
            !o.open("a", 2, 100, Some(2)),
            "third sequence over the quota"
        );
        assert!(
            o.open("b", 0, 100, Some(2)),
            "another host's quota is its own"
        );
        assert_eq!(o.charge("a", 0, 7, Some(1000)), Some(700));
        assert_eq!(o.charge("a", 1, 4, Some(1000)), None, "1100 > 1000");
        assert_eq!(o.charge("b", 0, 10, Some(1000)), Some(1000));
        o.refund("a", 0, 200);
        assert_eq!(
            o.usage("a"),
            Use {
                seqs: 2,
                kv_bytes: 500
            }
        );
        o.release("a", 0);
        assert_eq!(
            o.usage("a"),
            Use {
                seqs: 1,
                kv_bytes: 0
            }
        );
        assert_eq!(
            o.usage("b"),
            Use {
                seqs: 1,
                kv_bytes: 1000
            }
        );
    }
}
