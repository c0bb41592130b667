//! The boot arguments: whitespace-separated `key=value` words (the host's
//! `-append`; other words, such as the image path QEMU puts first, are
//! ignored).
//!
//! - `page_size=4096|16384` — flash page size (default: the board's);
//! - `to_dev=PATH`, `from_dev=PATH` — the board link's named pipes
//!   (defaults `to_dev.fifo`, `from_dev.fifo` in QEMU's working directory);
//! - `selftest=panic|undef` — fail on purpose right after boot (a panic, or
//!   an undefined instruction), to check that failures exit QEMU non-zero.

/// Longest pipe path.
pub const MAX_PATH: usize = 255;

/// A path as a NUL-terminated byte string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CPath {
    buf: [u8; MAX_PATH + 1],
    len: usize,
}

impl CPath {
    fn new(s: &str) -> Result<Self, ArgError> {
        if s.is_empty() || s.len() > MAX_PATH || s.as_bytes().contains(&0) {
            return Err(ArgError::BadPath);
        }
        let mut buf = [0u8; MAX_PATH + 1];
        buf[..s.len()].copy_from_slice(s.as_bytes());
        Ok(Self { buf, len: s.len() })
    }

    /// The bytes with the terminating NUL.
    pub fn with_nul(&self) -> &[u8] {
        &self.buf[..=self.len]
    }

    /// The path.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

/// What the boot arguments say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootArgs {
    /// Flash page size.
    pub page_size: u32,
    /// Host → device pipe.
    pub to_dev: CPath,
    /// Device → host pipe.
    pub from_dev: CPath,
    /// Fail on purpose.
    pub selftest: Option<SelfTest>,
}

/// A deliberate failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelfTest {
    /// `panic!`.
    Panic,
    /// An undefined instruction (a CPU exception).
    Undef,
}

/// A bad boot argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgError {
    /// `page_size` is not 4096 or 16384.
    BadPageSize,
    /// A path is empty, too long or holds a NUL.
    BadPath,
    /// A known key without `=value`, or an unknown `key=value`.
    Unknown,
}

impl BootArgs {
    /// Parses `words`, starting from `default_page_size`.
    pub fn parse<'a>(
        words: impl IntoIterator<Item = &'a str>,
        default_page_size: u32,
    ) -> Result<Self, ArgError> {
        let mut a = Self {
            page_size: default_page_size,
            to_dev: CPath::new("to_dev.fifo")?,
            from_dev: CPath::new("from_dev.fifo")?,
            selftest: None,
        };
        for w in words {
            let Some((k, v)) = w.split_once('=') else {
                continue;
            };
            match k {
                "page_size" => {
                    a.page_size = match v {
                        "4096" => 4096,
                        "16384" => 16384,
                        _ => return Err(ArgError::BadPageSize),
                    }
                }
                "to_dev" => a.to_dev = CPath::new(v)?,
                "from_dev" => a.from_dev = CPath::new(v)?,
                "selftest" => {
                    a.selftest = Some(match v {
                        "panic" => SelfTest::Panic,
                        "undef" => SelfTest::Undef,
                        _ => return Err(ArgError::Unknown),
                    })
                }
                _ => return Err(ArgError::Unknown),
            }
        }
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_defaults() {
        let a = BootArgs::parse(["fw.elf", "page_size=4096", "to_dev=/tmp/x/in"], 16384).unwrap();
        assert_eq!(a.page_size, 4096);
        assert_eq!(a.to_dev.as_str(), "/tmp/x/in");
        assert_eq!(a.to_dev.with_nul().last(), Some(&0));
        assert_eq!(a.from_dev.as_str(), "from_dev.fifo");
        let d = BootArgs::parse([], 16384).unwrap();
        assert_eq!(d.page_size, 16384);
        assert_eq!(d.selftest, None);
        let t = BootArgs::parse(["selftest=undef"], 4096).unwrap();
        assert_eq!(t.selftest, Some(SelfTest::Undef));
    }

    #[test]
    fn rejects_bad_values() {
        assert_eq!(
            BootArgs::parse(["page_size=512"], 4096),
            Err(ArgError::BadPageSize)
        );
        assert_eq!(BootArgs::parse(["to_dev="], 4096), Err(ArgError::BadPath));
        let long = "to_dev=".to_owned() + &"a".repeat(300);
        assert_eq!(
            BootArgs::parse([long.as_str()], 4096),
            Err(ArgError::BadPath)
        );
        assert_eq!(
            BootArgs::parse(["colour=red"], 4096),
            Err(ArgError::Unknown)
        );
    }
}
