//! SmolLM2 on the CPU.
#![forbid(unsafe_code)]
