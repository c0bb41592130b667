//! f64 building blocks of the reference: stable softmax and argtopk with the
//! engine's tie rule.

use alloc::vec::Vec;

use crate::math::exp;

/// Softmax of `x` (max-subtracted, so no overflow). Empty → empty.
pub(crate) fn softmax(x: &[f64]) -> Vec<f64> {
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut e: Vec<f64> = x.iter().map(|&v| exp(v - m)).collect();
    let sum: f64 = e.iter().sum();
    if sum > 0.0 {
        for v in &mut e {
            *v /= sum;
        }
    }
    e
}

/// Indices of the `k` largest keys (ties → lower index), ascending.
pub(crate) fn argtopk(keys: &[f64], k: usize) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..keys.len())
        .filter_map(|j| u32::try_from(j).ok())
        .collect();
    idx.sort_by(|&a, &b| {
        keys[b as usize]
            .total_cmp(&keys[a as usize])
            .then(a.cmp(&b))
    });
    idx.truncate(k);
    idx.sort_unstable();
    idx
}

/// Σ a_i · b_i in f64.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_is_stable_and_normalised() {
        let p = softmax(&[1000.0, 1000.0, 0.0]);
        assert!((p[0] - 0.5).abs() < 1e-12 && (p[1] - 0.5).abs() < 1e-12);
        assert!(p[2] < 1e-300);
        let p = softmax(&[0.0, 1.0]);
        assert!((p[1] / p[0] - core::f64::consts::E).abs() < 1e-12);
        assert!(softmax(&[]).is_empty());
    }

    #[test]
    fn argtopk_ties_to_lower_index() {
        assert_eq!(argtopk(&[1.0, 3.0, 3.0, 2.0], 2), [1, 2]);
        assert_eq!(argtopk(&[1.0, 3.0, 3.0, 3.0], 2), [1, 2]);
        assert_eq!(argtopk(&[1.0, 0.0], 5), [0, 1]);
        assert_eq!(argtopk(&[5.0, 4.0, 6.0], 1), [2]);
    }
}
