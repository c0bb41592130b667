//! [`CsdArray`]: N devices serving one logical set of sequences. Each
//! sequence's KV heads are split into contiguous ranges ([`shard`]), one per
//! device; a device with an empty range takes no part in that sequence.
//! Decodes are submitted to every device before any is fetched, and the
//! per-device outputs are concatenated in head order, so the result is bit
//! for bit what a single device holding all heads returns (heads are
//! independent in the engine).

pub mod shard;

use std::collections::HashMap;
use std::ops::Range;

use attention::shape::Method;
use proto::{DecodeReport, SeqShape, StatsLog};

use crate::csd::{Approx, Csd, CsdError, DecodeInput, DecodeOutput, RetryPolicy, Ticket};
use crate::transport::{DeviceTime, Transport};

/// A decode in flight on the array: one ticket per device taking part.
#[derive(Debug)]
#[must_use = "a submitted decode must be fetched"]
pub struct ArrayTicket {
    parts: Vec<(usize, Ticket)>,
}

/// One decode request for [`CsdArray::decode_batch`].
#[derive(Clone, Copy, Debug)]
pub struct ArrayDecode<'a> {
    /// Sequence.
    pub seq: u32,
    /// Layer.
    pub layer: u16,
    /// Query token position (see [`Csd::submit_decode`]).
    pub position: u32,
    /// fp16 `[q_heads][d]`.
    pub q: &'a [u16],
    /// New token's K and V, fp16 `[kv_heads][d]` each.
    pub kv_new: Option<(&'a [u16], &'a [u16])>,
    /// A rotated sequence's q̃ and k̃_new (see [`crate::csd::Approx`]).
    pub approx: Option<Approx<'a>>,
    /// Attention method.
    pub method: Method,
}

/// One decode request's buffers, owned (fp16 bits): what a backend builds
/// from its caller's inputs before it submits; [`DecodeBuf::request`]
/// lends them as an [`ArrayDecode`].
#[derive(Clone, Debug, PartialEq)]
pub struct DecodeBuf {
    /// Sequence.
    pub seq: u32,
    /// Layer.
    pub layer: u16,
    /// Query token position.
    pub position: u32,
    /// Query `[q_heads][d]`.
    pub q: Vec<u16>,
    /// New token's K and V `[kv_heads][d]` each.
    pub kv: Option<(Vec<u16>, Vec<u16>)>,
    /// A rotated sequence's q̃ (SparF+ decodes).
    pub q_approx: Option<Vec<u16>>,
    /// A rotated sequence's k̃_new (with a new token).
    pub k_approx: Option<Vec<u16>>,
    /// Attention method.
    pub method: Method,
}

impl DecodeBuf {
    /// The request, borrowing the buffers.
    pub fn request(&self) -> ArrayDecode<'_> {
        ArrayDecode {
            seq: self.seq,
            layer: self.layer,
            position: self.position,
            q: &self.q,
            kv_new: self.kv.as_ref().map(|(k, v)| (k.as_slice(), v.as_slice())),
            approx: (self.q_approx.is_some() || self.k_approx.is_some()).then_some(Approx {
                q: self.q_approx.as_deref(),
                k_new: self.k_approx.as_deref(),
            }),
            method: self.method,
        }
    }
}

/// Several devices sharding KV heads.
#[derive(Debug)]
pub struct CsdArray<T: Transport> {
    devices: Vec<Csd<T>>,
    /// Shape and head ranges of each open sequence.
    seqs: HashMap<u32, (SeqShape, Vec<Range<usize>>)>,
}

impl<T: Transport> CsdArray<T> {
    /// An array over `devices` (at least one).
    pub fn new(devices: Vec<Csd<T>>) -> Result<Self, CsdError> {
        if devices.is_empty() {
            return Err(CsdError::InvalidArgument(
                "an array needs at least one device".into(),
            ));
        }
        Ok(Self {
            devices,
            seqs: HashMap::new(),
        })
    }

    /// The devices.
    pub fn devices(&self) -> &[Csd<T>] {
        &self.devices
    }

