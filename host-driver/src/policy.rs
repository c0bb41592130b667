//! Which attention a model runs and how much of the KV cache it may read:
//! one compression parameter for every method, defined as in SparQ — the
//! elements of K and V read per decode step ÷ what dense reads (2·S·d per
//! KV head).
//!
//! | method | parameters at compression c, S tokens, head dim d |
//! | --- | --- |
//! | dense | everything (c = 1) |
//! | SparQ, SparF | r = c·d dims for the approximate scores (r·S read), k = c·S/2 tokens for the exact pass (2·k·d read), local = k/4 |
//! | H2O | c·S tokens cached: half heavy hitters, half the most recent |
//! | local | the c·S most recent tokens |
//!
//! Every sparse method keeps at least [`MIN_TOKENS`] tokens (all of them
//! when fewer are stored): at very short contexts a 1/8 budget would leave
//! one or two tokens and the output is garbage, so there the compression is
//! not applied. With contexts of 1024 tokens and compressions down to 1/16
//! the floor never binds.

use std::fmt;
use std::str::FromStr;

use attention::shape::{
    BasisKind, BlockParams, Guard, H2oParams, Method, PageScore, PagesParams, SparfPlus,
    SparseParams,
};

/// The attention methods a model can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Selection {
    /// Every token.
    Dense,
    /// SparQ: per query head dims and tokens.
    SparQ,
    /// SparF: per KV group dims and tokens (what the device runs).
    SparF,
    /// H2O: heavy hitters + recent window, with eviction.
    H2o,
    /// The most recent tokens.
    Local,
    /// SolidAttention's block-sparse selection (blocks of 32 tokens).
    Block,
    /// SparF with its dim-indexed K copy in a per-head PCA basis of the
    /// prefill keys (Loki-style); same budget as SparF.
    SparFPca,
    /// The same basis with each direction scaled by the keys' RMS (queries
    /// ×, keys ÷), so the dims are picked by the expected |q_i·k_i|.
    SparFBal,
    /// SparF with the adaptive guardrail (see [`GuardSetting`]).
    SparFGuard,
    /// The PCA basis and the guardrail.
    SparFPcaGuard,
    /// The selection oracle: top c·S tokens by exact attention (reads all
    /// of K to score: a bound, not a budget).
    Oracle,
    /// Flash-aware: keys placed by similarity at prefill, whole pages
    /// chosen by a bound on their logits (at most c of the full pages),
    /// every token of a chosen page attended exactly.
    Pages,
    /// Quest-style page selection on the drive: tokens in time order,
    /// pages chosen by the min/max bound alone (no placement, no pinned
    /// sinks, no stand-ins), at most c of the pages.
    Quest,
}

impl Selection {
    /// The SparF+ selections: the basis of their approximate stage, and
    /// whether their guardrail runs.
    pub fn sparf_plus(self) -> Option<(BasisKind, bool)> {
        match self {
            Self::SparFPca => Some((BasisKind::Pca, false)),
            Self::SparFBal => Some((BasisKind::Balanced, false)),
            Self::SparFGuard => Some((BasisKind::Raw, true)),
            Self::SparFPcaGuard => Some((BasisKind::Pca, true)),
            _ => None,
        }
    }

    /// All of them, in report order.
    pub const ALL: [Selection; 13] = [
        Selection::Dense,
        Selection::SparQ,
        Selection::SparF,
        Selection::H2o,
        Selection::Local,
        Selection::Block,
        Selection::SparFPca,
        Selection::SparFBal,
        Selection::SparFGuard,
        Selection::SparFPcaGuard,
        Selection::Oracle,
        Selection::Pages,
        Selection::Quest,
    ];

