//! Shapes and method parameters shared by the reference and the engine, and
//! the one place where buffer lengths are checked against them.

use alloc::vec::Vec;

use crate::error::AttentionError;

/// Largest head dimension (the engine's `dot` overflow bound assumes it).
pub const MAX_HEAD_DIM: usize = 256;

/// Largest group size. The engine's token key adds
/// [`crate::engine::LOCAL_BONUS`] (2^40) to a sum of `group` probabilities of
/// at most 2^30 each, so the bonus dominates only while `group < 1024`.
pub const MAX_GROUP: usize = 1023;

/// One KV group: `group` query heads sharing one KV head of width `head_dim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupShape {
    /// Query heads per KV head, `1..=MAX_GROUP`.
    pub group: usize,
    /// Head dimension `d`, `1..=256`.
    pub head_dim: usize,
}

impl GroupShape {
    /// Checks the ranges of both fields.
    pub fn validate(&self) -> Result<(), AttentionError> {
        if self.group == 0 || self.group > MAX_GROUP {
            return Err(AttentionError::InvalidGroup { group: self.group });
        }
        if self.head_dim == 0 || self.head_dim > MAX_HEAD_DIM {
            return Err(AttentionError::InvalidHeadDim {
                head_dim: self.head_dim,
            });
        }
        Ok(())
    }

    /// Validates the shape and the lengths of `q` (`group × d`), `K` and `V`
    /// (`S × d` each) and returns `S`, which must be in `1..=u32::MAX`.
    pub fn check_inputs(
        &self,
        q_len: usize,
        k_len: usize,
        v_len: usize,
    ) -> Result<usize, AttentionError> {
        self.validate()?;
        let d = self.head_dim;
        // Cannot overflow: both factors are validated small.
        expect_len("q", self.group * d, q_len)?;
        if !k_len.is_multiple_of(d) {
            return Err(AttentionError::LengthMismatch {
                what: "k",
                expected: k_len - k_len % d,
                actual: k_len,
            });
        }
        expect_len("v", k_len, v_len)?;
        let s = k_len / d;
        check_tokens(s)?;
        Ok(s)
    }
}

/// SparQ / SparF parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseParams {
    /// Dims of `q` kept for the approximate scores, `1..=d`.
    pub r: usize,
    /// Tokens kept for the exact pass, `>= 1`.
    pub k: usize,
    /// The most recent `local` tokens are always kept (if `k` allows).
    pub local: usize,
}

impl SparseParams {
    /// Checks `r` against the head dimension and that `k >= 1`.
    pub fn validate(&self, head_dim: usize) -> Result<(), AttentionError> {
        if self.r == 0 || self.r > head_dim || self.k == 0 {
            return Err(AttentionError::InvalidSparse {
                r: self.r,
                k: self.k,
                head_dim,
            });
        }
        Ok(())
    }
}

/// Where SparF's approximate stage scores: in the raw dims (the paper), or
/// in a per-head basis of the prefill keys stored as the dim-indexed copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BasisKind {
    /// The head's own dims.
    Raw,
    /// The keys' principal directions (Loki-style rotation).
    Pca,
    /// The principal directions scaled by the keys' RMS (queries ×, keys
    /// ÷): SparF's |q| rule then ranks dims by the expected |q_i·k_i|.
    Balanced,
}

/// The adaptive guardrail: when the approximate scores put less than
/// `alpha_min` of a query head's mass on the chosen tokens, k doubles (up
/// to `k_cap`) until they do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    /// Threshold on min over the group's heads of α, in thousandths.
    pub alpha_min_milli: u16,
    /// Most tokens k may grow to.
    pub k_cap: usize,
}

/// SparF with the options beyond the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparfPlus {
    /// r, k, local as in SparF (k is where the guardrail starts).
    pub p: SparseParams,
    /// Where the approximate stage scores.
    pub basis: BasisKind,
    /// The guardrail, if any.
    pub guard: Option<Guard>,
}

/// H2O parameters: tokens cached = `heavy + recent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct H2oParams {
    /// Tokens kept for their accumulated attention.
    pub heavy: usize,
    /// Most recent tokens always kept.
    pub recent: usize,
}

impl H2oParams {
    /// At least one token must be cached.
    pub fn validate(&self) -> Result<(), AttentionError> {
        if self.heavy + self.recent == 0 {
            return Err(AttentionError::InvalidSparse {
                r: 0,
                k: 0,
                head_dim: 0,
            });
        }
        Ok(())
    }
}

