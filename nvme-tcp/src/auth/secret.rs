//! A DH-HMAC-CHAP secret in its text form (NVMe Base 2.x, "Secret
//! representation"; what `nvme gen-dhchap-key` prints and the kernel's
//! `dhchap_secret` takes): `DHHC-1:XX:BASE64:` where XX names the hash
//! that transforms the secret before use (00 none, 01 SHA-256, 02
//! SHA-384, 03 SHA-512) and BASE64 encodes the 32-, 48- or 64-byte
//! secret followed by its CRC-32 (ISO 3309, as zlib computes it),
//! little-endian.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::AuthError;

/// The hash a secret is transformed with before use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    /// Used as it is.
    None,
    /// HMAC-SHA-256.
    Sha256,
    /// HMAC-SHA-384.
    Sha384,
    /// HMAC-SHA-512.
    Sha512,
}

impl Transform {
    fn from_id(id: &str) -> Option<Self> {
        match id {
            "00" => Some(Self::None),
            "01" => Some(Self::Sha256),
            "02" => Some(Self::Sha384),
            "03" => Some(Self::Sha512),
            _ => None,
        }
    }

    fn id(self) -> &'static str {
        match self {
            Self::None => "00",
            Self::Sha256 => "01",
            Self::Sha384 => "02",
            Self::Sha512 => "03",
        }
    }
}

/// A parsed secret. Its bytes are not printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    key: Vec<u8>,
    transform: Transform,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes, {:?})", self.key.len(), self.transform)
    }
}

fn bad(why: impl Into<String>) -> AuthError {
    AuthError::Secret(why.into())
}

impl Secret {
    /// A secret of 32, 48 or 64 bytes.
    pub fn new(key: Vec<u8>, transform: Transform) -> Result<Self, AuthError> {
        if ![32, 48, 64].contains(&key.len()) {
            return Err(bad(format!(
                "{} bytes: a secret has 32, 48 or 64",
                key.len()
            )));
        }
        Ok(Self { key, transform })
    }

    /// Parses `DHHC-1:XX:BASE64:` (the trailing colon optional, as the
    /// kernel takes it).
    pub fn parse(text: &str) -> Result<Self, AuthError> {
        let rest = text
            .trim()
            .strip_prefix("DHHC-1:")
            .ok_or_else(|| bad("does not start with DHHC-1:"))?;
        let (id, b64) = rest
            .split_once(':')
            .ok_or_else(|| bad("no transform field"))?;
        let transform = Transform::from_id(id)
            .ok_or_else(|| bad(format!("unknown transform {id:?} (00 to 03)")))?;
        let b64 = b64.strip_suffix(':').unwrap_or(b64);
        let raw = STANDARD
            .decode(b64)
            .map_err(|e| bad(format!("base64: {e}")))?;
        let Some(n) = raw
            .len()
            .checked_sub(4)
            .filter(|n| [32, 48, 64].contains(n))
        else {
            return Err(bad(format!(
                "{} bytes decoded: a secret has 32, 48 or 64 bytes and its CRC-32",
                raw.len()
            )));
        };
        let (key, crc) = raw.split_at(n);
        let want = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if crc32fast::hash(key) != want {
            return Err(bad("CRC-32 does not match the secret"));
        }
        Self::new(key.to_vec(), transform)
    }

    /// The text form.
    pub fn to_text(&self) -> String {
        let mut raw = self.key.clone();
        raw.extend_from_slice(&crc32fast::hash(&self.key).to_le_bytes());
        format!("DHHC-1:{}:{}:", self.transform.id(), STANDARD.encode(raw))
    }

    /// The secret's bytes.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// Its transform.
    pub fn transform(&self) -> Transform {
        self.transform
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_round_trips() {
        for (n, t) in [
            (32, Transform::None),
            (48, Transform::Sha384),
            (64, Transform::Sha512),
        ] {
            let key: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
            let s = Secret::new(key.clone(), t).unwrap();
            let text = s.to_text();
            assert!(text.starts_with(&format!("DHHC-1:{}:", t.id())), "{text}");
            assert!(text.ends_with(':'));
            let back = Secret::parse(&text).unwrap();
            assert_eq!(back, s);
            assert_eq!(back.key(), key.as_slice());
            // Without the trailing colon too, and with spaces around.
            assert_eq!(
                Secret::parse(&format!(" {} ", &text[..text.len() - 1])).unwrap(),
                s
            );
        }
    }

    /// The CRC is zlib's CRC-32 of the secret (the check value of
    /// "123456789" is CBF43926), little-endian after it.
    #[test]
    fn the_crc_is_zlibs() {
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
        let key = [0u8; 32];
        let mut raw = key.to_vec();
        raw.extend_from_slice(&crc32fast::hash(&key).to_le_bytes());
        let text = format!("DHHC-1:01:{}:", STANDARD.encode(&raw));
        assert_eq!(Secret::parse(&text).unwrap().transform(), Transform::Sha256);
    }

    /// The example secret of the NVMe Base specification, as the kernel's
    /// commit log quotes it, parses with every transform id.
    #[test]
    fn the_specifications_example_parses() {
        for id in ["00", "01", "02", "03"] {
            let text = format!("DHHC-1:{id}:ia6zGodOr4SEG0Zzaw398rpY0wqipUWj4jWjUh4HWUz6aQ2n:");
            let s = Secret::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(s.key().len(), 32);
            assert_eq!(s.to_text(), text);
        }
    }

    #[test]
    fn bad_secrets_are_refused_with_a_reason() {
        let good = Secret::new(vec![9; 32], Transform::None).unwrap().to_text();
        let mut flipped = good.clone().into_bytes();
        flipped[12] = if flipped[12] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        for bad in [
            "",
            "DHHC-2:00:AAAA:",
            "DHHC-1:04:AAAA:",
            "DHHC-1:00",
            "DHHC-1:00:not base64!:",
            "DHHC-1:00:AAAAAAAA:",
            flipped.as_str(),
        ] {
            let e = Secret::parse(bad).unwrap_err();
            assert!(matches!(e, AuthError::Secret(_)), "{bad:?}: {e}");
        }
        assert!(Secret::new(vec![0; 31], Transform::None).is_err());
        // Debug never shows the bytes.
        let s = Secret::parse(&good).unwrap();
        assert_eq!(format!("{s:?}"), "Secret(32 bytes, None)");
    }
}