    /// Lower-case name as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Dense => "dense",
            Self::SparQ => "sparq",
            Self::SparF => "sparf",
            Self::H2o => "h2o",
            Self::Local => "local",
            Self::Block => "block",
            Self::SparFPca => "sparf-pca",
            Self::SparFBal => "sparf-bal",
            Self::SparFGuard => "sparf-guard",
            Self::SparFPcaGuard => "sparf-pca-guard",
            Self::Oracle => "oracle",
            Self::Pages => "pages",
            Self::Quest => "quest",
        }
    }

    /// One line on what the method does and what it reads.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Dense => "every token: all K and V pages (the yardstick)",
            Self::SparQ => {
                "SparQ: per query head, r = c·d dims score all tokens, exact pass over k = c·S/2"
            }
            Self::SparF => {
                "SparF (InstInfer): per KV group, r = c·d dims from the dim-indexed K copy, exact pass over k = c·S/2"
            }
            Self::H2o => {
                "H2O: c·S tokens cached, half heavy hitters (evicted for good), half recent"
            }
            Self::Local => "the c·S most recent tokens",
            Self::Block => {
                "SolidAttention block-sparse: blocks of 32 tokens scored by representatives, c·S tokens"
            }
            Self::SparFPca => "SparF+ with its dim copy in a PCA basis of the prefill keys",
            Self::SparFBal => "SparF+ with the PCA basis scaled by the keys' RMS",
            Self::SparFGuard => "SparF+ with the adaptive guardrail (k widens while alpha is low)",
            Self::SparFPcaGuard => "SparF+ with the PCA basis and the guardrail",
            Self::Oracle => {
                "top c·S tokens by exact attention (reads all of K: a bound, not a method)"
            }
            Self::Pages => {
                "flash-aware: alike keys placed on the same pages, sinks pinned in DRAM, a shortlist of pages by mean key and min/max bound, at most c of the pages chosen from it by their tokens' masses under a 2-bit key sketch in DRAM and read whole, the rest as their mean key and value"
            }
            Self::Quest => {
                "Quest-style: tokens in time order, at most c of the pages chosen by their min/max bound, read whole"
            }
        }
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Selection {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Selection::ALL
            .into_iter()
            .find(|m| m.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                format!(
                    "unknown method `{s}` (dense, sparq, sparf, h2o, local, block, sparf-pca, sparf-bal, sparf-guard, sparf-pca-guard, oracle, pages, quest; `eval --list-methods` describes them)"
                )
            })
    }
}

/// A compression ratio in (0, 1], written `1/8` or `0.125`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compression(f64);

impl Compression {
    /// No compression.
    pub const NONE: Compression = Compression(1.0);

    /// `c` in (0, 1].
    pub fn new(c: f64) -> Result<Self, String> {
        if c.is_finite() && c > 0.0 && c <= 1.0 {
            Ok(Self(c))
        } else {
            Err(format!("compression {c} must be in (0, 1]"))
        }
    }

    /// The ratio.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inv = 1.0 / self.0;
        if (inv - inv.round()).abs() < 1e-9 {
            write!(f, "1/{}", inv.round())
        } else {
            write!(f, "{}", self.0)
        }
    }
}

impl FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let value = match s.split_once('/') {
            Some((a, b)) => {
                let a: f64 = a
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad compression `{s}`"))?;
                let b: f64 = b
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad compression `{s}`"))?;
                a / b
            }
            None => s.parse().map_err(|_| format!("bad compression `{s}`"))?,
        };
        Compression::new(value)
    }
}

/// A method at a compression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    /// The method.
    pub selection: Selection,
    /// Its budget (ignored for dense).
    pub compression: Compression,
    /// The guardrail's knobs (guarded selections only).
    pub guard: GuardSetting,
    /// SparF and SparF+: scale each layer's k by how much its selection
    /// misses on the prompt (see [`crate::runner::LayerPlan`]).
    pub per_layer: bool,
    /// The page selection's knobs.
    pub pages: PagesSetting,
}

/// The knobs of the flash-aware page selection ([`Selection::Pages`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PagesSetting {
    /// Flash page size of the drive, bytes: a page holds
    /// `page_bytes / (2·d)` tokens of one head.
    pub page_bytes: u32,
    /// The most recent full pages always read (and kept in time order at
    /// prefill).
    pub local_pages: usize,
    /// Mass budget: pages are read until the chosen ones hold this share
    /// of the estimated mass, `0..=1` (1 reads the whole budget).
    pub mass: f64,
    /// How a page is scored.
    pub score: PageScore,
    /// Place the prefill by similarity (else in time order).
    pub similar: bool,
    /// Unread pages enter the softmax as their mean key and value.
    pub fill: bool,
    /// Attention-sink tokens pinned in device DRAM.
    pub sink: usize,
}

impl PagesSetting {
    /// The sketch score's default shortlist (multiples of the page budget).
    pub const SHORTLIST: u8 = 5;
    /// Whether half the default shortlist is taken by Quest's bound.
    pub const SHORTLIST_BOUND: bool = true;

