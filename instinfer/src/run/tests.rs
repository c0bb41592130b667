use attention::shape::{Method, SparseParams};

use super::attend::{
    AttendInputs, DeviceChoice, MethodChoice, SparseChoice, attend, resolve_method,
};
use super::bench::{BenchParams, run_bench};
use super::demo::{DemoParams, run_demo};
use crate::npy::NpyArray;

#[test]
fn sparse_defaults() {
    let m = resolve_method(MethodChoice::SparF, SparseChoice::default(), 1000, 64).unwrap();
    assert_eq!(
        m,
        Method::SparF(SparseParams {
            r: 8,
            k: 125,
            local: 31
        })
    );
    let m = resolve_method(MethodChoice::SparF, SparseChoice::default(), 3, 4).unwrap();
    assert_eq!(
        m,
        Method::SparF(SparseParams {
            r: 1,
            k: 1,
            local: 0
        })
    );
    let given = SparseChoice {
        r: Some(2),
        topk: Some(9),
        local: Some(1),
    };
    assert_eq!(
        resolve_method(MethodChoice::SparF, given, 100, 8).unwrap(),
        Method::SparF(SparseParams {
            r: 2,
            k: 9,
            local: 1
        })
    );
    assert_eq!(
        resolve_method(MethodChoice::Dense, given, 1, 1).unwrap(),
        Method::Dense
    );
    for bad in [
        SparseChoice {
            r: Some(0),
            ..given
        },
        SparseChoice {
            r: Some(9),
            ..given
        },
        SparseChoice {
            topk: Some(0),
            ..given
        },
    ] {
        let e = resolve_method(MethodChoice::SparF, bad, 100, 8).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}

fn arr(shape: &[usize]) -> NpyArray {
    NpyArray::from_f32(shape.to_vec(), vec![0.25; shape.iter().product()]).unwrap()
}

#[test]
fn input_shapes_are_checked() {
    let ok = AttendInputs::from_arrays(&arr(&[2, 5, 8]), &arr(&[2, 5, 8]), &arr(&[4, 8])).unwrap();
    assert_eq!((ok.kv_heads, ok.q_heads, ok.s, ok.d), (2, 4, 5, 8));
    assert_eq!(ok.host_offload_bytes(), 2 * 2 * 5 * 8 * 2);
    type Case<'a> = (&'a [usize], &'a [usize], &'a [usize], &'a str);
    let cases: [Case<'_>; 7] = [
        (&[5, 8], &[5, 8], &[1, 8], "shape"),
        (&[2, 5, 8], &[2, 6, 8], &[2, 8], "must match"),
        (&[2, 5, 8], &[2, 5, 8], &[2, 8, 1], "shape"),
        (&[2, 5, 8], &[2, 5, 8], &[2, 6], "head dimension"),
        (&[2, 5, 8], &[2, 5, 8], &[3, 8], "multiple"),
        (&[1, 5, 7], &[1, 5, 7], &[1, 7], "even"),
        (&[1, 0, 8], &[1, 0, 8], &[1, 8], "empty"),
    ];
    for (k, v, q, needle) in cases {
        let e = AttendInputs::from_arrays(&arr(k), &arr(v), &arr(q)).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains(needle), "{e} lacks {needle}");
    }
}

