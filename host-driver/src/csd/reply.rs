//! Checking what the device answers: completion statuses and DECODE_FETCH
//! payloads (length, report sanity, value range). A bad answer is a
//! [`CsdError`], never a panic.

use proto::{DecodeReport, Status};

use super::{CsdError, DecodeOutput, Ticket, payload};
use crate::transport::IoResult;

/// Validates a DECODE_FETCH reply against the ticket's shape.
pub(super) fn parse_fetch(res: &IoResult, t: &Ticket) -> Result<DecodeOutput, CsdError> {
    const CMD: &str = "DECODE_FETCH";
    check_status(res, CMD)?;
    let n = t.shape.query_heads() as usize * usize::from(t.shape.head_dim);
    let expected = n * 4 + DecodeReport::SIZE;
    if res.data.len() != expected {
        return Err(bad_reply(
            CMD,
            format!("{} bytes, expected {expected}", res.data.len()),
        ));
    }
    let (body, tail) = res.data.split_at(n * 4);
    let report = DecodeReport::from_bytes(tail).map_err(|e| bad_reply(CMD, e.to_string()))?;
    if report.guard_widened > u32::from(t.shape.kv_heads) {
        return Err(bad_reply(
            CMD,
            format!(
                "report says the guardrail widened {} KV heads of {}",
                report.guard_widened, t.shape.kv_heads
            ),
        ));
    }
    if u64::from(report.tokens_attended) > t.tokens || report.tokens_attended == 0 {
        return Err(bad_reply(
            CMD,
            format!(
                "report says {} tokens attended, layer holds {}",
                report.tokens_attended, t.tokens
            ),
        ));
    }
    let raw = payload::get_i32s(body);
    if let Some(x) = raw
        .iter()
        .find(|x| x.unsigned_abs() > attention::engine::FX_MAX as u32)
    {
        return Err(bad_reply(
            CMD,
            format!("output value {x} outside the fp16 range"),
        ));
    }
    let out = raw
        .iter()
        .map(|&x| attention::engine::fx_to_f32(x))
        .collect();
    Ok(DecodeOutput { out, raw, report })
}

pub(super) fn check_status(res: &IoResult, command: &'static str) -> Result<(), CsdError> {
    let status: Status = res.cqe.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(CsdError::Status { status, command })
    }
}

pub(super) fn bad_reply(command: &'static str, reason: String) -> CsdError {
    CsdError::BadReply { command, reason }
}
