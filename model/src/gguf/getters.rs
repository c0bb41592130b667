//! Typed metadata getters on `Gguf`: a missing key is `MissingKey`, a value
//! of another type (or an integer out of the asked type's range) is
//! `WrongType`. Integer getters accept any integer type that converts
//! losslessly, because writers differ in the widths they pick.

use super::file::Gguf;
use super::value::{Array, Value};
use crate::ModelError;

fn wrong(key: &str, expected: &'static str, found: &Value) -> ModelError {
    ModelError::WrongType {
        key: key.to_owned(),
        expected,
        found: found.describe(),
    }
}

impl Gguf {
    fn need(&self, key: &str) -> Result<&Value, ModelError> {
        self.get(key)
            .ok_or_else(|| ModelError::MissingKey(key.to_owned()))
    }

    fn int<T: TryFrom<i128>>(&self, key: &str, expected: &'static str) -> Result<T, ModelError> {
        let v = self.need(key)?;
        v.as_i128()
            .and_then(|i| T::try_from(i).ok())
            .ok_or_else(|| wrong(key, expected, v))
    }

    /// True when `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// An integer that fits in u32.
    pub fn get_u32(&self, key: &str) -> Result<u32, ModelError> {
        self.int(key, "an integer fitting u32")
    }

    /// An integer that fits in i32.
    pub fn get_i32(&self, key: &str) -> Result<i32, ModelError> {
        self.int(key, "an integer fitting i32")
    }

    /// An integer that fits in u64.
    pub fn get_u64(&self, key: &str) -> Result<u64, ModelError> {
        self.int(key, "an integer fitting u64")
    }

    /// An integer that fits in i64.
    pub fn get_i64(&self, key: &str) -> Result<i64, ModelError> {
        self.int(key, "an integer fitting i64")
    }

    /// An integer that fits in usize.
    pub fn get_usize(&self, key: &str) -> Result<usize, ModelError> {
        self.int(key, "an integer fitting usize")
    }

    /// An f32 (an f64 is narrowed).
    pub fn get_f32(&self, key: &str) -> Result<f32, ModelError> {
        match self.need(key)? {
            Value::F32(v) => Ok(*v),
            Value::F64(v) => Ok(*v as f32),
            other => Err(wrong(key, "f32", other)),
        }
    }

    /// An f64 (an f32 is widened).
    pub fn get_f64(&self, key: &str) -> Result<f64, ModelError> {
        match self.need(key)? {
            Value::F32(v) => Ok(f64::from(*v)),
            Value::F64(v) => Ok(*v),
            other => Err(wrong(key, "f64", other)),
        }
    }

    /// A bool.
    pub fn get_bool(&self, key: &str) -> Result<bool, ModelError> {
        match self.need(key)? {
            Value::Bool(v) => Ok(*v),
            other => Err(wrong(key, "bool", other)),
        }
    }

    /// A string.
    pub fn get_str(&self, key: &str) -> Result<&str, ModelError> {
        match self.need(key)? {
            Value::String(v) => Ok(v),
            other => Err(wrong(key, "string", other)),
        }
    }

    /// An array of any element type.
    pub fn get_array(&self, key: &str) -> Result<&Array, ModelError> {
        match self.need(key)? {
            Value::Array(a) => Ok(a),
            other => Err(wrong(key, "array", other)),
        }
    }

    /// An array of strings.
    pub fn get_str_array(&self, key: &str) -> Result<&[String], ModelError> {
        match self.need(key)? {
            Value::Array(Array::String(v)) => Ok(v),
            other => Err(wrong(key, "array of string", other)),
        }
    }

    /// An array of i32.
    pub fn get_i32_array(&self, key: &str) -> Result<&[i32], ModelError> {
        match self.need(key)? {
            Value::Array(Array::I32(v)) => Ok(v),
            other => Err(wrong(key, "array of i32", other)),
        }
    }

    /// An array of u32.
    pub fn get_u32_array(&self, key: &str) -> Result<&[u32], ModelError> {
        match self.need(key)? {
            Value::Array(Array::U32(v)) => Ok(v),
            other => Err(wrong(key, "array of u32", other)),
        }
    }

    /// An array of f32.
    pub fn get_f32_array(&self, key: &str) -> Result<&[f32], ModelError> {
        match self.need(key)? {
            Value::Array(Array::F32(v)) => Ok(v),
            other => Err(wrong(key, "array of f32", other)),
        }
    }
}
