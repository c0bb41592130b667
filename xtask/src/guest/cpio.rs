//! A `newc` cpio archive (the initramfs format the kernel unpacks),
//! uncompressed.

/// One archive member.
pub enum Entry<'a> {
    /// A directory.
    Dir(&'a str),
    /// A file with its mode bits and contents.
    File(&'a str, u32, &'a [u8]),
}

fn header(out: &mut Vec<u8>, ino: usize, mode: u32, size: usize, name: &str) {
    let fields = [
        ino as u32,
        mode,
        0,
        0,
        1,
        0,
        size as u32,
        0,
        0,
        0,
        0,
        name.len() as u32 + 1,
        0,
    ];
    out.extend_from_slice(b"070701");
    for f in fields {
        out.extend_from_slice(format!("{f:08X}").as_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    pad4(out);
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

/// The archive of `entries`, with the trailer.
pub fn archive(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        match e {
            Entry::Dir(name) => header(&mut out, i + 1, 0o040755, 0, name),
            Entry::File(name, mode, data) => {
                header(&mut out, i + 1, 0o100000 | mode, data.len(), name);
                out.extend_from_slice(data);
                pad4(&mut out);
            }
        }
    }
    header(&mut out, 0, 0, 0, "TRAILER!!!");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_layout() {
        let a = archive(&[Entry::Dir("dev"), Entry::File("init", 0o755, b"abc")]);
        assert!(a.starts_with(b"070701"));
        assert_eq!(a.len() % 4, 0);
        // Header (110 bytes) + "dev\0" padded to 116, then the file.
        assert_eq!(&a[110..113], b"dev");
        let file = &a[116..];
        assert!(file.starts_with(b"070701"));
        assert_eq!(&file[14..22], b"000081ED", "regular file, 0755");
        assert_eq!(&file[54..62], b"00000003", "size");
        assert!(a.windows(10).any(|w| w == b"TRAILER!!!"));
    }
}
