//! What a decode step returns: its output and its report.

use proto::DecodeReport;

/// One step's counters, summed over the drives holding its heads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepReport {
    /// Tokens in the context the step attended over (the new one included).
    pub tokens: u32,
    /// Tokens whose V rows entered the weighted sum (per KV head group,
    /// the most of any drive).
    pub tokens_attended: u32,
    /// Flash pages read.
    pub pages_read: u32,
    /// Flash pages a sparse method did not read.
    pub pages_skipped: u32,
    /// KV heads whose k the guardrail widened.
    pub guard_widened: u32,
    /// Bytes streamed through the engines (on the SSD backend: bytes read
    /// from the store).
    pub engine_bytes: u64,
    /// Elements the NAND-controller filters dropped.
    pub elements_filtered: u64,
}

impl StepReport {
    pub(crate) fn from_drive(tokens: u32, r: &DecodeReport) -> Self {
        Self {
            tokens,
            tokens_attended: r.tokens_attended,
            pages_read: r.pages_read,
            pages_skipped: r.pages_skipped,
            guard_widened: r.guard_widened,
            engine_bytes: r.engine_bytes,
            elements_filtered: r.elements_filtered,
        }
    }
}

/// One step's result.
#[derive(Clone, Debug, PartialEq)]
pub struct StepOutput {
    /// Attention output `[q_heads][d]`.
    pub out: Vec<f32>,
    /// Its counters.
    pub report: StepReport,
}

/// A fetched batch.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchOutput {
    /// One per step, in submission order.
    pub steps: Vec<StepOutput>,
    /// Virtual device time from submit to the end of fetch, ns: the
    /// longest of the drives' (simulated drives only; `None` on real ones).
    pub virtual_ns: Option<u64>,
}
