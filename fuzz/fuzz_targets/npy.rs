//! The `.npy` reader on arbitrary files: an array or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = instinfer::npy::NpyArray::parse(data) {
        let _ = a.to_f32();
        let _ = a.to_bytes();
    }
});
