//! The vendor commands' layouts as one markdown table, rendered from
//! [`LAYOUTS`]: command, opcode, dword, bits, field, meaning.

use core::fmt::{self, Write};

use super::{BitRange, LAYOUTS, LayoutRow};

/// Every row of every vendor command, in [`LAYOUTS`] order.
pub fn layout_rows() -> impl Iterator<Item = LayoutRow> {
    LAYOUTS.into_iter().flat_map(|c| c.rows())
}

/// The markdown table of [`layout_rows`] (`Display`).
#[derive(Debug, Clone, Copy, Default)]
pub struct LayoutTable;

impl fmt::Display for LayoutTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("| command | opcode | dword | bits | field | meaning |\n")?;
        f.write_str("| --- | --- | --- | --- | --- | --- |\n")?;
        for row in layout_rows() {
            write!(
                f,
                "| {} | {:02X}h | cdw{} | {} | ",
                row.command.name(),
                row.command.opcode.0,
                row.dword,
                Bits(row.bits)
            )?;
            match row.field {
                Some(field) => {
                    write!(f, "`{}` | ", field.name)?;
                    Cell(field.meaning).fmt(f)?;
                }
                None => f.write_str("reserved | zero; a set bit is rejected")?,
            }
            f.write_str(" |\n")?;
        }
        Ok(())
    }
}

/// `31:0`, `15:0`, or `24` for one bit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bits(pub(crate) BitRange);

impl fmt::Display for Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.hi == self.0.lo {
            write!(f, "{}", self.0.lo)
        } else {
            write!(f, "{}:{}", self.0.hi, self.0.lo)
        }
    }
}

/// A doc comment as one table cell: whitespace runs (line breaks
/// included) become one space, `|` is escaped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cell<'a>(pub(crate) &'a str);

impl fmt::Display for Cell<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, word) in self.0.split_whitespace().enumerate() {
            if i > 0 {
                f.write_char(' ')?;
            }
            for part in word.split('|').enumerate() {
                if part.0 > 0 {
                    f.write_str("\\|")?;
                }
                f.write_str(part.1)?;
            }
        }
        Ok(())
    }
}