    /// The tuned default (on the tuning text; see docs/flash-selection.md).
    pub const DEFAULT: PagesSetting = PagesSetting {
        page_bytes: 4096,
        local_pages: 0,
        mass: 1.0,
        score: PageScore::Sketch {
            bits: 2,
            shortlist: Self::SHORTLIST,
            bound: Self::SHORTLIST_BOUND,
        },
        similar: true,
        fill: true,
        sink: 4,
    };

    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), String> {
        if self.page_bytes < 4 || !self.page_bytes.is_power_of_two() {
            return Err(format!(
                "page size {} is not a power of two ≥ 4",
                self.page_bytes
            ));
        }
        if self.sink > usize::from(proto::Placement::MAX_SINK) {
            return Err(format!(
                "pages sink {} exceeds {}",
                self.sink,
                proto::Placement::MAX_SINK
            ));
        }
        if self.local_pages > usize::from(u8::MAX) {
            return Err(format!("pages local {} exceeds 255", self.local_pages));
        }
        if !(0.0..=1.0).contains(&self.mass) {
            return Err(format!("pages mass {} is not in 0..=1", self.mass));
        }
        Ok(())
    }

    /// How a drive places a sequence that runs this method (the layout the
    /// host engine model assumes too).
    pub fn placement(&self) -> proto::Placement {
        let (sketch_bits, sketch_shortlist, shortlist_bound) = match self.score {
            PageScore::Sketch {
                bits,
                shortlist,
                bound,
            } => (bits, shortlist, bound),
            _ => (0, 0, false),
        };
        proto::Placement {
            similar: self.similar,
            sink: u8::try_from(self.sink).unwrap_or(u8::MAX),
            recent_pages: u8::try_from(self.local_pages).unwrap_or(u8::MAX),
            sketch_bits,
            sketch_shortlist,
            shortlist_bound,
        }
    }

    /// The Quest-style baseline on the same drive: time order, the bound,
    /// nothing pinned, no stand-ins, the whole budget read.
    pub fn quest(&self) -> PagesSetting {
        PagesSetting {
            similar: false,
            sink: 0,
            fill: false,
            score: PageScore::Bound,
            mass: 1.0,
            ..*self
        }
    }

    /// The setting a selection runs with (pages: this one; quest: its
    /// baseline).
    pub fn for_selection(&self, sel: Selection) -> PagesSetting {
        match sel {
            Selection::Quest => self.quest(),
            _ => *self,
        }
    }

    /// Tokens of one head per page at head dimension `d`.
    pub fn page_tokens(&self, d: usize) -> usize {
        (self.page_bytes as usize / (2 * d.max(1))).max(1)
    }

    /// The parameters for `s` tokens of head dimension `d` at compression
    /// `c`: at most c of the full pages (at least one, and at least the
    /// local ones).
    pub fn params(&self, c: f64, s: usize, d: usize) -> PagesParams {
        let t = self.page_tokens(d);
        let full = s / t;
        let max_pages = ((c * full as f64).floor() as usize)
            .max(self.local_pages + 1)
            .max(1);
        PagesParams {
            page_tokens: t,
            max_pages,
            local_pages: self.local_pages,
            mass_milli: (self.mass * 1000.0).round() as u16,
            score: self.score,
            similar: self.similar,
            fill: self.fill,
            sink: self.sink,
        }
    }
}

impl Default for PagesSetting {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The guardrail's knobs: k doubles while some query head's approximate
/// α (the mass the approximate scores put on the chosen tokens) is below
/// `alpha_min`, up to `cap` times the step's nominal bytes; the nominal k
/// is `k_share` of SparF's, so that what the guardrail adds keeps the mean
/// bytes read per step at SparF's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GuardSetting {
    /// α threshold, `0..=1`.
    pub alpha_min: f64,
    /// Most bytes of a step, as a multiple of the nominal, `≥ 1`.
    pub cap: f64,
    /// Nominal k as a share of SparF's, `(0, 1]`.
    pub k_share: f64,
}

impl GuardSetting {
    /// The measured default (see the README's SparF+ section).
    pub const DEFAULT: GuardSetting = GuardSetting {
        alpha_min: 0.6,
        cap: 2.0,
        k_share: 0.75,
    };

    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.alpha_min) {
            return Err(format!("guard alpha {} is not in 0..=1", self.alpha_min));
        }
        if !(self.cap >= 1.0 && self.cap.is_finite()) {
            return Err(format!("guard cap {} is not a finite number ≥ 1", self.cap));
        }
        if !(self.k_share > 0.0 && self.k_share <= 1.0) {
            return Err(format!("guard k share {} is not in (0, 1]", self.k_share));
        }
        Ok(())
    }
}

