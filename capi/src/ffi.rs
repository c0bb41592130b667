//! The `extern "C"` functions of `include/instinfer.h`: every raw pointer
//! is checked (null, alignment) and turned into a reference or slice of
//! the length the call implies, then the safe [`Handle`] does the work.
//! Every body runs under `catch_unwind`: a panic is `INSTINFER_EINTERNAL`,
//! never an unwind into C.

use std::ffi::{CStr, c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

use offload::{OffloadError, Values};

use crate::handle::{self, Handle};
use crate::{
    INSTINFER_EINTERNAL, INSTINFER_F16, INSTINFER_F32, INSTINFER_OK, instinfer_caps,
    instinfer_method, instinfer_report, instinfer_seq_options, instinfer_shape,
    instinfer_ssd_options, last,
};

/// An open device or store (opaque).
#[derive(Debug)]
pub struct instinfer_device(Handle);

fn invalid(msg: impl Into<String>) -> OffloadError {
    OffloadError::Invalid(msg.into())
}

/// Runs `f`, turning its error or panic into a code (and the thread's
/// last error).
fn guarded(f: impl FnOnce() -> Result<(), OffloadError>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => INSTINFER_OK,
        Ok(Err(e)) => last::set(&e),
        Err(_) => {
            last::record("internal error (a panic was caught): free the handle", 0);
            INSTINFER_EINTERNAL
        }
    }
}

/// `p` as a reference.
///
/// # Safety
/// `p` is null or points to a live, aligned `T` for the call.
unsafe fn obj<'a, T>(p: *const T, what: &str) -> Result<&'a T, OffloadError> {
    if p.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    if !p.is_aligned() {
        return Err(invalid(format!("{what} is not aligned")));
    }
    // SAFETY: non-null and aligned (checked); the caller's contract makes
    // it a live `T` for the call.
    Ok(unsafe { &*p })
}

/// `p` as a mutable reference.
///
/// # Safety
/// `p` is null or points to a live, aligned `T` that nothing else uses
/// during the call.
unsafe fn obj_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, OffloadError> {
    if p.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    if !p.is_aligned() {
        return Err(invalid(format!("{what} is not aligned")));
    }
    // SAFETY: non-null and aligned (checked); exclusive by the contract.
    Ok(unsafe { &mut *p })
}

/// `n` elements at `p` (any pointer when `n` is 0).
///
/// # Safety
/// When `n > 0`, `p` points to `n` live, initialised `T`s for the call.
unsafe fn slice<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T], OffloadError> {
    if n == 0 {
        return Ok(&[]);
    }
    // Checked by `obj`: non-null and aligned.
    // SAFETY: forwarded contract (a live first element).
    unsafe { obj(p, what) }?;
    // SAFETY: non-null, aligned, and `n` live elements by the contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// `n` writable elements at `p`.
///
/// # Safety
/// When `n > 0`, `p` points to `n` writable `T`s nothing else uses.
unsafe fn slice_mut<'a, T>(p: *mut T, n: usize, what: &str) -> Result<&'a mut [T], OffloadError> {
    if n == 0 {
        return Ok(&mut []);
    }
    // SAFETY: forwarded contract.
    unsafe { obj_mut(p, what) }?;
    // SAFETY: non-null, aligned, `n` exclusive elements by the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
/// `p` is null or a NUL-terminated string live for the call.
unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, OffloadError> {
    if p.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-null and NUL-terminated by the contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| invalid(format!("{what} is not UTF-8")))
}

/// `n` elements of `dtype` at `p`.
///
/// # Safety
/// As [`slice`], for the element type `dtype` names.
unsafe fn values<'a>(
    dtype: u32,
    p: *const core::ffi::c_void,
    n: usize,
    what: &str,
) -> Result<Values<'a>, OffloadError> {
    match dtype {
        // SAFETY: forwarded contract, fp16 elements.
        INSTINFER_F16 => Ok(Values::F16(unsafe { slice(p.cast::<u16>(), n, what) }?)),
        // SAFETY: forwarded contract, float elements.
        INSTINFER_F32 => Ok(Values::F32(unsafe { slice(p.cast::<f32>(), n, what) }?)),
        d => Err(invalid(format!(
            "unknown dtype {d} (INSTINFER_F16 or INSTINFER_F32)"
        ))),
    }
}

