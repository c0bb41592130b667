//! The C functions called from Rust: results, refusals, caught errors.

use std::ffi::{CStr, c_char};
use std::ptr;

use crate::ffi::*;
use crate::*;

fn sim() -> *mut instinfer_device {
    let spec: *const c_char = c"sim".as_ptr();
    let mut dev = ptr::null_mut();
    // SAFETY: one valid spec, a writable out pointer.
    assert_eq!(unsafe { instinfer_open(&spec, 1, 4096, &mut dev) }, 0);
    dev
}

fn last() -> String {
    // SAFETY: a NUL-terminated string owned by this thread.
    unsafe { CStr::from_ptr(instinfer_last_error()) }
        .to_string_lossy()
        .into_owned()
}

const SHAPE: instinfer_shape = instinfer_shape {
    layers: 1,
    q_heads: 4,
    kv_heads: 2,
    head_dim: 32,
};

#[test]
fn open_identify_append_decode() {
    let dev = sim();
    let mut caps = instinfer_caps::default();
    // SAFETY: a live handle and writable structs, below likewise.
    unsafe {
        assert_eq!(instinfer_device_count(dev), 1);
        assert_eq!(instinfer_identify(dev, 0, &mut caps), 0);
        assert_eq!(caps.methods & 0b11, 0b11);
        assert_eq!(instinfer_identify(dev, 1, &mut caps), INSTINFER_EINVALID);
        assert_eq!(instinfer_seq_open(dev, 1, &SHAPE, ptr::null()), 0);
        assert_eq!(
            instinfer_seq_open(dev, 1, &SHAPE, ptr::null()),
            INSTINFER_EEXIST
        );
        let k = vec![0.25f32; 2 * 10 * 32];
        let v: Vec<u16> = (0..2 * 10 * 32).map(|i| 0x3c00 + (i % 7) as u16).collect();
        assert_eq!(
            instinfer_append(
                dev,
                1,
                0,
                INSTINFER_F32,
                k.as_ptr().cast(),
                k.as_ptr().cast(),
                10
            ),
            0
        );
        assert_eq!(
            instinfer_append(
                dev,
                1,
                0,
                INSTINFER_F16,
                v.as_ptr().cast(),
                v.as_ptr().cast(),
                10
            ),
            0
        );
        let mut len = 0usize;
        assert_eq!(instinfer_seq_length(dev, 1, 0, &mut len), 0);
        assert_eq!(len, 20);
        let q = vec![0.5f32; 4 * 32];
        let m = instinfer_method {
            name: c"dense".as_ptr(),
            compression: 1.0,
            sparf_r: 0,
            sparf_k: 0,
            sparf_local: 0,
        };
        let seq = 1u32;
        let mut out = vec![0f32; 4 * 32];
        let mut rep = instinfer_report::default();
        let mut vns = 0u64;
        let rc = instinfer_decode(
            dev,
            0,
            &seq,
            1,
            INSTINFER_F32,
            q.as_ptr().cast(),
            ptr::null(),
            ptr::null(),
            &m,
            out.as_mut_ptr(),
            out.len(),
            &mut rep,
            1,
            &mut vns,
        );
        assert_eq!(rc, 0, "{}", last());
        assert_eq!(rep.tokens, 20);
        assert!(vns > 0 && vns != u64::MAX);
        // Half the tokens had V = 0.25 (as K), the rest ~1: the mean is between.
        assert!(out.iter().all(|&x| x > 0.25 && x < 1.01), "{out:?}");
        // A buffer too small leaves the batch pending.
        let mut id = 0;
        let rc = instinfer_submit(
            dev,
            0,
            &seq,
            1,
            INSTINFER_F32,
            q.as_ptr().cast(),
            ptr::null(),
            ptr::null(),
            &m,
            &mut id,
        );
        assert_eq!(rc, 0);
        assert_eq!(
            instinfer_fetch(
                dev,
                id,
                out.as_mut_ptr(),
                3,
                ptr::null_mut(),
                0,
                ptr::null_mut()
            ),
            INSTINFER_EINVALID
        );
        assert_eq!(
            instinfer_fetch(
                dev,
                id,
                out.as_mut_ptr(),
                out.len(),
                ptr::null_mut(),
                0,
                ptr::null_mut()
            ),
            0
        );
        assert_eq!(
            instinfer_fetch(
                dev,
                id,
                out.as_mut_ptr(),
                out.len(),
                ptr::null_mut(),
                0,
                ptr::null_mut()
            ),
            INSTINFER_ENOBATCH
        );
        let mut stats = [0u64; INSTINFER_STATS];
        assert_eq!(instinfer_stats(dev, 0, stats.as_mut_ptr()), 0);
        assert_eq!(stats[15], 2, "decodes");
        assert_eq!(CStr::from_ptr(instinfer_stat_name(15)), c"decodes");
        assert!(instinfer_stat_name(33).is_null());
        assert_eq!(instinfer_seq_close(dev, 1), 0);
        assert_eq!(instinfer_seq_close(dev, 1), INSTINFER_ENOSEQ);
        instinfer_free(dev);
    }
}