impl Default for GuardSetting {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The fewest tokens a sparse method keeps.
pub const MIN_TOKENS: usize = 32;

fn scaled(c: f64, n: usize) -> usize {
    ((c * n as f64).round() as usize).clamp(1, n.max(1))
}

/// `c · n` tokens, at least [`MIN_TOKENS`], at most `n`.
fn tokens(c: f64, n: usize) -> usize {
    ((c * n as f64).round() as usize)
        .max(MIN_TOKENS)
        .clamp(1, n.max(1))
}

impl Policy {
    /// Dense attention.
    pub const DENSE: Policy = Policy {
        selection: Selection::Dense,
        compression: Compression::NONE,
        guard: GuardSetting::DEFAULT,
        per_layer: false,
        pages: PagesSetting::DEFAULT,
    };

    /// `selection` at `compression`, the guardrail at its defaults.
    pub const fn new(selection: Selection, compression: Compression) -> Policy {
        Policy {
            selection,
            compression,
            guard: GuardSetting::DEFAULT,
            per_layer: false,
            pages: PagesSetting::DEFAULT,
        }
    }

    /// The per-step method for `s` tokens of head dimension `d`.
    pub fn method(&self, s: usize, d: usize) -> Method {
        let c = self.compression.get();
        match self.selection {
            Selection::Dense => Method::Dense,
            Selection::SparQ
            | Selection::SparF
            | Selection::SparFPca
            | Selection::SparFBal
            | Selection::SparFGuard
            | Selection::SparFPcaGuard => {
                let plus = self.selection.sparf_plus();
                // A guarded selection starts from fewer tokens, so that
                // what the guardrail adds keeps the mean bytes at SparF's.
                let gs = self.guard;
                let share = match plus {
                    Some((_, true)) => gs.k_share,
                    _ => 1.0,
                };
                let k = tokens(c / 2.0 * share, s);
                let r = scaled(c, d);
                // SparF+ scores well enough that fewer tokens need to be
                // forced in by recency: k/8 of them (SparF: k/4).
                let local = if plus.is_some() { k / 8 } else { k / 4 };
                let p = SparseParams { r, k, local };
                // The cap: `cap` × the budget's bytes (c·2·S·d), r·S of them spent.
                let cap_elems = gs.cap * c * (2 * s * d) as f64 - (r * s) as f64;
                let guard = Guard {
                    alpha_min_milli: (gs.alpha_min * 1000.0).round() as u16,
                    k_cap: ((cap_elems / (2 * d) as f64) as usize).clamp(k, s.max(k)),
                };
                match (self.selection, plus) {
                    (_, Some((basis, guarded))) => Method::SparFPlus(SparfPlus {
                        p,
                        basis,
                        guard: guarded.then_some(guard),
                    }),
                    (Selection::SparQ, _) => Method::SparQ(p),
                    _ => Method::SparF(p),
                }
            }
            Selection::Oracle => Method::Oracle { k: tokens(c, s) },
            Selection::Pages => Method::Pages(self.pages.params(c, s, d)),
            Selection::Quest => Method::Pages(self.pages.quest().params(c, s, d)),
            Selection::H2o => {
                let budget = tokens(c, s);
                Method::H2o(H2oParams {
                    heavy: budget - budget / 2,
                    recent: budget / 2,
                })
            }
            // Blocks of 32 with a budget of c·S tokens (at least two
            // blocks): the same KV bytes as the other methods at c.
            Selection::Block => Method::Block(BlockParams {
                block: 32,
                budget: tokens(c, s).max(64),
            }),
            Selection::Local => Method::Local {
                window: tokens(c, s),
            },
        }
    }

