//! Sliding-window layers through [`BackendAttention`]: the step attends to
//! the last `window` tokens only (the `local` method), on the host, and a
//! backend that cannot run it refuses instead of attending to everything.

use super::BackendAttention;
use crate::array::CsdArray;
use crate::backend::{HostDense, InStorage, ModelShape};
use crate::csd::Csd;
use crate::policy::Policy;
use crate::transport::SimTransport;
use attention::GroupShape;
use attention::testdata::SplitMix64;
use model::Attention;

const SHAPE: ModelShape = ModelShape {
    layers: 1,
    q_heads: 2,
    kv_heads: 1,
    head_dim: 16,
};

fn draw(rng: &mut SplitMix64, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.normal()).collect()
}

#[test]
fn a_window_step_attends_to_the_last_tokens_only() {
    let mut rng = SplitMix64::new(7);
    let (s, d, w) = (20, SHAPE.head_dim, 5);
    let (k, v) = (draw(&mut rng, s * d), draw(&mut rng, s * d));
    let (kn, vn) = (draw(&mut rng, d), draw(&mut rng, d));
    let q = draw(&mut rng, SHAPE.q_heads * d);
    let mut backend = HostDense::new();
    let mut a = BackendAttention::open(&mut backend, 1, SHAPE, Policy::DENSE).unwrap();
    assert!(a.supports_window());
    a.prefill(0, &k, &v).unwrap();
    let got = a.decode_window(0, &q, &kn, &vn, w).unwrap();
    // The window: the last w − 1 prompt tokens and the new one.
    let kw: Vec<f32> = k[(s - w + 1) * d..].iter().chain(&kn).copied().collect();
    let vw: Vec<f32> = v[(s - w + 1) * d..].iter().chain(&vn).copied().collect();
    let shape = GroupShape {
        group: SHAPE.q_heads,
        head_dim: d,
    };
    let want = attention::reference::dense(&q, &kw, &vw, shape).unwrap();
    // The backend keeps K and V as fp16: equal up to that rounding.
    let dist = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max)
    };
    assert!(dist(&got, &want) < 5e-3, "{}", dist(&got, &want));
    // And far from what attending to every token gives.
    let kall: Vec<f32> = k.iter().chain(&kn).copied().collect();
    let vall: Vec<f32> = v.iter().chain(&vn).copied().collect();
    let all = attention::reference::dense(&q, &kall, &vall, shape).unwrap();
    assert!(dist(&got, &all) > 0.05, "{}", dist(&got, &all));
}

#[test]
fn the_drive_refuses_a_window_step() {
    let mut rng = SplitMix64::new(8);
    let d = SHAPE.head_dim;
    let dev = Csd::new(SimTransport::new(4096).unwrap()).unwrap();
    let mut backend = InStorage::new(CsdArray::new(vec![dev]).unwrap(), 4);
    let mut a = BackendAttention::open(&mut backend, 1, SHAPE, Policy::DENSE).unwrap();
    a.prefill(0, &draw(&mut rng, 8 * d), &draw(&mut rng, 8 * d))
        .unwrap();
    let q = draw(&mut rng, SHAPE.q_heads * d);
    let e = a
        .decode_window(0, &q, &draw(&mut rng, d), &draw(&mut rng, d), 4)
        .unwrap_err();
    assert!(e.to_string().contains("Local"), "{e}");
}
