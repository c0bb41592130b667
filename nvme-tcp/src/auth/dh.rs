//! Diffie-Hellman over the RFC 7919 groups, for the augmented challenge
//! of DH-HMAC-CHAP: an ephemeral key pair per transaction, public values
//! and shared secrets as big-endian bytes of the modulus's length (what
//! the kernel sends and hashes).
//!
//! Arithmetic is `crypto-bigint`'s constant-time Montgomery exponentiation
//! (RustCrypto), so the private exponent does not leak through timing.
//! The exponent has 512 random bits, above twice the strength of the
//! largest group (RFC 7919 §5.2 asks for at least 2× the security level).

use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, Odd};
use proto::auth::DhGroup;

use super::{AuthError, ffdhe};

/// Bits of a private exponent.
const EXPONENT_BITS: u32 = 512;

fn fail(why: impl Into<String>) -> AuthError {
    AuthError::Protocol(why.into())
}

/// Random bytes from the operating system.
pub(crate) fn random(buf: &mut [u8]) -> Result<(), AuthError> {
    getrandom::fill(buf).map_err(|e| fail(format!("no randomness: {e}")))
}

/// 2 at `bits` of precision.
fn two(bits: u32) -> BoxedUint {
    BoxedUint::from_be_slice(&[2], bits).expect("2 fits any precision")
}

fn params(group: DhGroup) -> Result<(BoxedMontyParams, u32), AuthError> {
    let hex = ffdhe::modulus_hex(group).ok_or_else(|| fail("the null group has no modulus"))?;
    let bits = (group.value_len() * 8) as u32;
    let p = Option::<BoxedUint>::from(BoxedUint::from_be_hex(hex, bits))
        .ok_or_else(|| fail("modulus"))?;
    let p = Option::<Odd<BoxedUint>>::from(Odd::new(p)).ok_or_else(|| fail("even modulus"))?;
    Ok((BoxedMontyParams::new(p), bits))
}

/// An ephemeral key pair in one group.
pub struct KeyPair {
    group: DhGroup,
    private: BoxedUint,
    public: Vec<u8>,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyPair({:?})", self.group)
    }
}

impl KeyPair {
    /// A fresh pair: x random, public value 2^x mod p.
    pub fn generate(group: DhGroup) -> Result<Self, AuthError> {
        let (params, bits) = params(group)?;
        let mut x = [0u8; (EXPONENT_BITS / 8) as usize];
        random(&mut x)?;
        x[0] |= 0x80;
        let private =
            BoxedUint::from_be_slice(&x, EXPONENT_BITS).map_err(|e| fail(e.to_string()))?;
        let g = BoxedMontyForm::new(two(bits), &params);
        let public = g.pow(&private).retrieve().to_be_bytes().into_vec();
        Ok(Self {
            group,
            private,
            public,
        })
    }

    /// The public value to send (the modulus's length).
    pub fn public(&self) -> &[u8] {
        &self.public
    }

    /// The shared secret with the peer's public value `peer`, which must
    /// have the modulus's length and lie in [2, p − 2] (1 and p − 1 would
    /// force the secret into a subgroup of order 2).
    pub fn shared(&self, peer: &[u8]) -> Result<Vec<u8>, AuthError> {
        let (params, bits) = params(self.group)?;
        if peer.len() != self.group.value_len() {
            return Err(fail(format!(
                "DH value of {} bytes, {:?} needs {}",
                peer.len(),
                self.group,
                self.group.value_len()
            )));
        }
        let y = BoxedUint::from_be_slice(peer, bits).map_err(|e| fail(e.to_string()))?;
        let p = params.modulus().as_ref().clone();
        let two = two(bits);
        let top = p.wrapping_sub(&two);
        if y < two || y > top {
            return Err(fail("DH value out of range (not in [2, p − 2])"));
        }
        let s = BoxedMontyForm::new(y, &params)
            .pow(&self.private)
            .retrieve();
        Ok(s.to_be_bytes().into_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_agree_and_bad_values_are_refused() {
        for g in [DhGroup::Ffdhe2048, DhGroup::Ffdhe3072] {
            let (a, b) = (KeyPair::generate(g).unwrap(), KeyPair::generate(g).unwrap());
            assert_eq!(a.public().len(), g.value_len());
            assert_ne!(a.public(), b.public());
            let (sa, sb) = (a.shared(b.public()).unwrap(), b.shared(a.public()).unwrap());
            assert_eq!(sa, sb);
            assert_eq!(sa.len(), g.value_len());
            let n = g.value_len();
            let mut one = vec![0u8; n];
            one[n - 1] = 1;
            assert!(a.shared(&one).is_err());
            assert!(a.shared(&vec![0xFF; n]).is_err(), "above p − 2");
            assert!(a.shared(&one[1..]).is_err(), "short");
        }
        assert!(KeyPair::generate(DhGroup::Null).is_err());
    }
}
