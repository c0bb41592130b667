//! Transcendental helpers for the f64 accuracy reference and the test-data
//! generator (`no_std` core has none). Thin wrappers over `libm` so the rest
//! of the crate names one place; the integer engine never calls these.

/// e^x.
pub fn exp(x: f64) -> f64 {
    libm::exp(x)
}

/// Square root (correctly rounded).
pub fn sqrt(x: f64) -> f64 {
    libm::sqrt(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_std() {
        let mut x = -50.0f64;
        while x < 50.0 {
            let want = x.exp();
            assert!((exp(x) - want).abs() <= want * 4e-16, "exp({x})");
            let y = x.abs() * 1e3;
            assert_eq!(sqrt(y), y.sqrt(), "sqrt({y})");
            x += 0.37;
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(sqrt(4.0), 2.0);
    }
}