    /// The devices, mutable.
    pub fn devices_mut(&mut self) -> &mut [Csd<T>] {
        &mut self.devices
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Always `false`: an array has at least one device.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// KV-head range of each device for an open sequence.
    pub fn head_ranges(&self, seq: u32) -> Option<&[Range<usize>]> {
        self.seqs.get(&seq).map(|(_, r)| r.as_slice())
    }

    /// Opens `seq` on every device that gets at least one KV head.
    pub fn open(&mut self, seq: u32, shape: SeqShape) -> Result<(), CsdError> {
        if self.seqs.contains_key(&seq) {
            return Err(CsdError::SequenceExists(seq));
        }
        shape.validate()?;
        let ranges = shard::head_ranges(usize::from(shape.kv_heads), self.devices.len());
        for (i, r) in ranges.iter().enumerate() {
            if r.is_empty() {
                continue;
            }
            // Fits: a sub-range of a u8 count.
            let part = SeqShape {
                kv_heads: r.len() as u8,
                ..shape
            };
            if let Err(e) = self.devices[i].open(seq, part) {
                for (j, r) in ranges[..i].iter().enumerate() {
                    if !r.is_empty() {
                        // Best effort: report the open failure, not this one.
                        let _ = self.devices[j].close(seq);
                    }
                }
                return Err(e);
            }
        }
        self.seqs.insert(seq, (shape, ranges));
        Ok(())
    }

    /// Closes `seq` on every device that holds part of it.
    pub fn close(&mut self, seq: u32) -> Result<(), CsdError> {
        let (_, ranges) = self
            .seqs
            .remove(&seq)
            .ok_or(CsdError::UnknownSequence(seq))?;
        let mut first_err = None;
        for (dev, r) in self.devices.iter_mut().zip(&ranges) {
            if !r.is_empty()
                && let Err(e) = dev.close(seq)
            {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Appends tokens to one layer: `k`, `v` fp16 `[kv_heads][n][d]`.
    pub fn append(
        &mut self,
        seq: u32,
        layer: u16,
        first_pos: u32,
        k: &[u16],
        v: &[u16],
    ) -> Result<(), CsdError> {
        self.append_with_dim_copy(seq, layer, first_pos, k, v, None)
    }

    /// [`Self::append`] with a rotated sequence's K̃ (see
    /// [`Csd::append_with_dim_copy`]).
    pub fn append_with_dim_copy(
        &mut self,
        seq: u32,
        layer: u16,
        first_pos: u32,
        k: &[u16],
        v: &[u16],
        k_dim: Option<&[u16]>,
    ) -> Result<(), CsdError> {
        let (shape, ranges) = self.seq(seq)?;
        if let Some(kd) = k_dim.filter(|kd| kd.len() != k.len()) {
            return Err(CsdError::Length {
                what: "k_dim",
                expected: k.len(),
                actual: kd.len(),
            });
        }
        let row = usize::from(shape.kv_heads) * usize::from(shape.head_dim);
        if k.is_empty() || !k.len().is_multiple_of(row) || v.len() != k.len() {
            return Err(CsdError::Length {
                what: "k/v",
                expected: row.max(k.len() / row * row),
                actual: v.len().min(k.len()),
            });
        }
        let per_head = k.len() / usize::from(shape.kv_heads);
        for (dev, r) in self.devices.iter_mut().zip(&ranges) {
            if r.is_empty() {
                continue;
            }
            let span = r.start * per_head..r.end * per_head;
            let kd = k_dim.map(|kd| &kd[span.clone()]);
            dev.append_with_dim_copy(seq, layer, first_pos, &k[span.clone()], &v[span], kd)?;
        }
        Ok(())
    }

    /// Each device's share of `req`: the device index and its slices of
    /// the query, the new token and the rotated inputs.
    fn parts<'a>(&self, req: &ArrayDecode<'a>) -> Result<Vec<(usize, DecodeInput<'a>)>, CsdError> {
        let (shape, ranges) = self.seq(req.seq)?;
        let d = usize::from(shape.head_dim);
        let g = usize::from(shape.group);
        let q_len = usize::from(shape.kv_heads) * g * d;
        if req.q.len() != q_len {
            return Err(CsdError::Length {
                what: "q",
                expected: q_len,
                actual: req.q.len(),
            });
        }
        if let Some((k, v)) = req.kv_new {
            let kv_len = usize::from(shape.kv_heads) * d;
            for (what, buf) in [("k_new", k), ("v_new", v)] {
                if buf.len() != kv_len {
                    return Err(CsdError::Length {
                        what,
                        expected: kv_len,
                        actual: buf.len(),
                    });
                }
            }
        }
        let mut parts = Vec::new();
        for (i, r) in ranges.iter().enumerate() {
            if r.is_empty() {
                continue;
            }
            let qs = r.start * g * d..r.end * g * d;
            let ks = r.start * d..r.end * d;
            let approx = req.approx.map(|a| Approx {
                q: a.q.and_then(|x| x.get(qs.clone())),
                k_new: a.k_new.and_then(|x| x.get(ks.clone())),
            });
            let input = DecodeInput {
                q: &req.q[qs],
                kv_new: req.kv_new.map(|(k, v)| (&k[ks.clone()], &v[ks.clone()])),
                approx,
            };
            parts.push((i, input));
        }
        Ok(parts)
    }

    /// Submits one decode to every device holding part of `seq`.
    pub fn submit_decode(&mut self, req: &ArrayDecode<'_>) -> Result<ArrayTicket, CsdError> {
        let inputs = self.parts(req)?;
        let mut parts = Vec::with_capacity(inputs.len());
        for (i, input) in inputs {
            match self.devices[i].submit_decode_with(
                req.seq,
                req.layer,
                req.position,
                input,
                req.method,
            ) {
                Ok(t) => parts.push((i, t)),
                Err(e) => {
                    // Already-submitted parts must still be drained.
                    let _ = self.fetch_many(vec![ArrayTicket { parts }]);
                    return Err(e);
                }
            }
        }
        Ok(ArrayTicket { parts })
    }

    /// One decode, device by device, each run again under `policy` after
    /// transient failures ([`Csd::decode_retrying`]): the way back after a
    /// failed batch, where each device may or may not hold the new token.
    /// Returns the merged output (or the first device's error: the other
    /// devices are still run) and the re-runs summed over devices.
    pub fn decode_retrying(
        &mut self,
        req: &ArrayDecode<'_>,
        policy: RetryPolicy,
    ) -> (Result<DecodeOutput, CsdError>, u32) {
        let parts = match self.parts(req) {
            Ok(p) => p,
            Err(e) => return (Err(e), 0),
        };
        let mut outs = Vec::new();
        let mut retries = 0;
        let mut first_err = None;
        for (i, input) in parts {
            let (o, r) = self.devices[i].decode_retrying(
                req.seq,
                req.layer,
                req.position,
                input,
                req.method,
                policy,
            );
            retries += r.retries;
            match o {
                Ok(o) => outs.push((i, o)),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => (Err(e), retries),
            None => (Ok(merge(outs)), retries),
        }
    }

    /// Fetches many decodes: every device's fetches are queued before any
    /// result is collected. Outputs in ticket order; per ticket, heads in
    /// order; reports summed over devices. The first error if any failed.
    pub fn fetch_many(&mut self, tickets: Vec<ArrayTicket>) -> Result<Vec<DecodeOutput>, CsdError> {
        self.fetch_many_each(tickets).into_iter().collect()
    }

    /// [`Self::fetch_many`] with each ticket's own result: a ticket fails
    /// if any of its devices' parts failed (with the first such error).
    pub fn fetch_many_each(
        &mut self,
        tickets: Vec<ArrayTicket>,
    ) -> Vec<Result<DecodeOutput, CsdError>> {
        let n = tickets.len();
        let mut per_dev: Vec<Vec<Ticket>> = (0..self.devices.len()).map(|_| Vec::new()).collect();
        // Which (ticket index) each device's i-th ticket belongs to.
        let mut owners: Vec<Vec<usize>> = vec![Vec::new(); self.devices.len()];
        for (ti, t) in tickets.into_iter().enumerate() {
            for (dev, part) in t.parts {
                per_dev[dev].push(part);
                owners[dev].push(ti);
            }
        }
        let per_dev_results = self.fetch_on_every_device(per_dev);
        let mut parts: Vec<Vec<(usize, DecodeOutput)>> = vec![Vec::new(); n];
        let mut errors: Vec<Option<CsdError>> = (0..n).map(|_| None).collect();
        for (dev, (results, owner)) in per_dev_results.into_iter().zip(owners).enumerate() {
            for (r, ti) in results.into_iter().zip(owner) {
                match r {
                    Ok(o) => parts[ti].push((dev, o)),
                    Err(e) => {
                        errors[ti].get_or_insert(e);
                    }
                }
            }
        }
        parts
            .into_iter()
            .zip(errors)
            .map(|(p, e)| match e {
                Some(e) => Err(e),
                None => Ok(merge(p)),
            })
            .collect()
    }

    /// Each device's fetches of `per_dev` (waiting for their submits on the
    /// way). With two or more busy devices whose transports hold the caller
    /// ([`Transport::holds_caller`]), each works in a thread of its own:
    /// simulated boards compute at once, and drives behind blocking system
    /// calls wait at once. Asynchronous transports stay on this thread,
    /// where extra threads would only compete with the devices for CPU.
    fn fetch_on_every_device(
        &mut self,
        per_dev: Vec<Vec<Ticket>>,
    ) -> Vec<Vec<Result<DecodeOutput, CsdError>>> {
        let busy = per_dev
            .iter()
            .zip(&self.devices)
            .filter(|(ts, d)| !ts.is_empty() && d.transport().holds_caller())
            .count();
        let one = |dev: &mut Csd<T>, ts: Vec<Ticket>| {
            let batch = dev.fetch_begin_each(ts);
            dev.fetch_end_each(batch)
        };
        if busy < 2 {
            return self
                .devices
                .iter_mut()
                .zip(per_dev)
                .map(|(dev, ts)| one(dev, ts))
                .collect();
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = self
                .devices
                .iter_mut()
                .zip(per_dev)
                .map(|(dev, ts)| s.spawn(move || one(dev, ts)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }

    /// Submits every request, then fetches them all; the first error if
    /// any failed (every request is collected either way).
    pub fn decode_batch(
        &mut self,
        reqs: &[ArrayDecode<'_>],
    ) -> Result<Vec<DecodeOutput>, CsdError> {
        self.decode_batch_each(reqs).into_iter().collect()
    }

    /// [`Self::decode_batch`] with each request's own result, so that only
    /// the failed ones need running again.
    pub fn decode_batch_each(
        &mut self,
        reqs: &[ArrayDecode<'_>],
    ) -> Vec<Result<DecodeOutput, CsdError>> {
        let mut tickets = Vec::with_capacity(reqs.len());
        let mut out: Vec<Option<Result<DecodeOutput, CsdError>>> = Vec::with_capacity(reqs.len());
        for r in reqs {
            match self.submit_decode(r) {
                Ok(t) => {
                    tickets.push(t);
                    out.push(None);
                }
                Err(e) => out.push(Some(Err(e))),
            }
        }
        let mut fetched = self.fetch_many_each(tickets).into_iter();
        out.into_iter()
            .map(|o| {
                o.or_else(|| fetched.next()).unwrap_or_else(|| {
                    Err(CsdError::BadReply {
                        command: "DECODE_FETCH",
                        reason: "no result".into(),
                    })
                })
            })
            .collect()
    }

    /// Statistics of every device.
    pub fn stats(&mut self) -> Result<Vec<StatsLog>, CsdError> {
        self.devices.iter_mut().map(Csd::stats).collect()
    }

    /// Virtual time of every device (simulated devices only).
    pub fn device_times(&self) -> Vec<Option<DeviceTime>> {
        self.devices.iter().map(Csd::device_time).collect()
    }

    fn seq(&self, seq: u32) -> Result<(SeqShape, Vec<Range<usize>>), CsdError> {
        self.seqs
            .get(&seq)
            .cloned()
            .ok_or(CsdError::UnknownSequence(seq))
    }
}

/// Concatenates per-device outputs (already in device = head order) and
/// sums their reports (`tokens_attended` is per head group: the maximum).
fn merge(parts: Vec<(usize, DecodeOutput)>) -> DecodeOutput {
    let mut out = DecodeOutput {
        out: Vec::new(),
        raw: Vec::new(),
        report: DecodeReport::default(),
    };
    for (_, p) in parts {
        out.out.extend_from_slice(&p.out);
        out.raw.extend_from_slice(&p.raw);
        let r = &mut out.report;
        r.tokens_attended = r.tokens_attended.max(p.report.tokens_attended);
        r.pages_read += p.report.pages_read;
        r.pages_skipped += p.report.pages_skipped;
        r.guard_widened += p.report.guard_widened;
        r.engine_bytes += p.report.engine_bytes;
        r.elements_filtered += p.report.elements_filtered;
    }
    out
}

#[cfg(test)]
mod tests;