#[test]
fn bad_pointers_and_values_are_refused() {
    let dev = sim();
    // SAFETY: the pointers are null or valid, as each call allows.
    unsafe {
        let mut out = ptr::null_mut();
        assert_eq!(
            instinfer_open(ptr::null(), 1, 4096, &mut out),
            INSTINFER_EINVALID
        );
        assert!(out.is_null());
        let bad: *const c_char = c"floppy".as_ptr();
        assert_eq!(instinfer_open(&bad, 1, 4096, &mut out), INSTINFER_EINVALID);
        assert!(last().contains("floppy"), "{}", last());
        assert_eq!(
            instinfer_seq_open(ptr::null_mut(), 1, &SHAPE, ptr::null()),
            INSTINFER_EINVALID
        );
        assert_eq!(
            instinfer_seq_open(dev, 1, ptr::null(), ptr::null()),
            INSTINFER_EINVALID
        );
        let opts = instinfer_seq_options {
            basis: 9,
            layout: 0,
            dim_group: 1,
        };
        assert_eq!(
            instinfer_seq_open(dev, 1, &SHAPE, &opts),
            INSTINFER_EINVALID
        );
        assert_eq!(instinfer_seq_open(dev, 1, &SHAPE, ptr::null()), 0);
        let k = [0f32; 64];
        assert_eq!(
            instinfer_append(dev, 1, 0, 7, k.as_ptr().cast(), k.as_ptr().cast(), 1),
            INSTINFER_EINVALID
        );
        assert_eq!(
            instinfer_append(dev, 1, 0, INSTINFER_F32, ptr::null(), k.as_ptr().cast(), 1),
            INSTINFER_EINVALID
        );
        assert_eq!(
            instinfer_append(
                dev,
                2,
                0,
                INSTINFER_F32,
                k.as_ptr().cast(),
                k.as_ptr().cast(),
                1
            ),
            INSTINFER_ENOSEQ
        );
        let m = instinfer_method {
            name: c"warp".as_ptr(),
            compression: 1.0,
            sparf_r: 0,
            sparf_k: 0,
            sparf_local: 0,
        };
        let (seq, mut id) = (1u32, 0u64);
        let rc = instinfer_submit(
            dev,
            0,
            &seq,
            1,
            INSTINFER_F32,
            k.as_ptr().cast(),
            ptr::null(),
            ptr::null(),
            &m,
            &mut id,
        );
        assert_eq!(rc, INSTINFER_EINVALID);
        assert!(last().contains("warp"));
        assert_eq!(instinfer_last_nvme_status(), 0);
        assert_eq!(
            CStr::from_ptr(instinfer_strerror(5)),
            c"the drive completed the command with an error status"
        );
        assert_eq!(
            CStr::from_ptr(instinfer_strerror(77)),
            c"unknown error code"
        );
        instinfer_free(dev);
        instinfer_free(ptr::null_mut());
    }
}

