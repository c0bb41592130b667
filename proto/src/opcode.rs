//! Command opcodes and the data direction encoded in their low two bits.
//!
//! [`Opcode`] is open: any byte is an opcode, the associated constants name
//! the ones InstCSD uses. As in NVMe, bits `[1:0]` give the data direction
//! (00 none, 01 host→device, 10 device→host, 11 bidirectional); the InstCSD
//! vendor I/O opcodes are chosen to honour this.

use core::fmt;

/// Direction of a command's data transfer, from opcode bits `[1:0]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataDirection {
    /// No data (`00`).
    None,
    /// Host to device, the device reads host memory (`01`).
    HostToDevice,
    /// Device to host, the device writes host memory (`10`).
    DeviceToHost,
    /// Both (`11`).
    Bidirectional,
}

/// An NVMe opcode (admin or I/O, the queue tells which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Opcode(pub u8);

impl Opcode {
    /// Admin: Get Log Page.
    pub const GET_LOG_PAGE: Opcode = Opcode(0x02);
    /// Admin: Identify.
    pub const IDENTIFY: Opcode = Opcode(0x06);

    /// Vendor I/O: open a sequence (no data).
    pub const SEQ_OPEN: Opcode = Opcode(0x80);
    /// Vendor I/O: append K/V tokens to one layer (host→device).
    pub const KV_APPEND: Opcode = Opcode(0x81);
    /// Vendor I/O: close a sequence and free its flash (no data).
    pub const SEQ_CLOSE: Opcode = Opcode(0x84);
    /// Vendor I/O: submit a decode-attention query (host→device).
    pub const DECODE_SUBMIT: Opcode = Opcode(0x85);
    /// Vendor I/O: fetch a decode-attention result (device→host).
    pub const DECODE_FETCH: Opcode = Opcode(0x86);

    /// Data direction from bits `[1:0]`.
    pub const fn direction(self) -> DataDirection {
        match self.0 & 0b11 {
            0b00 => DataDirection::None,
            0b01 => DataDirection::HostToDevice,
            0b10 => DataDirection::DeviceToHost,
            _ => DataDirection::Bidirectional,
        }
    }

    /// In the vendor-specific I/O range `80h..=FFh`.
    pub const fn is_vendor_io(self) -> bool {
        self.0 >= 0x80
    }

    /// In the vendor-specific admin range `C0h..=FFh`.
    pub const fn is_vendor_admin(self) -> bool {
        self.0 >= 0xC0
    }

    /// Name of an InstCSD vendor I/O opcode.
    pub const fn vendor_io_name(self) -> Option<&'static str> {
        match self {
            Self::SEQ_OPEN => Some("SEQ_OPEN"),
            Self::KV_APPEND => Some("KV_APPEND"),
            Self::SEQ_CLOSE => Some("SEQ_CLOSE"),
            Self::DECODE_SUBMIT => Some("DECODE_SUBMIT"),
            Self::DECODE_FETCH => Some("DECODE_FETCH"),
            _ => None,
        }
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.vendor_io_name() {
            Some(n) => write!(f, "{n} ({:#04x})", self.0),
            None => write!(f, "{:#04x}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn direction_bits() {
        use DataDirection::*;
        assert_eq!(Opcode::SEQ_OPEN.direction(), None);
        assert_eq!(Opcode::SEQ_CLOSE.direction(), None);
        assert_eq!(Opcode::KV_APPEND.direction(), HostToDevice);
        assert_eq!(Opcode::DECODE_SUBMIT.direction(), HostToDevice);
        assert_eq!(Opcode::DECODE_FETCH.direction(), DeviceToHost);
        assert_eq!(Opcode::IDENTIFY.direction(), DeviceToHost);
        assert_eq!(Opcode::GET_LOG_PAGE.direction(), DeviceToHost);
        assert_eq!(Opcode(0x83).direction(), Bidirectional);
    }

    #[test]
    fn vendor_ranges() {
        for op in [
            Opcode::SEQ_OPEN,
            Opcode::KV_APPEND,
            Opcode::SEQ_CLOSE,
            Opcode::DECODE_SUBMIT,
            Opcode::DECODE_FETCH,
        ] {
            assert!(op.is_vendor_io());
            assert!(op.vendor_io_name().is_some());
        }
        assert!(!Opcode(0x7F).is_vendor_io());
        assert!(!Opcode::IDENTIFY.is_vendor_io());
        assert!(!Opcode(0xBF).is_vendor_admin());
        assert!(Opcode(0xC0).is_vendor_admin());
        assert!(Opcode(0xFF).is_vendor_admin());
        assert_eq!(Opcode::DECODE_FETCH.to_string(), "DECODE_FETCH (0x86)");
        assert_eq!(Opcode(0x99).to_string(), "0x99");
    }
}
