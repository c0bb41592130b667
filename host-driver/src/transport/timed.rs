//! [`TimedReader`]: a byte stream whose reads give up after a bound, for
//! links whose far end can hang (the firmware under QEMU speaks through a
//! named pipe, and a read of a silent pipe blocks forever).
//!
//! A thread moves the stream's bytes into a channel; a read waits on the
//! channel at most the bound and then fails with `TimedOut`. End of stream
//! reads as 0, and a read error of the stream is passed on once.

use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

/// Reads of `R` bounded by a timeout.
#[derive(Debug)]
pub struct TimedReader {
    rx: Receiver<io::Result<Vec<u8>>>,
    buf: Vec<u8>,
    at: usize,
    timeout: Duration,
    ended: bool,
}

impl TimedReader {
    /// Starts the reading thread over `inner`; each read waits at most
    /// `timeout` for bytes.
    pub fn new<R: Read + Send + 'static>(mut inner: R, timeout: Duration) -> Self {
        let (tx, rx) = mpsc::sync_channel(64);
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 64 << 10];
            loop {
                match inner.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx.send(Ok(chunk[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        break;
                    }
                }
            }
        });
        Self {
            rx,
            buf: Vec::new(),
            at: 0,
            timeout,
            ended: false,
        }
    }

    /// The bound of one read.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl Read for TimedReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.at == self.buf.len() {
            if self.ended {
                return Ok(0);
            }
            match self.rx.recv_timeout(self.timeout) {
                Ok(Ok(bytes)) => {
                    self.buf = bytes;
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    return Ok(0);
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no bytes from the device within {:?}", self.timeout),
                    ));
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    #[test]
    fn bytes_pass_a_silence_times_out_and_the_end_reads_as_zero() {
        let (mut far, near) = UnixStream::pair().unwrap();
        let mut r = TimedReader::new(near, Duration::from_millis(50));
        far.write_all(b"hello, board").unwrap();
        let mut got = [0u8; 12];
        r.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello, board");
        // Nothing more: the read gives up instead of blocking.
        let e = r.read(&mut got).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        // Late bytes are still delivered after a timeout.
        far.write_all(b"late").unwrap();
        let mut late = [0u8; 4];
        r.read_exact(&mut late).unwrap();
        assert_eq!(&late, b"late");
        drop(far);
        assert_eq!(r.read(&mut got).unwrap(), 0);
        assert_eq!(r.read(&mut got).unwrap(), 0);
    }
}
