//! The host's half of a rotated dim-indexed K copy (SparF+ in a PCA
//! basis): one basis per (layer, KV head), chosen from the keys of the
//! first append to that layer — the prefill — and kept for the sequence;
//! every key after it and every query is expressed in that basis on the
//! host and rounded to fp16, which is all the device ever sees of it.
//!
//! Both the device path ([`super::InStorage`]) and the engine model on the
//! host ([`super::HostDense::engine`]) rotate through [`Rotation`], so the
//! two see the same fp16 bits and agree bit for bit.

use attention::reference::Basis;
use attention::shape::BasisKind;

use super::{round_f16, to_f16_bits};

/// The bases of one sequence, `[layer][kv_head]`.
#[derive(Clone, Debug)]
pub struct Rotation {
    kind: BasisKind,
    d: usize,
    bases: Vec<Vec<Option<Basis>>>,
}

impl Rotation {
    /// No basis chosen yet, for `layers × kv_heads` heads of width `d`.
    pub fn new(kind: BasisKind, layers: usize, kv_heads: usize, d: usize) -> Self {
        Self {
            kind,
            d,
            bases: vec![vec![None; kv_heads]; layers],
        }
    }

    /// The kind of basis.
    pub fn kind(&self) -> BasisKind {
        self.kind
    }

    /// Keys `[kv_heads][n][d]` of `layer` in its heads' bases, fp16 bits;
    /// a head without a basis gets one from these keys first.
    pub fn keys(&mut self, layer: usize, k: &[f32]) -> Vec<u16> {
        let (d, kind) = (self.d, self.kind);
        let Some(heads) = self.bases.get_mut(layer) else {
            return Vec::new();
        };
        let per_head = k.len() / heads.len().max(1);
        let mut out = Vec::with_capacity(k.len());
        for (h, slot) in heads.iter_mut().enumerate() {
            let rows: Vec<f32> = k[h * per_head..(h + 1) * per_head]
                .iter()
                .copied()
                .map(round_f16)
                .collect();
            let basis = slot.get_or_insert_with(|| Basis::of_kind(kind, &rows, d));
            out.extend(to_f16_bits(&basis.rotate_key(&rows)));
        }
        out
    }

    /// Queries `[kv_heads·group][d]` of `layer` in their KV heads' bases,
    /// fp16 bits; `None` while a head of the layer has no basis (no key
    /// stored yet).
    pub fn queries(&self, layer: usize, q: &[f32]) -> Option<Vec<u16>> {
        let heads = self.bases.get(layer)?;
        let per_head = q.len() / heads.len().max(1);
        let mut out = Vec::with_capacity(q.len());
        for (h, basis) in heads.iter().enumerate() {
            let rows: Vec<f32> = q[h * per_head..(h + 1) * per_head]
                .iter()
                .copied()
                .map(round_f16)
                .collect();
            out.extend(to_f16_bits(&basis.as_ref()?.rotate_query(&rows)));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basis_comes_from_the_first_keys_and_stays() {
        let (heads, d, n) = (2, 8, 40);
        let key = |h: usize, t: usize, i: usize| ((h * 7 + t * 3 + i * i) % 11) as f32 - 5.0;
        let k: Vec<f32> = (0..heads)
            .flat_map(|h| (0..n).flat_map(move |t| (0..d).map(move |i| key(h, t, i))))
            .collect();
        let mut r = Rotation::new(BasisKind::Pca, 3, heads, d);
        assert!(r.queries(0, &[0.0; 2 * 8]).is_none());
        let first = r.keys(0, &k);
        assert_eq!(first.len(), k.len());
        // The same keys again: same basis, same bits.
        assert_eq!(r.keys(0, &k), first);
        // Head 0's basis is that of head 0's keys alone.
        let b0 = Basis::pca(
            &k[..n * d]
                .iter()
                .copied()
                .map(round_f16)
                .collect::<Vec<_>>(),
            d,
        );
        let q = vec![0.5f32; heads * d];
        let rq = r.queries(0, &q).unwrap();
        assert_eq!(rq[..d], to_f16_bits(&b0.rotate_query(&q[..d]))[..]);
        // Other layers have no basis yet.
        assert!(r.queries(1, &q).is_none());
        assert!(r.keys(7, &k).is_empty());
        // A rotation preserves q·k (up to fp16 rounding).
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        let f = |bits: &[u16]| -> Vec<f32> {
            bits.iter()
                .map(|&b| half::f16::from_bits(b).to_f32())
                .collect()
        };
        let (qr, kr) = (f(&rq[..d]), f(&first[..d]));
        let want = dot(&q[..d], &k[..d]);
        assert!((dot(&qr, &kr) - want).abs() < 0.05 * want.abs().max(1.0));
    }
}
