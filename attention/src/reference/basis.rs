//! [`Basis`]: an orthonormal basis of the head space in which a dim-indexed
//! copy of K can be stored so that SparF's few dims carry most of q·k
//! (Loki, Singhania et al., 2024: keys are low-rank; scoring in their
//! principal components loses less than in the raw dims).
//!
//! [`Basis::pca`] takes the eigenvectors of the keys' second-moment matrix
//! `KᵀK / n` (uncentred: q·k is what is approximated, not the keys'
//! spread about their mean), strongest first, by cyclic Jacobi rotations
//! in f64.

use alloc::vec;
use alloc::vec::Vec;

use crate::math::sqrt;

/// `d` orthonormal row vectors, strongest direction first.
#[derive(Clone, Debug, PartialEq)]
pub struct Basis {
    d: usize,
    /// `[d][d]` row-major: row i is direction i.
    rows: Vec<f64>,
    /// Eigenvalue of each row (the mean of (k · row)²).
    energy: Vec<f64>,
    /// Per direction: queries are multiplied and keys divided by it
    /// (1 for a plain rotation).
    scales: Vec<f64>,
}

impl Basis {
    /// The standard basis (rotation is the identity).
    pub fn identity(d: usize) -> Self {
        let mut rows = vec![0.0; d * d];
        for i in 0..d {
            rows[i * d + i] = 1.0;
        }
        Self {
            d,
            rows,
            energy: vec![0.0; d],
            scales: vec![1.0; d],
        }
    }

    /// The principal directions of `keys` (`[n][d]`); the identity when
    /// there are no keys.
    pub fn pca(keys: &[f32], d: usize) -> Self {
        let n = keys.len() / d.max(1);
        if n == 0 || d == 0 {
            return Self::identity(d);
        }
        let mut a = vec![0.0f64; d * d];
        for k in keys.chunks_exact(d) {
            for i in 0..d {
                let ki = f64::from(k[i]);
                for j in i..d {
                    a[i * d + j] += ki * f64::from(k[j]);
                }
            }
        }
        for i in 0..d {
            for j in i..d {
                a[i * d + j] /= n as f64;
                a[j * d + i] = a[i * d + j];
            }
        }
        let (values, vectors) = jacobi(a, d);
        let mut order: Vec<usize> = (0..d).collect();
        // Strongest first; ties by index, so the result is deterministic.
        order.sort_by(|&x, &y| values[y].total_cmp(&values[x]).then(x.cmp(&y)));
        let mut rows = vec![0.0; d * d];
        let mut energy = vec![0.0; d];
        for (r, &c) in order.iter().enumerate() {
            for i in 0..d {
                rows[r * d + i] = vectors[i * d + c];
            }
            energy[r] = values[c].max(0.0);
        }
        Self {
            d,
            rows,
            energy,
            scales: vec![1.0; d],
        }
    }

    /// [`Self::pca`] with each direction scaled by its keys' RMS: queries
    /// are multiplied by it and keys divided, so q·k is unchanged while
    /// SparF's rule (the largest |q| dims) picks the dims by the expected
    /// size of q_i·k_i rather than of q_i alone, and the stored keys have
    /// unit RMS per dim (comfortable for fp16).
    pub fn pca_balanced(keys: &[f32], d: usize) -> Self {
        let mut b = Self::pca(keys, d);
        let floor = b.energy.first().copied().unwrap_or(0.0) * 1e-8;
        b.scales = b
            .energy
            .iter()
            .map(|&e| if e > floor && e > 0.0 { sqrt(e) } else { 1.0 })
            .collect();
        b
    }

    /// A query in the basis: `y_i = s_i · (row_i · x)` per `d`-row.
    pub fn rotate_query(&self, x: &[f32]) -> Vec<f32> {
        self.project(x, |i| self.scales[i])
    }

    /// A key in the basis: `y_i = (row_i · x) / s_i` per `d`-row.
    pub fn rotate_key(&self, x: &[f32]) -> Vec<f32> {
        self.project(x, |i| 1.0 / self.scales[i])
    }

    fn project(&self, x: &[f32], f: impl Fn(usize) -> f64) -> Vec<f32> {
        let d = self.d;
        let mut out = Vec::with_capacity(x.len());
        for v in x.chunks_exact(d) {
            for (i, r) in self.rows.chunks_exact(d).enumerate() {
                let s: f64 = r.iter().zip(v).map(|(a, &b)| a * f64::from(b)).sum();
                out.push((s * f(i)) as f32);
            }
        }
        out
    }

    /// The basis of `kind` for `keys`.
    pub fn of_kind(kind: crate::shape::BasisKind, keys: &[f32], d: usize) -> Self {
        match kind {
            crate::shape::BasisKind::Raw => Self::identity(d),
            crate::shape::BasisKind::Pca => Self::pca(keys, d),
            crate::shape::BasisKind::Balanced => Self::pca_balanced(keys, d),
        }
    }

