//! The `.npy` header: a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
//!
//! A small recursive-descent parser for exactly what NumPy writes (string,
//! bool and integer-tuple values) and the formatter for the same dict.

use super::NpyError;

/// The three keys every header holds.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
}

enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

fn bad(msg: impl Into<String>) -> NpyError {
    NpyError::BadHeader(msg.into())
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), NpyError> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(bad(format!(
                "expected '{}' at byte {}",
                c as char, self.pos
            )))
        }
    }

    fn string(&mut self) -> Result<String, NpyError> {
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(bad(format!("expected a string at byte {}", self.pos))),
        };
        self.pos += 1;
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos] != quote {
            self.pos += 1;
        }
        if self.pos >= self.s.len() {
            return Err(bad("unterminated string"));
        }
        let text = std::str::from_utf8(&self.s[start..self.pos])
            .map_err(|_| bad("string is not valid text"))?
            .to_string();
        self.pos += 1;
        Ok(text)
    }

    fn word(&mut self) -> &[u8] {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_alphanumeric() {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }

    fn integer(&mut self) -> Result<usize, NpyError> {
        let w = self.word();
        let text = std::str::from_utf8(w).map_err(|_| bad("bad integer"))?;
        // Python 2 era files may write `3L`.
        let text = text.strip_suffix('L').unwrap_or(text);
        text.parse::<usize>()
            .map_err(|_| bad(format!("bad dimension {text:?}")))
    }

    fn tuple(&mut self) -> Result<Vec<usize>, NpyError> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.peek() == Some(b')') {
                self.pos += 1;
                return Ok(dims);
            }
            dims.push(self.integer()?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b')') => {}
                _ => return Err(bad("expected ',' or ')' in shape")),
            }
        }
    }

    fn value(&mut self) -> Result<Value, NpyError> {
        match self.peek() {
            Some(b'\'' | b'"') => self.string().map(Value::Str),
            Some(b'(') => self.tuple().map(Value::Tuple),
            _ => match self.word() {
                b"True" => Ok(Value::Bool(true)),
                b"False" => Ok(Value::Bool(false)),
                w => Err(bad(format!(
                    "unexpected value {:?}",
                    String::from_utf8_lossy(w)
                ))),
            },
        }
    }
}

/// Parses the header dict; all three keys are required, others are rejected.
pub(super) fn parse(text: &str) -> Result<Header, NpyError> {
    let mut c = Cursor {
        s: text.as_bytes(),
        pos: 0,
    };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    c.expect(b'{')?;
    loop {
        if c.peek() == Some(b'}') {
            c.pos += 1;
            break;
        }
        let key = c.string()?;
        c.expect(b':')?;
        let value = c.value()?;
        match (key.as_str(), value) {
            ("descr", Value::Str(s)) => descr = Some(s),
            ("fortran_order", Value::Bool(b)) => fortran = Some(b),
            ("shape", Value::Tuple(t)) => shape = Some(t),
            (k @ ("descr" | "fortran_order" | "shape"), _) => {
                return Err(bad(format!("key '{k}' has a value of the wrong type")));
            }
            (k, _) => return Err(bad(format!("unexpected key '{k}'"))),
        }
        match c.peek() {
            Some(b',') => c.pos += 1,
            Some(b'}') => {}
            _ => return Err(bad("expected ',' or '}' in header dict")),
        }
    }
    if c.peek().is_some() {
        return Err(bad("trailing characters after the header dict"));
    }
    Ok(Header {
        descr: descr.ok_or_else(|| bad("missing key 'descr'"))?,
        fortran_order: fortran.ok_or_else(|| bad("missing key 'fortran_order'"))?,
        shape: shape.ok_or_else(|| bad("missing key 'shape'"))?,
    })
}

/// The dict NumPy would write (without padding or newline).
pub(super) fn format(descr: &str, shape: &[usize]) -> String {
    let dims = match shape {
        [one] => format!("({one},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    };
    format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}")
}
