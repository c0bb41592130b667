//! [`Values`]: a caller's array, fp16 bit patterns or f32. The wire and
//! the drive keep fp16; f32 is rounded to the nearest fp16 exactly as the
//! model backends round it (`half`), so either form of the same numbers
//! gives the same bits on the drive.

use std::borrow::Cow;

/// One input array, flattened row-major.
#[derive(Clone, Copy, Debug)]
pub enum Values<'a> {
    /// fp16 bit patterns.
    F16(&'a [u16]),
    /// f32.
    F32(&'a [f32]),
}

impl<'a> Values<'a> {
    /// Elements.
    pub fn len(&self) -> usize {
        match self {
            Self::F16(x) => x.len(),
            Self::F32(x) => x.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements `range` (panics outside the array, as slicing does).
    pub fn part(&self, range: std::ops::Range<usize>) -> Values<'a> {
        match *self {
            Self::F16(x) => Self::F16(&x[range]),
            Self::F32(x) => Self::F32(&x[range]),
        }
    }

    /// fp16 bit patterns (borrowed when they already are).
    pub fn f16_bits(&self) -> Cow<'a, [u16]> {
        match *self {
            Self::F16(x) => Cow::Borrowed(x),
            Self::F32(x) => Cow::Owned(host_driver::backend::to_f16_bits(x)),
        }
    }

    /// The values as f32 (an fp16 input widened exactly).
    pub fn f32s(&self) -> Cow<'a, [f32]> {
        match *self {
            Self::F32(x) => Cow::Borrowed(x),
            Self::F16(x) => Cow::Owned(
                x.iter()
                    .map(|&b| half::f16::from_bits(b).to_f32())
                    .collect(),
            ),
        }
    }

    /// Refuses NaN and infinities: the engine's fixed point has no room
    /// for them, and a drive would answer garbage rather than an error.
    pub fn check_finite(&self, what: &str) -> Result<(), crate::OffloadError> {
        let bad = match self {
            Self::F16(x) => x.iter().position(|&b| b & 0x7c00 == 0x7c00),
            Self::F32(x) => x.iter().position(|v| !v.is_finite()),
        };
        match bad {
            None => Ok(()),
            Some(i) => Err(crate::OffloadError::invalid(format!(
                "{what}[{i}] is not a finite number"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_rounds_to_the_f16_bits_given_directly() {
        let xs = [0.1f32, -2.5, 65504.0, 1e-7];
        let bits: Vec<u16> = xs
            .iter()
            .map(|&x| half::f16::from_f32(x).to_bits())
            .collect();
        assert_eq!(Values::F32(&xs).f16_bits().as_ref(), bits.as_slice());
        assert_eq!(Values::F16(&bits).f16_bits().as_ref(), bits.as_slice());
        assert_eq!(Values::F16(&bits).f32s()[1], -2.5);
    }

    #[test]
    fn non_finite_values_are_refused() {
        assert!(Values::F32(&[1.0, f32::NAN]).check_finite("q").is_err());
        assert!(Values::F32(&[f32::INFINITY]).check_finite("q").is_err());
        assert!(Values::F16(&[0x7c00]).check_finite("q").is_err());
        assert!(Values::F16(&[0x3c00, 0x7bff]).check_finite("q").is_ok());
    }
}