/// Block-sparse attention (SolidAttention): the context in blocks of
/// `block` tokens; `budget` tokens attended, half to the first block
/// (attention sinks) and the most recent blocks, half to the best-scoring
/// other blocks. See [`crate::reference::block_sparse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockParams {
    /// Tokens per block (SolidAttention: 32).
    pub block: usize,
    /// Tokens attended in all.
    pub budget: usize,
}

impl BlockParams {
    /// SolidAttention's default for `s` tokens: blocks of 32, a budget of
    /// 1024 tokens from 4096 tokens on, a quarter of the length below
    /// (at least two blocks).
    pub fn default_for(s: usize) -> Self {
        let budget = if s >= 4096 { 1024 } else { (s / 4).max(64) };
        Self { block: 32, budget }
    }

    /// `block ≥ 1` and a budget of at least two blocks.
    pub fn validate(&self) -> Result<(), AttentionError> {
        if self.block == 0 || self.budget < 2 * self.block {
            return Err(AttentionError::InvalidSparse {
                r: self.block,
                k: self.budget,
                head_dim: 0,
            });
        }
        Ok(())
    }
}

/// The flash-aware page selection (see [`crate::engine::pages_group`]):
/// keys placed by similarity on pages of `page_tokens`, pages chosen by a
/// bound on their logits, every token of a chosen page attended exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PagesParams {
    /// Tokens per flash page (the FTL's token group), `>= 1`.
    pub page_tokens: usize,
    /// Most full pages read per KV head (each a K and a V page), `>= 1`.
    pub max_pages: usize,
    /// The most recent full pages always read (within `max_pages`).
    pub local_pages: usize,
    /// Mass budget in thousandths: pages are read until the chosen ones
    /// hold this share of the estimated mass; 1000 reads `max_pages`.
    pub mass_milli: u16,
    /// How pages are scored.
    pub score: PageScore,
    /// Whether the prefill was placed by similarity (else in time order).
    pub similar: bool,
    /// Pages not read still count: each as `page_tokens` copies of its
    /// mean key and mean value (kept in DRAM), in the same softmax.
    pub fill: bool,
    /// The first `sink` tokens (attention sinks) are pinned in device DRAM
    /// and always attended; page summaries leave them out.
    pub sink: usize,
}

/// How the page selection scores a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PageScore {
    /// Quest's upper bound from the page's element-wise min and max keys.
    Bound,
    /// The logit of the page's mean key plus ln of its rows.
    Mean,
    /// A Gaussian estimate of the page's log-mass from its mean key and
    /// per-dim spread: logit(q, k̄) + ½·c²·Σ(q_i·σ_i)² + ln n; with fill the
    /// unread pages' stand-ins take the same logit.
    Gauss,
    /// The exact attention mass of the page's tokens (reads all of K: the
    /// page-granular oracle, a bound on what a page score can reach).
    Exact,
    /// The attention mass of the page's tokens from a low-bit key sketch
    /// kept in device DRAM: each key element as one of `2^bits` levels
    /// between its page's min and max (`bits` 1, 2 or 4). With
    /// `shortlist > 0` only a shortlist of L = `shortlist · max_pages`
    /// pages is scored so (the others stand in as their mean logit in the
    /// same softmax): the L the mean score ranks first, or with `bound`
    /// the ⌈L/2⌉ the mean score ranks first together with the ⌊L/2⌋ that
    /// Quest's bound ranks first (a page holding a few strong keys among
    /// weak ones has a low mean but a high bound); 0 scores every page.
    Sketch {
        /// Bits per key element: 1, 2 or 4.
        bits: u8,
        /// Pages scored by the sketch, as a multiple of `max_pages`; 0:
        /// every page.
        shortlist: u8,
        /// Half the shortlist is chosen by the bound.
        bound: bool,
    },
}

impl PagesParams {
    /// `page_tokens ≥ 1`, `max_pages ≥ 1`, `mass_milli ≤ 1000`, sketch
    /// bits 1, 2 or 4.
    pub fn validate(&self) -> Result<(), AttentionError> {
        let bits_ok = match self.score {
            PageScore::Sketch { bits, .. } => matches!(bits, 1 | 2 | 4),
            _ => true,
        };
        if self.page_tokens == 0 || self.max_pages == 0 || self.mass_milli > 1000 || !bits_ok {
            return Err(AttentionError::InvalidSparse {
                r: self.page_tokens,
                k: self.max_pages,
                head_dim: 0,
            });
        }
        Ok(())
    }
}