/// Opens `count` drives by spec (`sim`, `qemu:zynqmp`, `tcp://HOST:PORT/NQN`,
/// `/dev/ngXnY`, `vfio:<PCI address>`); simulated and QEMU boards get
/// `page_size`-byte pages (4096 or 16384). KV heads are split over them in
/// order. On success `*out` is a handle to free with instinfer_free().
///
/// # Safety
/// `specs` points to `count` NUL-terminated strings; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_open(
    specs: *const *const c_char,
    count: usize,
    page_size: u32,
    out: *mut *mut instinfer_device,
) -> c_int {
    guarded(|| {
        // SAFETY: the caller's contract for `out`.
        let out = unsafe { obj_mut(out, "out") }?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller's contract for `specs`.
        let ptrs = unsafe { slice(specs, count, "specs") }?;
        let mut names = Vec::with_capacity(count);
        for (i, &p) in ptrs.iter().enumerate() {
            // SAFETY: each entry is a NUL-terminated string by the contract.
            names.push(unsafe { text(p, &format!("specs[{i}]")) }?.to_string());
        }
        let h = Handle::open(&names, page_size)?;
        *out = Box::into_raw(Box::new(instinfer_device(h)));
        Ok(())
    })
}

/// Opens the SSD block-sparse backend: a store at `location` (an existing
/// directory, `/dev/nvmeXnY`, or `dram`) for sequences of `shape`.
///
/// # Safety
/// `location` is a NUL-terminated string; `shape` and `opts` point to
/// their structs; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_open_ssd(
    location: *const c_char,
    shape: *const instinfer_shape,
    opts: *const instinfer_ssd_options,
    out: *mut *mut instinfer_device,
) -> c_int {
    guarded(|| {
        // SAFETY: the caller's contract for each pointer.
        let out = unsafe { obj_mut(out, "out") }?;
        *out = std::ptr::null_mut();
        // SAFETY: as above.
        let (loc, shape, opts) = unsafe {
            (
                text(location, "location")?,
                obj(shape, "shape")?,
                obj(opts, "opts")?,
            )
        };
        let h = Handle::open_ssd(loc, handle::shape(shape), opts)?;
        *out = Box::into_raw(Box::new(instinfer_device(h)));
        Ok(())
    })
}

/// Frees a handle (NULL is ignored): its sequences are dropped with it.
///
/// # Safety
/// `dev` is NULL or a handle from instinfer_open*() not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_free(dev: *mut instinfer_device) {
    if !dev.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: a pointer from Box::into_raw in instinfer_open*,
            // freed once by the contract.
            drop(unsafe { Box::from_raw(dev) });
        }));
    }
}

/// Drives behind the handle (0 for the SSD backend or NULL).
///
/// # Safety
/// `dev` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_device_count(dev: *const instinfer_device) -> usize {
    // SAFETY: the caller's contract.
    unsafe { obj(dev, "dev") }.map_or(0, |d| d.0.count())
}

/// Identify of drive `drive`.
///
/// # Safety
/// `dev` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_identify(
    dev: *mut instinfer_device,
    drive: usize,
    out: *mut instinfer_caps,
) -> c_int {
    guarded(|| {
        // SAFETY: the caller's contract for both pointers.
        let (d, out) = unsafe { (obj_mut(dev, "dev")?, obj_mut(out, "out")?) };
        *out = d.0.identify(drive)?;
        Ok(())
    })
}

/// The statistics log of drive `drive`: INSTINFER_STATS counters, named
/// by instinfer_stat_name().
///
/// # Safety
/// `dev` is a live handle; `out` has room for INSTINFER_STATS values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_stats(
    dev: *mut instinfer_device,
    drive: usize,
    out: *mut u64,
) -> c_int {
    guarded(|| {
        // SAFETY: the caller's contract for both pointers.
        let (d, out) = unsafe {
            (
                obj_mut(dev, "dev")?,
                slice_mut(out, crate::INSTINFER_STATS, "out")?,
            )
        };
        out.copy_from_slice(&d.0.stats(drive)?);
        Ok(())
    })
}

/// The name of statistics counter `i` (NULL past the last).
#[unsafe(no_mangle)]
pub extern "C" fn instinfer_stat_name(i: usize) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<std::ffi::CString>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        proto::StatsLog::NAMES
            .iter()
            .filter_map(|n| std::ffi::CString::new(*n).ok())
            .collect()
    });
    names.get(i).map_or(std::ptr::null(), |n| n.as_ptr())
}