#[test]
fn a_drive_refusal_gives_its_status() {
    let dev = sim();
    // SAFETY: a live handle and valid structs.
    unsafe {
        let mut caps = instinfer_caps::default();
        assert_eq!(instinfer_identify(dev, 0, &mut caps), 0);
        let mut rc = 0;
        for s in 0..=caps.max_sequences {
            rc = instinfer_seq_open(dev, s, &SHAPE, ptr::null());
            if rc != 0 {
                break;
            }
        }
        assert_eq!(rc, INSTINFER_ESTATUS, "{}", last());
        assert_ne!(instinfer_last_nvme_status(), 0);
        assert!(last().contains("SEQ_OPEN"), "{}", last());
        instinfer_free(dev);
    }
}

#[test]
fn the_ssd_backend_behind_the_same_handle() {
    let shape = instinfer_shape {
        layers: 1,
        q_heads: 4,
        kv_heads: 2,
        head_dim: 64,
    };
    let opts = instinfer_ssd_options {
        capacity: 256,
        slots: 1,
        block: 0,
        prefetch: 1,
    };
    let mut dev = ptr::null_mut();
    // SAFETY: valid strings, structs and buffers throughout.
    unsafe {
        assert_eq!(
            instinfer_open_ssd(c"dram".as_ptr(), &shape, &opts, &mut dev),
            0
        );
        assert_eq!(instinfer_device_count(dev), 0);
        let mut caps = instinfer_caps::default();
        assert_eq!(instinfer_identify(dev, 0, &mut caps), INSTINFER_EINVALID);
        assert_eq!(
            instinfer_seq_open(dev, 1, &SHAPE, ptr::null()),
            INSTINFER_EINVALID
        );
        assert_eq!(instinfer_seq_open(dev, 1, &shape, ptr::null()), 0);
        let k = vec![0.5f32; 2 * 100 * 64];
        assert_eq!(
            instinfer_append(
                dev,
                1,
                0,
                INSTINFER_F32,
                k.as_ptr().cast(),
                k.as_ptr().cast(),
                100
            ),
            0
        );
        let m = instinfer_method {
            name: c"block".as_ptr(),
            compression: 0.5,
            sparf_r: 0,
            sparf_k: 0,
            sparf_local: 0,
        };
        let q = vec![0.1f32; 4 * 64];
        let seq = 1u32;
        let mut out = vec![0f32; 4 * 64];
        let mut vns = 0;
        let rc = instinfer_decode(
            dev,
            0,
            &seq,
            1,
            INSTINFER_F32,
            q.as_ptr().cast(),
            ptr::null(),
            ptr::null(),
            &m,
            out.as_mut_ptr(),
            out.len(),
            ptr::null_mut(),
            0,
            &mut vns,
        );
        assert_eq!(rc, 0, "{}", last());
        assert_eq!(vns, u64::MAX);
        assert!(out.iter().all(|&x| (x - 0.5).abs() < 1e-3));
        instinfer_free(dev);
    }
}

/// The header's error codes are `OffloadError`'s, in its order, and each
/// has a name of its own.
#[test]
fn error_codes_are_the_offload_codes() {
    let header = [
        INSTINFER_EINVALID,
        INSTINFER_ENOSEQ,
        INSTINFER_EEXIST,
        INSTINFER_ENOBATCH,
        INSTINFER_ESTATUS,
        INSTINFER_ETRANSPORT,
        INSTINFER_EDEVICE,
        INSTINFER_ESTORAGE,
    ];
    assert_eq!(header.len(), offload::OffloadError::CODES.len());
    for (i, code) in header.iter().enumerate() {
        assert_eq!(*code, i as i32 + 1, "{}", offload::OffloadError::CODES[i]);
    }
    let samples = [
        offload::OffloadError::Invalid(String::new()),
        offload::OffloadError::UnknownSequence(0),
        offload::OffloadError::SequenceExists(0),
        offload::OffloadError::UnknownBatch(0),
        offload::OffloadError::Status {
            status: proto::Status::INVALID_FIELD,
            command: "x",
        },
        offload::OffloadError::Transport(String::new()),
        offload::OffloadError::Device(String::new()),
        offload::OffloadError::Storage(String::new()),
    ];
    for (e, want) in samples.iter().zip(header) {
        assert_eq!(e.code(), want, "{e:?}");
    }
    let names: std::collections::HashSet<&CStr> =
        (0..=INSTINFER_EINTERNAL).map(last::code_name).collect();
    assert_eq!(names.len(), INSTINFER_EINTERNAL as usize + 1);
}