    /// Dimension.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// Mean squared projection of the keys on each direction.
    pub fn energy(&self) -> &[f64] {
        &self.energy
    }

    /// Each `d`-row of `x` expressed in the orthonormal rows
    /// (`y_i = row_i · x`, no scaling).
    pub fn rotate(&self, x: &[f32]) -> Vec<f32> {
        self.project(x, |_| 1.0)
    }

    /// The rows, `[d][d]` (for storing the basis).
    pub fn rows(&self) -> &[f64] {
        &self.rows
    }
}

/// Eigenvalues and eigenvectors (columns of the returned `[d][d]`) of the
/// symmetric `a`, by cyclic Jacobi sweeps until the off-diagonal is
/// negligible.
fn jacobi(mut a: Vec<f64>, d: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0.0f64; d * d];
    for i in 0..d {
        v[i * d + i] = 1.0;
    }
    let scale: f64 = (0..d).map(|i| a[i * d + i].abs()).sum::<f64>().max(1e-300);
    for _sweep in 0..64 {
        let off: f64 = (0..d)
            .flat_map(|i| (0..d).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * d + j] * a[i * d + j])
            .sum();
        if sqrt(off) <= 1e-14 * scale {
            break;
        }
        for p in 0..d {
            for q in p + 1..d {
                let apq = a[p * d + q];
                if apq.abs() <= 1e-300 {
                    continue;
                }
                let theta = (a[q * d + q] - a[p * d + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + sqrt(theta * theta + 1.0));
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / sqrt(t * t + 1.0);
                let s = t * c;
                for k in 0..d {
                    let akp = a[k * d + p];
                    let akq = a[k * d + q];
                    a[k * d + p] = c * akp - s * akq;
                    a[k * d + q] = s * akp + c * akq;
                }
                for k in 0..d {
                    let apk = a[p * d + k];
                    let aqk = a[q * d + k];
                    a[p * d + k] = c * apk - s * aqk;
                    a[q * d + k] = s * apk + c * aqk;
                }
                for k in 0..d {
                    let vkp = v[k * d + p];
                    let vkq = v[k * d + q];
                    v[k * d + p] = c * vkp - s * vkq;
                    v[k * d + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..d).map(|i| a[i * d + i]).collect(), v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::SplitMix64;

    #[test]
    fn pca_is_orthonormal_and_finds_the_strong_direction() {
        let (d, n) = (16, 400);
        let mut rng = SplitMix64::new(5);
        // Keys mostly along (1, 1, 0, …)/√2, plus small noise.
        let mut keys = Vec::new();
        for _ in 0..n {
            let a = rng.normal() * 5.0;
            for i in 0..d {
                let main = if i < 2 {
                    a / core::f32::consts::SQRT_2
                } else {
                    0.0
                };
                keys.push(main + 0.1 * rng.normal());
            }
        }
        let b = Basis::pca(&keys, d);
        let r = b.rows();
        for i in 0..d {
            for j in 0..d {
                let dot: f64 = (0..d).map(|k| r[i * d + k] * r[j * d + k]).sum();
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((dot - want).abs() < 1e-9, "rows {i},{j}: {dot}");
            }
        }
        assert!((r[0].abs() - core::f64::consts::FRAC_1_SQRT_2).abs() < 0.01);
        assert!((r[1].abs() - core::f64::consts::FRAC_1_SQRT_2).abs() < 0.01);
        assert!(b.energy()[0] > 20.0 && b.energy()[1] < 0.05);
        assert!(b.energy().windows(2).all(|w| w[0] >= w[1]));
        // Rotation keeps dot products.
        let x: Vec<f32> = (0..d).map(|_| rng.normal()).collect();
        let y: Vec<f32> = (0..d).map(|_| rng.normal()).collect();
        let (rx, ry) = (b.rotate(&x), b.rotate(&y));
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f32>();
        assert!((dot(&x, &y) - dot(&rx, &ry)).abs() < 1e-4);
        // The balanced form keeps q·k too, and gives the keys unit RMS.
        let bb = Basis::pca_balanced(&keys, d);
        let (qx, ky) = (bb.rotate_query(&x), bb.rotate_key(&y));
        assert!((dot(&x, &y) - dot(&qx, &ky)).abs() < 1e-3);
        let kr = bb.rotate_key(&keys);
        let rms0 = (kr.chunks_exact(d).map(|k| k[0] * k[0]).sum::<f32>() / n as f32).sqrt();
        assert!((rms0 - 1.0).abs() < 1e-3, "{rms0}");
    }

    #[test]
    fn no_keys_is_the_identity() {
        assert_eq!(Basis::pca(&[], 4), Basis::identity(4));
        assert_eq!(
            Basis::identity(3).rotate(&[1.0, 2.0, 3.0]),
            vec![1.0, 2.0, 3.0]
        );
    }
}