/// Opens sequence `seq` with `shape`; `opts` may be NULL (time order, raw
/// basis, dim group 1).
///
/// # Safety
/// `dev` is a live handle; `shape` points to a shape; `opts` is NULL or
/// points to options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_seq_open(
    dev: *mut instinfer_device,
    seq: u32,
    shape: *const instinfer_shape,
    opts: *const instinfer_seq_options,
) -> c_int {
    guarded(|| {
        // SAFETY: the caller's contract for each pointer.
        let (d, shape) = unsafe { (obj_mut(dev, "dev")?, obj(shape, "shape")?) };
        let opts = if opts.is_null() {
            None
        } else {
            // SAFETY: non-null: the caller's contract.
            Some(unsafe { obj(opts, "opts") }?)
        };
        d.0.seq_open(seq, handle::shape(shape), opts)
    })
}

/// Closes sequence `seq` (collecting any pending batch with a step of it).
///
/// # Safety
/// `dev` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_seq_close(dev: *mut instinfer_device, seq: u32) -> c_int {
    guarded(|| {
        // SAFETY: the caller's contract.
        unsafe { obj_mut(dev, "dev") }?.0.seq_close(seq)
    })
}

/// Tokens stored in `layer` of `seq`, into `*out`.
///
/// # Safety
/// `dev` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_seq_length(
    dev: *mut instinfer_device,
    seq: u32,
    layer: u32,
    out: *mut usize,
) -> c_int {
    guarded(|| {
        // SAFETY: the caller's contract for both pointers.
        let (d, out) = unsafe { (obj_mut(dev, "dev")?, obj_mut(out, "out")?) };
        *out = d.0.seq_length(seq, layer as usize)?;
        Ok(())
    })
}

/// Appends `tokens` tokens to `layer` of `seq`: `k` and `v` are
/// `[kv_heads][tokens][head_dim]` elements of `dtype`.
///
/// # Safety
/// `dev` is a live handle; `k` and `v` each point to kv_heads × tokens ×
/// head_dim elements of `dtype`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_append(
    dev: *mut instinfer_device,
    seq: u32,
    layer: u32,
    dtype: u32,
    k: *const core::ffi::c_void,
    v: *const core::ffi::c_void,
    tokens: usize,
) -> c_int {
    guarded(|| {
        // SAFETY: the caller's contract.
        let d = unsafe { obj_mut(dev, "dev") }?;
        let s = d.0.shape_of(seq)?;
        let n = tokens
            .checked_mul(s.kv_heads * s.head_dim)
            .ok_or_else(|| invalid("tokens × kv_heads × head_dim overflows"))?;
        // SAFETY: `n` elements of `dtype` each, by the contract.
        let (k, v) = unsafe { (values(dtype, k, n, "k")?, values(dtype, v, n, "v")?) };
        d.0.append(seq, layer as usize, k, v).map(|_| ())
    })
}

/// Submits one layer's decode for `batch` sequences: `q` is
/// `[batch][q_heads][head_dim]`, `k_new`/`v_new` (both NULL, or both given)
/// `[batch][kv_heads][head_dim]`, all of `dtype`, shapes those of
/// `seqs[0]`. `*batch_id` receives the batch for instinfer_fetch().
///
/// # Safety
/// `dev` is a live handle; `seqs` points to `batch` ids; the arrays hold
/// the elements named above; `method` points to a method whose name is a
/// NUL-terminated string; `batch_id` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_submit(
    dev: *mut instinfer_device,
    layer: u32,
    seqs: *const u32,
    batch: usize,
    dtype: u32,
    q: *const core::ffi::c_void,
    k_new: *const core::ffi::c_void,
    v_new: *const core::ffi::c_void,
    method: *const instinfer_method,
    batch_id: *mut u64,
) -> c_int {
    guarded(|| {
        // SAFETY: the caller's contract for each pointer.
        let (d, ids, m, out) = unsafe {
            (
                obj_mut(dev, "dev")?,
                slice(seqs, batch, "seqs")?,
                obj(method, "method")?,
                obj_mut(batch_id, "batch_id")?,
            )
        };
        // SAFETY: the method's name, by the contract.
        let spec = handle::method(unsafe { text(m.name, "method.name") }?, m)?;
        let first = *ids.first().ok_or_else(|| invalid("an empty batch"))?;
        let s = d.0.shape_of(first)?;
        let (qn, kn) = (
            batch * s.q_heads * s.head_dim,
            batch * s.kv_heads * s.head_dim,
        );
        // SAFETY: the arrays' element counts, by the contract.
        let q = unsafe { values(dtype, q, qn, "q") }?;
        let kv = match (k_new.is_null(), v_new.is_null()) {
            (true, true) => None,
            // SAFETY: as above.
            (false, false) => Some(unsafe {
                (
                    values(dtype, k_new, kn, "k_new")?,
                    values(dtype, v_new, kn, "v_new")?,
                )
            }),
            _ => return Err(invalid("k_new and v_new go together: both or neither")),
        };
        *out = d.0.submit(layer as usize, ids, q, kv, spec)?;
        Ok(())
    })
}

