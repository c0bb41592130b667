//! A short soak in the test suite: faults and many power cuts, every
//! output checked inside the run (a mismatch fails it), and the report's
//! accounting; bad settings refused.

use super::{SoakParams, run_soak};

fn short() -> SoakParams {
    SoakParams {
        days: 0.01,
        // About six cuts in the 14.4 virtual minutes.
        cuts_per_day: 600.0,
        request_interval_s: 10.0,
        bucket_hours: 0.1,
        ..SoakParams::default()
    }
}

#[test]
fn a_short_soak_with_power_cuts_keeps_every_output_and_accounts_for_it() {
    let r = run_soak(&short()).unwrap();
    assert!(r.outputs > 500, "{}", r.outputs);
    assert!(r.recovery.cuts >= 2, "{:?}", r.recovery);
    assert!(
        r.recovery.lost >= 12 * (r.recovery.cuts - 1),
        "{:?}",
        r.recovery
    );
    assert!(r.recovery.tokens > 0);
    assert!(r.totals.write_amplification >= 1.0);
    // The shared prompts alone take 60 % of the usable pages.
    assert!(r.fill.1 <= 0.9 + 1e-9 && r.fill.1 >= 0.59, "{:?}", r.fill);
    assert!(r.virtual_days >= 0.01);
    assert_eq!(r.buckets.len(), 3);
    assert_eq!(
        r.buckets.iter().map(|b| b.cuts).sum::<u64>(),
        r.recovery.cuts
    );
    assert!(r.erase.2 >= r.erase.0 && r.erase.1 > 0.0);
    let text = r.to_string();
    assert!(text.contains("decode latency") && text.contains("power cuts"));
}

#[test]
fn bad_settings_are_refused() {
    for p in [
        SoakParams {
            days: 0.0,
            ..short()
        },
        SoakParams {
            fill: 0.99,
            ..short()
        },
        SoakParams {
            request_interval_s: f64::NAN,
            ..short()
        },
        SoakParams {
            sessions: 17,
            ..short()
        },
        SoakParams {
            cuts_per_day: -1.0,
            ..short()
        },
    ] {
        assert!(run_soak(&p).is_err(), "{p:?}");
    }
}