/// Which attention to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Full softmax attention over all tokens.
    Dense,
    /// SparQ: every query head picks its own dims and tokens.
    SparQ(SparseParams),
    /// SparF (InstInfer Algorithm 1): one choice of dims and tokens per KV
    /// group, so the flash reads are shared by the group's query heads.
    SparF(SparseParams),
    /// Dense attention over the most recent `window` tokens.
    Local {
        /// Tokens kept.
        window: usize,
    },
    /// H2O: heavy hitters plus a recent window, evicting for good. It is
    /// stateful: see [`crate::reference::H2o`].
    H2o(H2oParams),
    /// Block-sparse (SolidAttention): see [`BlockParams`].
    Block(BlockParams),
    /// SparF with its options: the approximate stage in a per-head basis
    /// of the prefill keys (a rotated dim-indexed K copy, Loki-style; the
    /// exact pass is unrotated) and the adaptive guardrail. See
    /// [`crate::reference::sparf_plus`].
    SparFPlus(SparfPlus),
    /// The selection oracle: the top-k tokens by exact attention (reads all
    /// of K to score; a bound, not a budgeted method).
    Oracle {
        /// Tokens attended.
        k: usize,
    },
    /// The flash-aware page selection over a similarity-placed layout:
    /// see [`PagesParams`].
    Pages(PagesParams),
}

impl Method {
    /// Checks the sparse parameters (if any) against the head dimension.
    pub fn validate(&self, head_dim: usize) -> Result<(), AttentionError> {
        match self {
            Self::Dense => Ok(()),
            Self::SparQ(p) | Self::SparF(p) => p.validate(head_dim),
            Self::Local { window } if *window == 0 => Err(AttentionError::InvalidSparse {
                r: 0,
                k: 0,
                head_dim,
            }),
            Self::Local { .. } => Ok(()),
            Self::H2o(p) => p.validate(),
            Self::Block(p) => p.validate(),
            Self::SparFPlus(o) => o.p.validate(head_dim),
            Self::Oracle { k } if *k == 0 => Err(AttentionError::InvalidSparse {
                r: 0,
                k: 0,
                head_dim,
            }),
            Self::Oracle { .. } => Ok(()),
            Self::Pages(p) => p.validate(),
        }
    }

    /// A short name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Dense => "Dense",
            Self::SparQ(_) => "SparQ",
            Self::SparF(_) => "SparF",
            Self::Local { .. } => "Local",
            Self::H2o(_) => "H2O",
            Self::Block(_) => "Block",
            Self::SparFPlus(_) => "SparF+",
            Self::Oracle { .. } => "Oracle",
            Self::Pages(_) => "Pages",
        }
    }
}

/// Several heads at once: `q` is `[q_heads][d]`, `K` and `V` are
/// `[kv_heads][s][d]`; query head `h` reads KV head `h / (q_heads / kv_heads)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadsLayout {
    /// Query heads.
    pub q_heads: usize,
    /// KV heads; must divide `q_heads`.
    pub kv_heads: usize,
    /// Tokens per KV head.
    pub s: usize,
    /// Head dimension.
    pub d: usize,
}

impl HeadsLayout {
    /// Validates the layout and the three buffer lengths and returns the
    /// shape of one KV group.
    pub fn check_inputs(
        &self,
        q_len: usize,
        k_len: usize,
        v_len: usize,
    ) -> Result<GroupShape, AttentionError> {
        if self.kv_heads == 0 || self.q_heads == 0 || !self.q_heads.is_multiple_of(self.kv_heads) {
            return Err(AttentionError::InvalidHeads {
                q_heads: self.q_heads,
                kv_heads: self.kv_heads,
            });
        }
        let shape = GroupShape {
            group: self.q_heads / self.kv_heads,
            head_dim: self.d,
        };
        shape.validate()?;
        check_tokens(self.s)?;
        let q_expected = mul(self.q_heads, self.d)?;
        let kv_expected = mul(mul(self.kv_heads, self.s)?, self.d)?;
        expect_len("q", q_expected, q_len)?;
        expect_len("k", kv_expected, k_len)?;
        expect_len("v", kv_expected, v_len)?;
        Ok(shape)
    }

    /// Checks the buffers and runs `f` on each KV group's `(q, k, v)`
    /// slices (`[group][d]`, `[s][d]`, `[s][d]`), concatenating the
    /// `[group][d]` outputs in head order.
    pub fn per_group<T, O: Copy>(
        &self,
        q: &[T],
        k: &[T],
        v: &[T],
        mut f: impl FnMut(&[T], &[T], &[T], GroupShape) -> Result<Vec<O>, AttentionError>,
    ) -> Result<Vec<O>, AttentionError> {
        let shape = self.check_inputs(q.len(), k.len(), v.len())?;
        let q_group = shape.group * self.d;
        let kv_group = self.s * self.d;
        let mut out = Vec::with_capacity(q.len());
        for ((q_g, k_g), v_g) in q
            .chunks_exact(q_group)
            .zip(k.chunks_exact(kv_group))
            .zip(v.chunks_exact(kv_group))
        {
            out.extend_from_slice(&f(q_g, k_g, v_g, shape)?);
        }
        Ok(out)
    }
}

