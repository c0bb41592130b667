//! The headline table of `bench paper` (`headline.csv`): InstInfer dense
//! and SparF with 1, 2 and 20 CSDs against each baseline, every system's
//! tokens/s beside its own limit (see [`crate::cost::systems`]): what it
//! would reach if its busiest link, unit or CSD resource were its only
//! cost. InstInfer runs at batch 256; each baseline at its best feasible
//! batch.

use std::fmt::Write as _;

use super::{
    BATCHES, CSD_COUNTS, Ctx, FLEXGEN, FLEXGEN_4BIT, FLEXGEN_FIT, FLEXGEN_HOST, PaperParams,
    RunError, SPARSE, input, inst, workload, write,
};
use crate::cost::ModelShape;
use crate::cost::csd::CsdSpec;
use crate::cost::systems::{System, limit_set_by, limit_throughput};

/// The baselines, in the table's order.
const BASELINES: [System; 6] = [
    System::IdealSsd,
    FLEXGEN,
    FLEXGEN_FIT,
    FLEXGEN_HOST,
    FLEXGEN_4BIT,
    System::DeepSpeed,
];

/// InstInfer's batch in the table.
const INST_BATCH: usize = 256;

/// The CSD points the table needs beyond the throughput figure's.
pub(super) fn specs(p: &PaperParams, m: &ModelShape) -> Vec<CsdSpec> {
    let ends = [p.contexts[0], p.contexts[p.contexts.len() - 1]];
    let mut v = Vec::new();
    for n in CSD_COUNTS {
        for compression in [None, Some(SPARSE)] {
            for s in ends {
                v.push(CsdSpec::new(m.heads.div_ceil(n), s, compression));
            }
        }
    }
    v
}

struct Row {
    sys: System,
    batch: usize,
    rule: &'static str,
    tokens_per_s: f64,
    limit_tokens_per_s: f64,
    set_by: String,
}

fn row(c: &Ctx<'_>, sys: System, batch: usize, rule: &'static str) -> Result<Row, RunError> {
    let w = workload(batch);
    let t = c.job(sys, batch)?.tokens_per_s;
    let l = limit_throughput(sys, &c.hw, &c.m, c.csd, &w)
        .ok_or_else(|| input(format!("no simulated CSD point for {}", sys.name())))?
        .tokens_per_s;
    // What binds at the longest context simulated.
    let s = w.prompt + w.output - 1;
    let set_by = match sys {
        System::InstInfer { compression, csds } => {
            let heads = c.m.heads.div_ceil(csds.max(1));
            let top = c.csd.instinfer_points(heads, compression).pop();
            match top {
                Some(p) => format!("CSD {} (s = {})", p.bound().resource.name(), p.s),
                None => "CSD".into(),
            }
        }
        _ => limit_set_by(sys, &c.hw, &c.m, batch, s, &w).to_string(),
    };
    Ok(Row {
        sys,
        batch,
        rule,
        tokens_per_s: t,
        limit_tokens_per_s: l,
        set_by,
    })
}

/// Writes `headline.csv` and its table into the report.
pub(super) fn headline(c: &mut Ctx<'_>) -> Result<(), RunError> {
    let mut rows = Vec::new();
    for n in CSD_COUNTS {
        for compression in [None, Some(SPARSE)] {
            rows.push(row(c, inst(compression, n), INST_BATCH, "256")?);
        }
    }
    let first_baseline = rows.len();
    for sys in BASELINES {
        let (_, b) = c.best_at(sys)?;
        if b == 0 {
            return Err(input(format!("{} runs no batch", sys.name())));
        }
        rows.push(row(c, sys, b, "best feasible")?);
    }
    let (inst_rows, base_rows) = rows.split_at(first_baseline);
    let mut csv = String::from(
        "system,batch,batch_rule,tokens_per_s,limit_tokens_per_s,fraction_of_limit,limit_set_by",
    );
    for b in base_rows {
        let _ = write!(csv, ",x {}", b.sys.name());
    }
    csv.push('\n');
    for r in &rows {
        let _ = write!(
            csv,
            "{},{},{},{:.4},{:.4},{:.4},{}",
            r.sys.name(),
            r.batch,
            r.rule,
            r.tokens_per_s,
            r.limit_tokens_per_s,
            r.tokens_per_s / r.limit_tokens_per_s,
            r.set_by
        );
        for b in base_rows {
            if inst_rows.iter().any(|i| i.sys == r.sys) {
                let _ = write!(csv, ",{:.3}", r.tokens_per_s / b.tokens_per_s);
            } else {
                csv.push(',');
            }
        }
        csv.push('\n');
    }
    write(&c.out.join("headline.csv"), &csv)?;

    let h = c.hw.flexgen_disk_measured;
    let _ = writeln!(
        c.report,
        "headline (headline.csv): InstInfer at batch {INST_BATCH}, each baseline at its best feasible batch of {BATCHES:?}; \
         FlexGen's disk -> host rate {:.3} GB/s ({})",
        h.value / 1e9,
        h.source
    );
    let _ = writeln!(
        c.report,
        "  {:<44} {:>5} {:>9} {:>9} {:>6}  limit set by",
        "system", "batch", "tokens/s", "limit", "of it"
    );
    for r in &rows {
        let _ = writeln!(
            c.report,
            "  {:<44} {:>5} {:>9.2} {:>9.2} {:>5.0}%  {}",
            r.sys.name(),
            r.batch,
            r.tokens_per_s,
            r.limit_tokens_per_s,
            100.0 * r.tokens_per_s / r.limit_tokens_per_s,
            r.set_by
        );
    }
    let _ = writeln!(c.report, "  InstInfer over each baseline (tokens/s ratio):");
    for (i, b) in base_rows.iter().enumerate() {
        let _ = writeln!(
            c.report,
            "    [{}] {} (batch {})",
            i + 1,
            b.sys.name(),
            b.batch
        );
    }
    for r in inst_rows {
        let mut line = format!("    {:<24}", r.sys.name());
        for (i, b) in base_rows.iter().enumerate() {
            let _ = write!(
                line,
                " [{}] {:>6.2}x",
                i + 1,
                r.tokens_per_s / b.tokens_per_s
            );
        }
        let _ = writeln!(c.report, "{line}");
    }
    Ok(())
}
