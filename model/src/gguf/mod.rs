//! GGUF: the model file format. Owns parsing (header, metadata values,
//! tensor table, data bounds), typed metadata access and a small writer.

mod cursor;
mod file;
mod getters;
mod tensor_info;
mod value;
mod writer;

#[cfg(test)]
mod tests;

pub use file::{DEFAULT_ALIGNMENT, Gguf, MAGIC};
pub use tensor_info::{MAX_DIMS, TensorInfo};
pub use value::{Array, Value, ValueType};
pub use writer::GgufWriter;
