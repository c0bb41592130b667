//! The one declaration of each vendor command's dword layout, and what
//! follows from it.
//!
//! [`vendor_command!`] declares a command once: each field with its type,
//! its bits in cdw10..cdw15 and its meaning (the field's doc comment). From
//! that it makes the struct, the builder (`to_sqe`), the unchecked field
//! reader the parser starts from, and [`CommandLayout`]: the same positions
//! as data, which gives the reserved bits (everything no field claims), the
//! check that they are zero, and the rows of the documented table.

use crate::{Opcode, ProtoError, Sqe};

use super::reserved;

/// A field type and its width on the wire. A field's bits must be exactly
/// this wide, so encoding never truncates and decoding always yields a
/// value.
pub(crate) trait FieldBits: Copy {
    /// Bits on the wire.
    const WIDTH: u32;
    /// The value, right-aligned.
    fn to_bits(self) -> u32;
    /// The value from its bits, right-aligned, `WIDTH` wide.
    fn from_bits(bits: u32) -> Self;
}

impl FieldBits for u32 {
    const WIDTH: u32 = 32;
    fn to_bits(self) -> u32 {
        self
    }
    fn from_bits(bits: u32) -> Self {
        bits
    }
}

impl FieldBits for u16 {
    const WIDTH: u32 = 16;
    fn to_bits(self) -> u32 {
        self.into()
    }
    fn from_bits(bits: u32) -> Self {
        bits as u16
    }
}

impl FieldBits for u8 {
    const WIDTH: u32 = 8;
    fn to_bits(self) -> u32 {
        self.into()
    }
    fn from_bits(bits: u32) -> Self {
        bits as u8
    }
}

impl FieldBits for bool {
    const WIDTH: u32 = 1;
    fn to_bits(self) -> u32 {
        self.into()
    }
    fn from_bits(bits: u32) -> Self {
        bits != 0
    }
}

/// Bits `hi:lo` (inclusive) of a dword.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BitRange {
    /// Highest bit.
    pub hi: u8,
    /// Lowest bit.
    pub lo: u8,
}

impl BitRange {
    /// Bits `hi:lo`; a compile-time error unless `lo ≤ hi ≤ 31`.
    pub const fn new(hi: u8, lo: u8) -> Self {
        assert!(lo <= hi && hi <= 31, "bit range out of a dword");
        BitRange { hi, lo }
    }

    /// The range's bits set, in place.
    pub const fn mask(self) -> u32 {
        (u32::MAX >> (31 - (self.hi - self.lo))) << self.lo
    }

    /// The field's value in `dword`, right-aligned.
    pub const fn get(self, dword: u32) -> u32 {
        (dword & self.mask()) >> self.lo
    }

    /// `value` moved into place (bits above the width dropped).
    pub const fn put(self, value: u32) -> u32 {
        (value << self.lo) & self.mask()
    }
}

/// One field of a vendor command: where it lies and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldLayout {
    /// Command dword, 10..=15.
    pub dword: u8,
    /// Its bits in the dword.
    pub bits: BitRange,
    /// The field's name in the command struct.
    pub name: &'static str,
    /// What it holds (the field's doc comment).
    pub meaning: &'static str,
}

impl FieldLayout {
    /// A field in `dword` (`"cdw10"`..`"cdw15"`) at bits `hi:lo`.
    pub const fn new(
        dword: &str,
        hi: u8,
        lo: u8,
        name: &'static str,
        meaning: &'static str,
    ) -> Self {
        assert!(!meaning.is_empty(), "every field says what it holds");
        FieldLayout {
            dword: dword_index(dword),
            bits: BitRange::new(hi, lo),
            name,
            meaning,
        }
    }
}

/// `"cdw10"`..`"cdw15"` → 10..=15; a compile-time error for anything else.
const fn dword_index(name: &str) -> u8 {
    match name.as_bytes() {
        [b'c', b'd', b'w', b'1', d @ b'0'..=b'5'] => 10 + (*d - b'0'),
        _ => panic!("vendor fields live in cdw10..cdw15"),
    }
}

/// First command dword a vendor command may use.
pub(crate) const FIRST_DWORD: u8 = 10;
/// Command dwords a vendor command may use (cdw10..cdw15).
pub(crate) const DWORDS: usize = 6;

/// `cdwN` or `cdwN[hi:lo]`: where a dword's reserved bits are, as
/// [`ProtoError::Reserved`] names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ReservedName {
    buf: [u8; 12],
    len: usize,
}

