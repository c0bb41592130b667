//! [`MethodSpec`]: what a caller asks for (a method's name, the one
//! compression parameter of `host_driver::policy`, optionally SparF's
//! parameters by hand), resolved into the engine's [`Method`] for each
//! step's context length, as the model runner resolves it.

use std::str::FromStr;

use attention::shape::{Method, SparseParams};
use host_driver::policy::{Compression, Policy, Selection};

use crate::OffloadError;

/// A decode method as asked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MethodSpec {
    /// Which method.
    pub selection: Selection,
    /// Elements of K and V read ÷ dense's (1 for dense).
    pub compression: Compression,
    /// SparF only: `r` dims, `k` tokens, `local` recent tokens instead of
    /// the compression's.
    pub sparse: Option<SparseParams>,
}

impl MethodSpec {
    /// Dense attention.
    pub const DENSE: MethodSpec = MethodSpec {
        selection: Selection::Dense,
        compression: Compression::NONE,
        sparse: None,
    };

    /// `name` (as on the command line: `dense`, `sparf`, `sparf-pca`,
    /// `pages`, `block`, …) at `compression` in `(0, 1]`.
    pub fn parse(name: &str, compression: f64) -> Result<Self, OffloadError> {
        let selection = Selection::from_str(name).map_err(OffloadError::Invalid)?;
        let compression = Compression::new(compression).map_err(OffloadError::Invalid)?;
        Ok(Self {
            selection,
            compression,
            sparse: None,
        })
    }

    /// SparF with explicit parameters.
    pub fn sparf(p: SparseParams) -> Result<Self, OffloadError> {
        if p.r == 0 || p.k == 0 || p.local > p.k {
            return Err(OffloadError::invalid(format!(
                "SparF needs r ≥ 1, k ≥ 1 and local ≤ k (got r = {}, k = {}, local = {})",
                p.r, p.k, p.local
            )));
        }
        Ok(Self {
            selection: Selection::SparF,
            compression: Compression::NONE,
            sparse: Some(p),
        })
    }

    /// The engine's method for a step over `s` tokens of width `d`.
    pub fn resolve(&self, s: usize, d: usize) -> Result<Method, OffloadError> {
        if let Some(p) = self.sparse {
            if p.r > d {
                return Err(OffloadError::invalid(format!(
                    "SparF r = {} exceeds the head dimension {d}",
                    p.r
                )));
            }
            return Ok(Method::SparF(p));
        }
        Ok(Policy::new(self.selection, self.compression).method(s, d))
    }

    /// The name.
    pub fn name(&self) -> &'static str {
        self.selection.name()
    }
}

/// The drive's method bit of an engine method (`None`: a host-only method).
pub fn wire_method(m: &Method) -> Option<proto::Method> {
    match m {
        Method::Dense => Some(proto::Method::DENSE),
        Method::SparF(_) | Method::SparFPlus(_) => Some(proto::Method::SPARF),
        Method::Pages(_) => Some(proto::Method::PAGES),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ranges_are_checked() {
        assert!(MethodSpec::parse("sparf", 0.125).is_ok());
        assert!(MethodSpec::parse("nope", 0.125).is_err());
        assert!(MethodSpec::parse("sparf", 0.0).is_err());
        assert!(MethodSpec::parse("sparf", 1.5).is_err());
        let p = SparseParams {
            r: 8,
            k: 16,
            local: 4,
        };
        assert_eq!(
            MethodSpec::sparf(p).unwrap().resolve(100, 64).unwrap(),
            Method::SparF(p)
        );
        assert!(MethodSpec::sparf(p).unwrap().resolve(100, 4).is_err());
        assert!(MethodSpec::sparf(SparseParams { local: 17, ..p }).is_err());
    }

    #[test]
    fn compression_follows_the_policy() {
        let m = MethodSpec::parse("sparf", 0.125).unwrap();
        let Method::SparF(p) = m.resolve(1024, 64).unwrap() else {
            panic!("sparf resolves to SparF")
        };
        assert_eq!((p.r, p.k, p.local), (8, 64, 16));
        assert_eq!(MethodSpec::DENSE.resolve(10, 64).unwrap(), Method::Dense);
        assert_eq!(wire_method(&Method::Dense), Some(proto::Method::DENSE));
    }
}