#[test]
fn attend_reports_the_decode_step() {
    // 1000 tokens: more than the device keeps in its DRAM tail.
    let inputs =
        AttendInputs::from_arrays(&arr(&[2, 1000, 16]), &arr(&[2, 1000, 16]), &arr(&[2, 16]))
            .unwrap();
    let (out, r) = attend(
        &inputs,
        MethodChoice::Dense,
        SparseChoice::default(),
        DeviceChoice::default(),
    )
    .unwrap();
    assert_eq!(out, vec![0.25; 32]);
    // q in (2·16·2) and outputs out (2·16·4 + 32 report bytes).
    assert_eq!(r.counters.pcie_bytes, 64 + 128 + 32);
    assert!(r.counters.flash_pages_read > 0);
    assert!(r.counters.virtual_ns > 0);
    let j = r.to_json();
    assert_eq!(j["method"], "dense");
    assert_eq!(j["pcie_bytes"], 224);
    let e = attend(
        &inputs,
        MethodChoice::Dense,
        SparseChoice::default(),
        DeviceChoice {
            dim_group: 3,
            ..DeviceChoice::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let e = attend(
        &inputs,
        MethodChoice::Dense,
        SparseChoice::default(),
        DeviceChoice {
            page_size: 512,
            ..DeviceChoice::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn small_demo_matches_reference() {
    let p = DemoParams {
        layers: 2,
        seqs: 2,
        steps: 3,
        prompt: 64,
        devices: 2,
        ..DemoParams::default()
    };
    let r = run_demo(&p).unwrap();
    assert_eq!(r.rows.len(), 2);
    for row in &r.rows {
        assert!(
            row.max_abs_err < 1e-2,
            "{}: {}",
            row.method,
            row.max_abs_err
        );
        assert!(row.virtual_ns > 0);
    }
    let text = r.to_string();
    assert!(text.contains("dense") && text.contains("sparf") && text.contains("virtual"));
    assert!(run_demo(&DemoParams { seqs: 0, ..p }).is_err());
}

#[test]
fn small_bench_prints_host_dense_and_sparf_per_dim_group() {
    let p = BenchParams {
        s: 64,
        d: 16,
        kv_heads: 2,
        group: 2,
        reps: 2,
        ..BenchParams::default()
    };
    let r = run_bench(&p).unwrap();
    // host-dense, in-storage dense, SparF for m = 1, 2, 4, 8 (all divide 16).
    assert_eq!(r.rows.len(), 6);
    assert!(r.rows[1].virtual_us.is_some() && r.rows[0].virtual_us.is_none());
    let text = r.to_string();
    for m in [1, 2, 4, 8] {
        assert!(text.contains(&format!("in-storage sparf m={m}")), "{text}");
    }
    assert_eq!(
        run_bench(&BenchParams { d: 7, ..p })
            .unwrap_err()
            .exit_code(),
        2
    );
}

/// `bench paper` end to end at its smallest: every figure's CSV and PNG
/// are written and the report compares with the paper's numbers.
#[test]
fn bench_paper_smoke_writes_every_figure() {
    use super::bench_paper::{Figure, PaperParams, run_paper};
    let font = super::plot::lines(
        &std::env::temp_dir().join("instinfer-font-probe.png"),
        "probe",
        "x",
        "y",
        &[("a".into(), vec![(1.0, 1.0), (2.0, 2.0)])],
        false,
        false,
    )
    .is_ok();
    if !testkit::require(font, "a TrueType font", "the bench paper smoke") {
        return;
    }
    let out = std::env::temp_dir().join(format!("instinfer-bench-paper-{}", std::process::id()));
    let p = PaperParams {
        out: out.clone(),
        seqs: 1,
        contexts: vec![1024, 2048],
        probe_bytes: 0,
        ..PaperParams::default()
    };
    let report = run_paper(&p).expect("bench paper");
    for f in Figure::ALL {
        for ext in ["csv", "png"] {
            let path = out.join(format!("{}.{ext}", f.name()));
            assert!(path.is_file(), "{} missing", path.display());
        }
    }
    assert!(report.contains("paper 6.85x"), "{report}");
    for f in ["points.csv", "utilisation.png"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // One line per point with its bound; SparF's also against dense.
    let bounds: Vec<&str> = report
        .lines()
        .filter(|l| l.contains(" us, bound "))
        .collect();
    assert!(bounds.len() >= 4, "{report}");
    assert!(bounds.iter().any(|l| l.contains("of dense's")), "{report}");
    assert!(
        report.contains("% of the aggregate channel bandwidth"),
        "{report}"
    );
    let csv = std::fs::read_to_string(out.join("throughput.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 7 * 10, "7 batches × 10 systems");
    let headline = std::fs::read_to_string(out.join("headline.csv")).unwrap();
    assert_eq!(
        headline.lines().count(),
        1 + 6 + 6,
        "6 InstInfer rows, 6 baselines"
    );
    assert!(report.contains("FlexGen as published"), "{report}");
    // Dense, and SparF, SparF+'s guardrail, Quest-style and pages at 1/4,
    // 1/8, 1/16, 1/32 at both contexts; the page figure's other points in
    // the point table, not in the channels.
    let pages = std::fs::read_to_string(out.join("pages.csv")).unwrap();
    assert_eq!(pages.lines().count(), 1 + 2 * (1 + 4 * 4), "{pages}");
    for method in ["sparf", "sparf-guard", "quest", "pages"] {
        assert!(pages.contains(&format!(",{method}-1/8,0.125,")), "{pages}");
    }
    assert!(
        report.contains("flash-aware pages beside SparF"),
        "{report}"
    );
    let points = std::fs::read_to_string(out.join("points.csv")).unwrap();
    assert!(points.contains(",pages-1/16,"), "{points}");
    let channels = std::fs::read_to_string(out.join("channels.csv")).unwrap();
    for method in ["pages", "quest", "sparf-guard"] {
        assert!(!channels.contains(method), "{channels}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// `bench host` runs at a small size and reports every line.
#[test]
fn bench_host_smoke() {
    use super::bench_host::{HostBenchParams, run_host_bench};
    let r = run_host_bench(&HostBenchParams {
        s: 256,
        kv_heads: 2,
        d: 64,
        reps: 1,
    })
    .expect("bench host");
    for what in ["memory read probe", "fast f32 kernel", "FTL:", "simulator:"] {
        assert!(r.contains(what), "{what} missing in {r}");
    }
    assert!(
        run_host_bench(&HostBenchParams {
            d: 12,
            ..HostBenchParams::default()
        })
        .is_err()
    );
}

/// The CSD points can be simulated on a trace; a context longer than the
/// trace, or a head dim that does not pair up, is refused.
#[test]
fn csd_points_run_on_a_trace() {
    use crate::cost::csd::{CsdSpec, Sample, profile_csd};
    use crate::cost::trace::Trace;
    use crate::cost::{KvSource, ModelShape};
    let (kvh, s, d) = (2usize, 1024usize, 64usize);
    let (k, v) = attention::testdata::structured_kv(3, kvh, s, d);
    let q = attention::testdata::structured_query(3, kvh * 3, d, kvh);
    let t = Trace {
        kv_heads: kvh,
        q_heads: kvh * 3,
        d,
        s,
        k: vec![k],
        v: vec![v],
        q: vec![q],
    };
    let m = ModelShape::OPT_13B;
    let spec = |s| CsdSpec::new(2, s, Some(0.125));
    let source = KvSource::Trace(t.clone());
    let p =
        profile_csd(&m, &source, &[spec(1024)], &Sample::paper(16384, 1)).expect("trace points");
    assert!(p.points[0].decode_ns > 0 && p.points[0].pages_read > 0);
    assert!(profile_csd(&m, &source, &[spec(2048)], &Sample::paper(16384, 1)).is_err());
    let narrow = ModelShape {
        head_dim: 96,
        ..ModelShape::OPT_13B
    };
    assert!(profile_csd(&narrow, &source, &[spec(1024)], &Sample::paper(16384, 1)).is_err());
}