fn mul(a: usize, b: usize) -> Result<usize, AttentionError> {
    a.checked_mul(b).ok_or(AttentionError::SizeOverflow)
}

fn expect_len(what: &'static str, expected: usize, actual: usize) -> Result<(), AttentionError> {
    if expected == actual {
        Ok(())
    } else {
        Err(AttentionError::LengthMismatch {
            what,
            expected,
            actual,
        })
    }
}

/// Token indices are u32 throughout (argtopk outputs, firmware tables).
fn check_tokens(s: usize) -> Result<(), AttentionError> {
    if s == 0 {
        return Err(AttentionError::EmptySequence);
    }
    if u32::try_from(s).is_err() {
        return Err(AttentionError::TooManyTokens { s });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_shape_ranges() {
        let ok = GroupShape {
            group: 4,
            head_dim: 128,
        };
        assert_eq!(ok.validate(), Ok(()));
        let bad_g = GroupShape {
            group: 0,
            head_dim: 128,
        };
        assert_eq!(
            bad_g.validate(),
            Err(AttentionError::InvalidGroup { group: 0 })
        );
        let big_g = GroupShape {
            group: MAX_GROUP + 1,
            head_dim: 8,
        };
        assert!(matches!(
            big_g.validate(),
            Err(AttentionError::InvalidGroup { .. })
        ));
        for d in [0, 257] {
            let s = GroupShape {
                group: 1,
                head_dim: d,
            };
            assert_eq!(
                s.validate(),
                Err(AttentionError::InvalidHeadDim { head_dim: d })
            );
        }
    }

    #[test]
    fn check_inputs_returns_s_and_rejects_bad_lengths() {
        let sh = GroupShape {
            group: 2,
            head_dim: 4,
        };
        assert_eq!(sh.check_inputs(8, 12, 12), Ok(3));
        assert!(matches!(
            sh.check_inputs(7, 12, 12),
            Err(AttentionError::LengthMismatch { what: "q", .. })
        ));
        assert!(matches!(
            sh.check_inputs(8, 13, 13),
            Err(AttentionError::LengthMismatch { what: "k", .. })
        ));
        assert!(matches!(
            sh.check_inputs(8, 12, 8),
            Err(AttentionError::LengthMismatch { what: "v", .. })
        ));
        assert_eq!(sh.check_inputs(8, 0, 0), Err(AttentionError::EmptySequence));
    }

    #[test]
    fn sparse_params_ranges() {
        let p = |r, k| SparseParams { r, k, local: 0 };
        assert_eq!(p(1, 1).validate(8), Ok(()));
        assert_eq!(p(8, 100).validate(8), Ok(()));
        assert!(p(0, 1).validate(8).is_err());
        assert!(p(9, 1).validate(8).is_err());
        assert!(p(1, 0).validate(8).is_err());
        assert!(Method::SparF(p(9, 1)).validate(8).is_err());
        assert_eq!(Method::Dense.validate(8), Ok(()));
        assert_eq!(Method::SparQ(p(2, 2)).name(), "SparQ");
    }

    #[test]
    fn heads_layout() {
        let l = HeadsLayout {
            q_heads: 6,
            kv_heads: 2,
            s: 5,
            d: 4,
        };
        assert_eq!(
            l.check_inputs(24, 40, 40),
            Ok(GroupShape {
                group: 3,
                head_dim: 4
            })
        );
        assert!(matches!(
            l.check_inputs(24, 40, 39),
            Err(AttentionError::LengthMismatch { what: "v", .. })
        ));
        let bad = HeadsLayout { q_heads: 5, ..l };
        assert!(matches!(
            bad.check_inputs(20, 40, 40),
            Err(AttentionError::InvalidHeads { .. })
        ));
        let none = HeadsLayout { kv_heads: 0, ..l };
        assert!(none.check_inputs(24, 0, 0).is_err());
        let empty = HeadsLayout { s: 0, ..l };
        assert_eq!(
            empty.check_inputs(24, 0, 0),
            Err(AttentionError::EmptySequence)
        );
        let huge = HeadsLayout {
            q_heads: 1,
            kv_heads: 1,
            s: u32::MAX as usize,
            d: 256,
        };
        // Length check, not an allocation: must not overflow on 64-bit.
        assert!(huge.check_inputs(256, 0, 0).is_err());
    }
}