    /// Fraction of dense's K/V elements this step reads (SparQ's
    /// accounting), for `s` tokens of head dimension `d`.
    pub fn read_fraction(&self, s: usize, d: usize) -> f64 {
        let dense = (2 * s * d) as f64;
        match self.method(s, d) {
            Method::Dense => 1.0,
            Method::SparQ(p) | Method::SparF(p) | Method::SparFPlus(SparfPlus { p, .. }) => {
                ((p.r * s + 2 * p.k.min(s) * d) as f64 / dense).min(1.0)
            }
            Method::H2o(p) => ((p.heavy + p.recent).min(s) as f64 / s as f64).min(1.0),
            Method::Local { window } => (window.min(s) as f64 / s as f64).min(1.0),
            Method::Block(p) => (p.budget.min(s) as f64 / s as f64).min(1.0),
            Method::Oracle { k } => (k.min(s) as f64 / s as f64).min(1.0),
            // The pages' tokens; the DRAM tail is not read.
            Method::Pages(p) => {
                let full = s / p.page_tokens;
                (p.max_pages.min(full) as f64 / full.max(1) as f64).min(1.0)
            }
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.selection {
            Selection::Dense => f.write_str("dense"),
            s => write!(f, "{s} {}", self.compression),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(selection: Selection, c: &str) -> Policy {
        Policy::new(selection, c.parse().unwrap())
    }

    #[test]
    fn sparf_at_one_eighth_is_the_papers_setting() {
        // r = d/8, k = S/16, local = k/4: r·S + 2·k·d = S·d/4 = 1/8 of 2·S·d.
        let p = policy(Selection::SparF, "1/8");
        assert_eq!(
            p.method(1024, 64),
            Method::SparF(SparseParams {
                r: 8,
                k: 64,
                local: 16
            })
        );
        assert!((p.read_fraction(1024, 64) - 0.125).abs() < 1e-12);
    }

    #[test]
    fn every_method_reads_its_budget() {
        for sel in [
            Selection::SparQ,
            Selection::SparF,
            Selection::SparFPca,
            Selection::SparFBal,
            Selection::H2o,
            Selection::Local,
            Selection::Oracle,
        ] {
            for c in ["1/2", "1/4", "1/8", "1/16"] {
                let p = policy(sel, c);
                let want = p.compression.get();
                let got = p.read_fraction(4096, 64);
                assert!((got - want).abs() / want < 0.02, "{p}: {got} vs {want}");
            }
        }
        assert_eq!(Policy::DENSE.read_fraction(100, 64), 1.0);
    }

    #[test]
    fn guard_cap_is_within_its_byte_budget() {
        for c in ["1/4", "1/8", "1/16"] {
            for (s, d) in [(1024, 64), (4096, 128), (300, 64), (5000, 64)] {
                for sel in [Selection::SparFGuard, Selection::SparFPcaGuard] {
                    let p = policy(sel, c);
                    let Method::SparFPlus(o) = p.method(s, d) else {
                        panic!("{sel:?} is SparF+");
                    };
                    let g = o.guard.expect("guarded");
                    let budget = 2.0 * p.compression.get() * (2 * s * d) as f64;
                    let worst = (o.p.r * s + 2 * g.k_cap.min(s) * d) as f64;
                    // The cap binds unless the nominal k alone is above it.
                    assert!(
                        worst <= budget.max((o.p.r * s + 2 * o.p.k * d) as f64),
                        "{sel:?} {c} s={s} d={d}"
                    );
                    assert!(g.k_cap >= o.p.k);
                    // The nominal step reads no more than SparF's.
                    let sparf = policy(Selection::SparF, c).read_fraction(s, d);
                    assert!(p.read_fraction(s, d) <= sparf + 1e-12, "{sel:?} {c}");
                }
            }
        }
    }

    #[test]
    fn short_contexts_keep_the_floor() {
        let p = policy(Selection::H2o, "1/16");
        assert_eq!(
            p.method(3, 64),
            Method::H2o(H2oParams {
                heavy: 2,
                recent: 1
            })
        );
        assert_eq!(p.read_fraction(3, 64), 1.0);
        assert_eq!(
            policy(Selection::Local, "1/16").method(1, 64),
            Method::Local { window: 1 }
        );
        assert_eq!(
            policy(Selection::Local, "1/16").method(100, 64),
            Method::Local { window: MIN_TOKENS }
        );
        // The floor does not bind at 1024 tokens down to 1/16.
        let sparf = policy(Selection::SparF, "1/16").method(1024, 64);
        assert_eq!(
            sparf,
            Method::SparF(SparseParams {
                r: 4,
                k: 32,
                local: 8
            })
        );
    }

    #[test]
    fn parsing() {
        assert_eq!("1/8".parse::<Compression>().unwrap().get(), 0.125);
        assert_eq!("0.25".parse::<Compression>().unwrap().get(), 0.25);
        assert_eq!("1/8".parse::<Compression>().unwrap().to_string(), "1/8");
        assert!("0".parse::<Compression>().is_err());
        assert!("2".parse::<Compression>().is_err());
        assert!("x/2".parse::<Compression>().is_err());
        assert_eq!("SparF".parse::<Selection>().unwrap(), Selection::SparF);
        assert_eq!(
            "sparf-pca".parse::<Selection>().unwrap(),
            Selection::SparFPca
        );
        for sel in Selection::ALL {
            assert_eq!(sel.name().parse::<Selection>().unwrap(), sel);
        }
        assert!("h3o".parse::<Selection>().is_err());
    }
}