/// Collects batch `batch_id`: `out` receives `[batch][q_heads][head_dim]`
/// floats (`out_len` is its room, in floats), `reports` (NULL, or room for
/// `reports_len` ≥ batch entries) each step's counters, `virtual_ns` (NULL
/// or writable) the batch's virtual device time (UINT64_MAX where the
/// drives have none). A buffer too small is INSTINFER_EINVALID and leaves
/// the batch pending.
///
/// # Safety
/// `dev` is a live handle; the buffers are writable for the lengths given.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_fetch(
    dev: *mut instinfer_device,
    batch_id: u64,
    out: *mut f32,
    out_len: usize,
    reports: *mut instinfer_report,
    reports_len: usize,
    virtual_ns: *mut u64,
) -> c_int {
    guarded(|| {
        // SAFETY: the caller's contract for each pointer.
        let (d, out) = unsafe { (obj_mut(dev, "dev")?, slice_mut(out, out_len, "out")?) };
        let reports = if reports.is_null() {
            None
        } else {
            // SAFETY: as above.
            Some(unsafe { slice_mut(reports, reports_len, "reports") }?)
        };
        let vns = if virtual_ns.is_null() {
            None
        } else {
            // SAFETY: as above.
            Some(unsafe { obj_mut(virtual_ns, "virtual_ns") }?)
        };
        let t = d.0.fetch(batch_id, out, reports)?;
        if let Some(v) = vns {
            *v = t.unwrap_or(u64::MAX);
        }
        Ok(())
    })
}

/// instinfer_submit() then instinfer_fetch() (the same arguments).
///
/// # Safety
/// As for those two functions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn instinfer_decode(
    dev: *mut instinfer_device,
    layer: u32,
    seqs: *const u32,
    batch: usize,
    dtype: u32,
    q: *const core::ffi::c_void,
    k_new: *const core::ffi::c_void,
    v_new: *const core::ffi::c_void,
    method: *const instinfer_method,
    out: *mut f32,
    out_len: usize,
    reports: *mut instinfer_report,
    reports_len: usize,
    virtual_ns: *mut u64,
) -> c_int {
    let mut id = 0u64;
    // SAFETY: forwarded contract; `id` is a local.
    let rc = unsafe {
        instinfer_submit(
            dev, layer, seqs, batch, dtype, q, k_new, v_new, method, &mut id,
        )
    };
    if rc != INSTINFER_OK {
        return rc;
    }
    // SAFETY: forwarded contract.
    unsafe { instinfer_fetch(dev, id, out, out_len, reports, reports_len, virtual_ns) }
}

/// The name of an error code (a static string).
#[unsafe(no_mangle)]
pub extern "C" fn instinfer_strerror(code: c_int) -> *const c_char {
    last::code_name(code).as_ptr()
}

/// What went wrong in this thread's last failed call (valid until the
/// thread's next failed call).
#[unsafe(no_mangle)]
pub extern "C" fn instinfer_last_error() -> *const c_char {
    last::with_message(|m| m.as_ptr())
}

/// The NVMe status field of this thread's last INSTINFER_ESTATUS (SCT << 8
/// | SC, DNR in bit 14); 0 when the last error had none.
#[unsafe(no_mangle)]
pub extern "C" fn instinfer_last_nvme_status() -> u16 {
    last::status()
}
