//! Where each die's buffers sit in the NAND DMA window: one slot per die,
//! so every die can have a command in flight. A slot holds the page data,
//! its spare bytes, the error information, the completion word and the
//! status report; every field starts on a 64-byte boundary (a whole AXI
//! burst beat group for the controllers' data masters).

/// Page data (one 16 KiB page).
pub const DATA: usize = 0;
/// Largest page a slot holds.
pub const DATA_BYTES: usize = 16 * 1024;
/// Spare bytes (user metadata; the ECC parity stays in the controller).
pub const SPARE: usize = DATA + DATA_BYTES;
/// Spare capacity: the largest spare region of the boards' NAND rows
/// (Daisyplus Micron rows carry up to 1872 spare bytes).
pub const SPARE_BYTES: usize = 2048;
/// Error information (up to 11 words on Daisyplus).
pub const ERROR_INFO: usize = SPARE + SPARE_BYTES;
/// Error information capacity.
pub const ERROR_INFO_BYTES: usize = 64;
/// Completion word of a read transfer.
pub const COMPLETION: usize = ERROR_INFO + ERROR_INFO_BYTES;
/// Status report word.
pub const REPORT: usize = COMPLETION + 64;
/// One die's slot, rounded to 4 KiB.
pub const SLOT: usize = (REPORT + 64).next_multiple_of(4096);

// The report word ends inside the slot, and slots keep 4 KiB alignment.
const _: () = assert!(REPORT + 4 <= SLOT && SLOT.is_multiple_of(4096));

/// Bytes of DMA window `dies` dies need.
pub const fn window_bytes(dies: usize) -> usize {
    dies * SLOT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_ordered_disjoint_and_aligned() {
        let fields = [
            (DATA, DATA_BYTES),
            (SPARE, SPARE_BYTES),
            (ERROR_INFO, ERROR_INFO_BYTES),
            (COMPLETION, 4),
            (REPORT, 4),
        ];
        for pair in fields.windows(2) {
            assert!(pair[0].0 + pair[0].1 <= pair[1].0);
        }
        assert!(fields.iter().all(|&(at, _)| at % 64 == 0));
        assert_eq!(SLOT, 20 * 1024);
        assert_eq!(window_bytes(64), 64 * 20 * 1024);
    }
}