impl ReservedName {
    const fn new(dword: u8, mask: u32) -> Self {
        let mut n = ReservedName {
            buf: [0; 12],
            len: 0,
        };
        n.push_str(b"cdw");
        n.push_num(dword);
        if mask != u32::MAX && mask != 0 {
            let hi = 31 - mask.leading_zeros() as u8;
            let lo = mask.trailing_zeros() as u8;
            assert!(
                BitRange::new(hi, lo).mask() == mask,
                "a dword's reserved bits form one run"
            );
            n.push_str(b"[");
            n.push_num(hi);
            n.push_str(b":");
            n.push_num(lo);
            n.push_str(b"]");
        }
        n
    }

    const fn push_str(&mut self, s: &[u8]) {
        let mut i = 0;
        while i < s.len() {
            self.buf[self.len] = s[i];
            self.len += 1;
            i += 1;
        }
    }

    const fn push_num(&mut self, v: u8) {
        if v >= 10 {
            self.push_str(&[b'0' + v / 10]);
        }
        self.push_str(&[b'0' + v % 10]);
    }

    fn as_str(&self) -> &str {
        // Only ASCII is ever pushed.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("cdw")
    }
}

/// A vendor command's opcode, payload and fields; every bit of cdw10..cdw15
/// that no field claims is reserved (zero, checked by `parse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommandLayout {
    /// The command's opcode (its name is [`Opcode::vendor_io_name`]).
    pub opcode: Opcode,
    /// What the data buffer holds (`"none"` for commands without data).
    pub data: &'static str,
    /// The fields, in the struct's order.
    pub fields: &'static [FieldLayout],
    reserved: [u32; DWORDS],
    reserved_names: [ReservedName; DWORDS],
}

impl CommandLayout {
    /// A layout; a compile-time error if two fields overlap or a dword's
    /// reserved bits are not one run.
    pub const fn new(opcode: Opcode, data: &'static str, fields: &'static [FieldLayout]) -> Self {
        let mut used = [0u32; DWORDS];
        let mut i = 0;
        while i < fields.len() {
            let f = &fields[i];
            let d = (f.dword - FIRST_DWORD) as usize;
            assert!(used[d] & f.bits.mask() == 0, "vendor fields overlap");
            used[d] |= f.bits.mask();
            i += 1;
        }
        let mut reserved = [0u32; DWORDS];
        let mut reserved_names = [ReservedName {
            buf: [0; 12],
            len: 0,
        }; DWORDS];
        let mut d = 0;
        while d < DWORDS {
            reserved[d] = !used[d];
            reserved_names[d] = ReservedName::new(FIRST_DWORD + d as u8, reserved[d]);
            d += 1;
        }
        CommandLayout {
            opcode,
            data,
            fields,
            reserved,
            reserved_names,
        }
    }

    /// The command's name (`SEQ_OPEN`, ...).
    pub const fn name(&self) -> &'static str {
        match self.opcode.vendor_io_name() {
            Some(n) => n,
            None => "?",
        }
    }

    /// Reserved bits of `dword` (10..=15).
    pub const fn reserved_mask(&self, dword: u8) -> u32 {
        self.reserved[(dword - FIRST_DWORD) as usize]
    }

    /// [`ProtoError::Reserved`] for the first dword, in order, with a
    /// reserved bit set; the error names the bits and carries the dword.
    pub fn check_reserved(&'static self, sqe: &Sqe) -> Result<(), ProtoError> {
        for (i, v) in dwords(sqe).into_iter().enumerate() {
            if self.reserved[i] != 0 {
                reserved(self.reserved_names[i].as_str(), v, self.reserved[i].into())?;
            }
        }
        Ok(())
    }

    /// The field lying at bit `lo` of `dword`, if any.
    fn field_at(&self, dword: u8, lo: u8) -> Option<&'static FieldLayout> {
        self.fields
            .iter()
            .find(|f| f.dword == dword && f.bits.lo == lo)
    }

    /// Every bit range of cdw10..cdw15 in order: the fields and, between
    /// them, the reserved runs.
    pub fn rows(&'static self) -> LayoutRows {
        LayoutRows {
            command: self,
            dword: FIRST_DWORD,
            bit: 0,
        }
    }
}

/// cdw10..cdw15 of `sqe`.
pub(crate) const fn dwords(sqe: &Sqe) -> [u32; DWORDS] {
    [
        sqe.cdw10, sqe.cdw11, sqe.cdw12, sqe.cdw13, sqe.cdw14, sqe.cdw15,
    ]
}

