//! [`board_ram::ByteLink`] over two semihosting files: the host's named
//! pipes (one each way). Reads loop until the buffer is full (a pipe read
//! returns what is there); end of file means the host went away.

use board_ram::ByteLink;
use semihosting::fs::File;
use semihosting::io::{Read, Write};

/// Why the link failed.
#[derive(Debug)]
pub enum SemiLinkError {
    /// A semihosting call failed (shown on the console through `Debug`).
    #[allow(dead_code)]
    Io(semihosting::io::Error),
    /// The host closed its end.
    Closed,
}

/// The board link over semihosting files.
#[derive(Debug)]
pub struct SemiLink {
    pub(crate) rx: File,
    pub(crate) tx: File,
}

impl ByteLink for SemiLink {
    type Error = SemiLinkError;

    fn read_exact(&mut self, mut buf: &mut [u8]) -> Result<(), SemiLinkError> {
        while !buf.is_empty() {
            match self.rx.read(buf).map_err(SemiLinkError::Io)? {
                0 => return Err(SemiLinkError::Closed),
                n => buf = &mut buf[n..],
            }
        }
        Ok(())
    }

    fn write_all(&mut self, data: &[u8]) -> Result<(), SemiLinkError> {
        self.tx.write_all(data).map_err(SemiLinkError::Io)
    }
}
