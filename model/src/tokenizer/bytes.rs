//! GPT-2's byte↔unicode mapping: byte-level BPE vocabularies spell every
//! byte as a printable char (printable Latin-1 bytes as themselves, the
//! other 68 bytes as U+0100 onwards, so a space is `Ġ`).

/// Char for each byte.
pub(super) fn byte_to_char() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut shifted = 0u32;
    for (b, slot) in (0u8..=255).zip(table.iter_mut()) {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        *slot = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(256 + shifted).unwrap_or(char::REPLACEMENT_CHARACTER);
            shifted += 1;
            c
        };
    }
    table
}

/// Byte for each mapped char below U+0144 (the highest char the mapping uses).
pub(super) fn char_to_byte() -> Vec<Option<u8>> {
    let mut table = vec![None; 0x144];
    for (b, c) in (0u8..=255).zip(byte_to_char()) {
        if let Some(slot) = table.get_mut(c as usize) {
            *slot = Some(b);
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_is_a_bijection_with_known_points() {
        let fwd = byte_to_char();
        let back = char_to_byte();
        assert_eq!(fwd[b' ' as usize], 'Ġ');
        assert_eq!(fwd[b'\n' as usize], 'Ċ');
        assert_eq!(fwd[b'A' as usize], 'A');
        for (b, c) in fwd.iter().enumerate() {
            assert_eq!(back[*c as usize], Some(b as u8));
        }
    }
}