/// One row of the layout table: a field, or a reserved run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LayoutRow {
    /// The command.
    pub command: &'static CommandLayout,
    /// Command dword, 10..=15.
    pub dword: u8,
    /// Its bits in the dword.
    pub bits: BitRange,
    /// The field; `None` for reserved bits.
    pub field: Option<&'static FieldLayout>,
}

/// The rows of one command, dword by dword, low bits first.
#[derive(Debug, Clone)]
pub struct LayoutRows {
    command: &'static CommandLayout,
    dword: u8,
    bit: u8,
}

impl Iterator for LayoutRows {
    type Item = LayoutRow;

    fn next(&mut self) -> Option<LayoutRow> {
        if self.dword >= FIRST_DWORD + DWORDS as u8 {
            return None;
        }
        let (dword, lo) = (self.dword, self.bit);
        let (bits, field) = match self.command.field_at(dword, lo) {
            Some(f) => (f.bits, Some(f)),
            None => {
                // Up to the next field in this dword, or bit 31.
                let mut hi = lo;
                while hi < 31 && self.command.field_at(dword, hi + 1).is_none() {
                    hi += 1;
                }
                (BitRange::new(hi, lo), None)
            }
        };
        if bits.hi == 31 {
            self.dword += 1;
            self.bit = 0;
        } else {
            self.bit = bits.hi + 1;
        }
        Some(LayoutRow {
            command: self.command,
            dword,
            bits,
            field,
        })
    }
}

/// Declares a vendor command once: the struct, its [`CommandLayout`] as
/// `LAYOUT`, `to_sqe`, and `fields_of` (the fields as they lie in an SQE,
/// unchecked; `parse` checks).
///
/// ```text
/// vendor_command! {
///     /// Docs.
///     #[derive(...)]
///     pub struct Name(SEQ_OPEN, data "what the buffer holds") {
///         /// What the field holds (also its row in the table).
///         pub field: u16 = cdw12[15:0],
///     }
/// }
/// ```
macro_rules! vendor_command {
    (
        $(#[$attr:meta])*
        pub struct $name:ident($op:ident, data $data:literal) {
            $(
                $(#[doc = $doc:literal])*
                pub $field:ident: $ty:ty = $dw:ident[$hi:literal : $lo:literal],
            )*
        }
    ) => {
        $(#[$attr])*
        ///
        #[doc = concat!("Data: ", $data, ".")]
        ///
        /// Where each field lies: [`Self::LAYOUT`], tabled with every
        /// command's in `docs/vendor-commands.md`.
        pub struct $name {
            $(
                $(#[doc = $doc])*
                pub $field: $ty,
            )*
        }

        impl $name {
            /// The command's dword layout.
            pub const LAYOUT: &'static $crate::vendor::CommandLayout =
                &$crate::vendor::CommandLayout::new(
                    $crate::Opcode::$op,
                    $data,
                    &[$(
                        $crate::vendor::FieldLayout::new(
                            stringify!($dw),
                            $hi,
                            $lo,
                            stringify!($field),
                            concat!($($doc, "\n"),*),
                        ),
                    )*],
                );

            /// Encodes (cid and PRPs zero).
            pub fn to_sqe(&self) -> $crate::Sqe {
                let mut sqe = $crate::vendor::base_sqe($crate::Opcode::$op);
                $(
                    sqe.$dw |= $crate::vendor::BitRange::new($hi, $lo)
                        .put($crate::vendor::layout::FieldBits::to_bits(self.$field));
                )*
                sqe
            }

            /// The fields as they lie in `sqe`, nothing checked.
            fn fields_of(sqe: &$crate::Sqe) -> Self {
                $name {
                    $(
                        $field: $crate::vendor::layout::FieldBits::from_bits(
                            $crate::vendor::BitRange::new($hi, $lo).get(sqe.$dw),
                        ),
                    )*
                }
            }
        }

        // Each field exactly as wide as its type; the layout itself checked
        // (no overlap) at compile time.
        const _: () = {
            $(
                assert!(
                    $hi - $lo + 1
                        == <$ty as $crate::vendor::layout::FieldBits>::WIDTH,
                    concat!(stringify!($name), ".", stringify!($field), ": bits ≠ type width"),
                );
            )*
            let _ = $name::LAYOUT;
        };
    };
}

pub(crate) use vendor_command;
