//! Wall time of the vendor decode commands through a transport: one
//! DECODE_SUBMIT and its DECODE_FETCH (dense; 2 KV heads × 3 query heads,
//! d = 64, a 512-token prompt) with `depth` sequences in flight together.
//! In the guest every drive is emulated (QEMU's TCG, NVMeVirt, a loopback
//! NVMe/TCP target, the board in process): the figures compare paths, not
//! devices.

use std::time::Instant;

use attention::shape::Method;
use host_driver::csd::Csd;
use host_driver::transport::Transport;
use proto::SeqShape;

/// Prompt tokens of each sequence.
const PROMPT: usize = 512;

/// (median µs per round of `depth` decodes, decodes per second) over
/// `rounds` rounds, after one round of warm-up.
pub(crate) fn decode_latency<T: Transport>(
    csd: &mut Csd<T>,
    depth: usize,
    rounds: usize,
) -> Result<(f64, f64), String> {
    let (kv_heads, group, d) = (2usize, 3usize, 64usize);
    let shape = SeqShape {
        layers: 1,
        kv_heads: kv_heads as u8,
        group: group as u8,
        head_dim: d as u16,
        dim_group: 1,
        rotated: false,
        placement: proto::Placement::TIME,
    };
    // fp16 values near 1 in a pattern that differs by token and dim.
    let kv: Vec<u16> = (0..kv_heads * PROMPT * d)
        .map(|i| 0x3800 + (i * 2_654_435_761 % 0x400) as u16)
        .collect();
    let q: Vec<u16> = (0..kv_heads * group * d)
        .map(|i| 0x3A00 + (i * 40_503 % 0x200) as u16)
        .collect();
    let seqs: Vec<u32> = (0..depth as u32).map(|i| 900 + i).collect();
    let err = |e: host_driver::csd::CsdError| e.to_string();
    for &seq in &seqs {
        csd.open(seq, shape).map_err(err)?;
        csd.append(seq, 0, 0, &kv, &kv).map_err(err)?;
    }
    let mut times = Vec::with_capacity(rounds);
    for round in 0..=rounds {
        let start = Instant::now();
        let mut tickets = Vec::with_capacity(depth);
        for &seq in &seqs {
            tickets.push(
                csd.submit_decode(seq, 0, (PROMPT - 1) as u32, &q, None, Method::Dense)
                    .map_err(err)?,
            );
        }
        csd.fetch_many(tickets).map_err(err)?;
        if round > 0 {
            times.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    for &seq in &seqs {
        csd.close(seq).map_err(err)?;
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    Ok((median, depth as f64 / (median / 1e6)))
}
