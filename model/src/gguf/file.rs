//! `Gguf`: a whole GGUF file in memory, its header parsed and checked.
//!
//! The reader owns the bytes; tensor data is handed out as slices of them.
//! Parsing checks every count against the bytes left and every known-type
//! tensor against the data section, so a corrupt file fails here with a
//! message instead of later with a panic.

use std::collections::HashMap;
use std::path::Path;

use super::cursor::Cursor;
use super::tensor_info::TensorInfo;
use super::value::{Value, ValueType};
use crate::{ModelError, QTensor};

/// `GGUF` read as a little-endian u32.
pub const MAGIC: u32 = 0x4655_4747;
/// Data alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// A parsed GGUF file.
#[derive(Debug)]
pub struct Gguf {
    version: u32,
    metadata: Vec<(String, Value)>,
    by_key: HashMap<String, usize>,
    tensors: Vec<TensorInfo>,
    by_name: HashMap<String, usize>,
    data_start: usize,
    bytes: Vec<u8>,
}

impl Gguf {
    /// Reads and parses the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| ModelError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(bytes)
    }

    /// Parses a GGUF file held in memory.
    pub fn parse(bytes: Vec<u8>) -> Result<Self, ModelError> {
        let mut cur = Cursor::new(&bytes);
        let magic = cur.u32("magic")?;
        if magic != MAGIC {
            return Err(ModelError::BadMagic(magic));
        }
        let version = cur.u32("version")?;
        if !(2..=3).contains(&version) {
            return Err(ModelError::UnsupportedVersion(version));
        }
        // Smallest tensor entry: name length, dims count, type, offset.
        let n_tensors = cur.count("tensor count", 24)?;
        // Smallest key/value: key length, type tag, one byte of value.
        let n_kv = cur.count("metadata count", 13)?;

        let mut metadata = Vec::with_capacity(n_kv);
        let mut by_key = HashMap::with_capacity(n_kv);
        for _ in 0..n_kv {
            let key = cur.string("metadata key")?;
            let tag = cur.u32("metadata type")?;
            let ty = ValueType::from_tag(tag)
                .ok_or_else(|| cur.corrupt(format!("key `{key}` has unknown value type {tag}")))?;
            let value = Value::read(&mut cur, ty, 0)?;
            if by_key.insert(key.clone(), metadata.len()).is_some() {
                return Err(cur.corrupt(format!("metadata key `{key}` appears twice")));
            }
            metadata.push((key, value));
        }

        let mut tensors = Vec::with_capacity(n_tensors);
        let mut by_name = HashMap::with_capacity(n_tensors);
        for _ in 0..n_tensors {
            let info = TensorInfo::read(&mut cur)?;
            if by_name.insert(info.name.clone(), tensors.len()).is_some() {
                return Err(cur.corrupt(format!("tensor `{}` appears twice", info.name)));
            }
            tensors.push(info);
        }

        let alignment = match metadata.get(
            by_key
                .get("general.alignment")
                .copied()
                .unwrap_or(usize::MAX),
        ) {
            None => DEFAULT_ALIGNMENT,
            Some((_, Value::U32(a))) if *a != 0 && a.is_power_of_two() => u64::from(*a),
            Some((_, other)) => {
                return Err(ModelError::WrongType {
                    key: "general.alignment".into(),
                    expected: "a power-of-two u32",
                    found: other.describe(),
                });
            }
        };
        let header_end = cur.pos() as u64;
        let data_start = header_end.div_ceil(alignment) * alignment;
        let data_len = (bytes.len() as u64).saturating_sub(data_start);
        if data_start > bytes.len() as u64 && !tensors.is_empty() {
            return Err(ModelError::Truncated {
                what: "data section",
                offset: bytes.len(),
                needed: data_start - bytes.len() as u64,
                available: 0,
            });
        }
        for t in &tensors {
            if t.offset % alignment != 0 {
                return Err(ModelError::Corrupt {
                    offset: data_start as usize,
                    reason: format!(
                        "tensor `{}` offset {} is not a multiple of {alignment}",
                        t.name, t.offset
                    ),
                });
            }
            let end = t.offset.checked_add(t.size.unwrap_or(0));
            if end.is_none_or(|end| end > data_len) {
                return Err(ModelError::Truncated {
                    what: "tensor data",
                    offset: data_start.saturating_add(t.offset).min(usize::MAX as u64) as usize,
                    needed: t.size.unwrap_or(0),
                    available: data_len.saturating_sub(t.offset) as usize,
                });
            }
        }
        Ok(Self {
            version,
            metadata,
            by_key,
            tensors,
            by_name,
            data_start: data_start.min(bytes.len() as u64) as usize,
            bytes,
        })
    }

    /// The GGUF version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// All metadata in file order.
    pub fn metadata(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.metadata.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.by_key
            .get(key)
            .and_then(|&i| self.metadata.get(i))
            .map(|(_, v)| v)
    }

    /// The tensor table in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The table entry of tensor `name`, if present.
    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.by_name.get(name).and_then(|&i| self.tensors.get(i))
    }

    /// The raw data of tensor `name` (its type must be supported).
    pub fn tensor_data(&self, name: &str) -> Result<&[u8], ModelError> {
        let info = self
            .tensor_info(name)
            .ok_or_else(|| ModelError::MissingTensor(name.to_owned()))?;
        info.kind()?;
        let start = (self.data_start as u64).checked_add(info.offset);
        let end = start.and_then(|s| s.checked_add(info.size.unwrap_or(0)));
        match (start, end) {
            (Some(s), Some(e)) if e <= self.bytes.len() as u64 => {
                Ok(&self.bytes[s as usize..e as usize])
            }
            _ => Err(ModelError::TensorData(format!(
                "tensor `{name}` lies outside the file"
            ))),
        }
    }

    /// Tensor `name` as a matrix: `cols = dims[0]`, `rows` = the product of
    /// the other dims. Copies the data.
    pub fn tensor(&self, name: &str) -> Result<QTensor, ModelError> {
        let data = self.tensor_data(name)?;
        let info = self
            .tensor_info(name)
            .ok_or_else(|| ModelError::MissingTensor(name.to_owned()))?;
        let kind = info.kind()?;
        let cols = info.dims.first().copied().unwrap_or(1);
        // Cannot overflow: the reader bounded the product of the dims.
        let rows: u64 = info
            .dims
            .iter()
            .skip(1)
            .fold(1u64, |a, &d| a.saturating_mul(d));
        let (Ok(rows), Ok(cols)) = (usize::try_from(rows), usize::try_from(cols)) else {
            return Err(ModelError::TensorData(format!(
                "tensor `{name}` is too large"
            )));
        };
        QTensor::new(kind, rows, cols, data.to_vec())
    }
}
