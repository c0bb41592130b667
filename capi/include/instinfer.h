/*
 * instinfer.h — decode-attention offload to computational SSDs (and the
 * SSD block-sparse backend) for C and C++ host programs.
 *
 * Generated from capi/src by cbindgen (capi/cbindgen.toml); a test checks
 * that this file is current. Regenerate: INSTINFER_BLESS=1 cargo test -p
 * instinfer-capi --test it header
 *
 * Every function returns 0 or an INSTINFER_E* code; instinfer_strerror()
 * names a code, instinfer_last_error() says what went wrong in this
 * thread's last failed call, instinfer_last_nvme_status() gives a drive's
 * NVMe status. A handle must not be used from two threads at once.
 */

#ifndef INSTINFER_H
#define INSTINFER_H

#include <stddef.h>
#include <stdint.h>

// Success.
#define INSTINFER_OK 0

// A bad argument: a spec, a shape, a length, a method, a null pointer.
#define INSTINFER_EINVALID 1

// The sequence is not open.
#define INSTINFER_ENOSEQ 2

// The sequence is already open.
#define INSTINFER_EEXIST 3

// No such pending batch.
#define INSTINFER_ENOBATCH 4

// The drive completed a command with an error status
// (instinfer_last_nvme_status()).
#define INSTINFER_ESTATUS 5

// The command could not be moved to or from the drive.
#define INSTINFER_ETRANSPORT 6

// The device is no InstCSD drive, or answered nonsense.
#define INSTINFER_EDEVICE 7

// The SSD store failed.
#define INSTINFER_ESTORAGE 8

// A fault inside the library (a caught panic): the handle should be freed.
#define INSTINFER_EINTERNAL 9

// Element type of an array: IEEE fp16 bit patterns (uint16_t).
#define INSTINFER_F16 1

// Element type of an array: float.
#define INSTINFER_F32 2

// Counters in a statistics log (instinfer_stat_name() names them).
#define INSTINFER_STATS 33

// Layouts of a sequence's keys on the drive (instinfer_seq_options).
#define INSTINFER_LAYOUT_TIME 0

// Placed by similarity, for the `pages` method.
#define INSTINFER_LAYOUT_PAGES 1

// Time order for the `quest` method.
#define INSTINFER_LAYOUT_QUEST 2

// Bases of the dim-indexed key copy (instinfer_seq_options).
#define INSTINFER_BASIS_RAW 0

// A per-head PCA basis of the first keys (the `sparf-pca` methods).
#define INSTINFER_BASIS_PCA 1

// The PCA basis scaled by the keys' RMS (`sparf-bal`).
#define INSTINFER_BASIS_BALANCED 2

// An open device or store (opaque).
typedef struct instinfer_device instinfer_device;

// A model's attention shape.
typedef struct instinfer_shape {
  // Layers.
  uint32_t layers;
  // Query heads (a multiple of kv_heads).
  uint32_t q_heads;
  // KV heads.
  uint32_t kv_heads;
  // Head dimension.
  uint32_t head_dim;
} instinfer_shape;

// The SSD backend's store (instinfer_open_ssd).
typedef struct instinfer_ssd_options {
  // Tokens per sequence at most.
  uint32_t capacity;
  // Sequences open at once at most.
  uint32_t slots;
  // Tokens per block (0: 32).
  uint32_t block;
  // Layers of prefetch ahead, 0 to 4.
  uint32_t prefetch;
} instinfer_ssd_options;

// A drive's Identify: the InstCSD capability block's main fields.
typedef struct instinfer_caps {
  // Methods the drive runs: bit 0 dense, bit 1 SparF (and SparF+), bit 2 pages.
  uint32_t methods;
  // Flash page size, bytes.
  uint32_t page_size;
  // Flash channels.
  uint32_t channels;
  // Dies per channel.
  uint32_t ways;
  // Largest head dimension.
  uint32_t max_head_dim;
  // Largest query-heads-per-KV-head group.
  uint32_t max_group;
  // Largest KV heads per drive.
  uint32_t max_kv_heads;
  // Largest layer count.
  uint32_t max_layers;
  // Sequences open at once.
  uint32_t max_sequences;
  // Most tokens per (sequence, layer, head).
  uint32_t max_tokens_per_stream;
  // Largest transfer of one command, bytes.
  uint64_t max_transfer;
  // Device DRAM for KV tails and results, bytes.
  uint64_t dram_budget_bytes;
} instinfer_caps;

// How a sequence is opened besides its shape (NULL: the defaults, all 0
// but dim_group 1).
typedef struct instinfer_seq_options {
  // INSTINFER_BASIS_*.
  uint32_t basis;
  // INSTINFER_LAYOUT_*.
  uint32_t layout;
  // Dims per flash row of the dim-indexed copy (0 means 1).
  uint32_t dim_group;
} instinfer_seq_options;

// A decode method: `name` (`dense`, `sparf`, `sparf-pca`, `pages`,
// `block`, …) at `compression` in (0, 1]; `sparf_r` > 0 sets SparF's
// r, k and local by hand (name must be `sparf`).
typedef struct instinfer_method {
  // NUL-terminated method name.
  const char *name;
  // Elements of K and V read ÷ dense's.
  double compression;
  // SparF's dims for the approximate scores (0: from compression).
  uint32_t sparf_r;
  // SparF's tokens attended exactly.
  uint32_t sparf_k;
  // SparF's most recent tokens always kept.
  uint32_t sparf_local;
} instinfer_method;

// One step's counters (see the Python report's `steps`).
typedef struct instinfer_report {
  // Tokens attended over (the new one included).
  uint32_t tokens;
  // Tokens whose V rows entered the weighted sum.
  uint32_t tokens_attended;
  // Flash pages read.
  uint32_t pages_read;
  // Flash pages a sparse method did not read.
  uint32_t pages_skipped;
  // KV heads whose k the guardrail widened.
  uint32_t guard_widened;
  // Bytes through the engines (SSD backend: bytes read from the store).
  uint64_t engine_bytes;
  // Elements the NAND-controller filters dropped.
  uint64_t elements_filtered;
} instinfer_report;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// Opens `count` drives by spec (`sim`, `qemu:zynqmp`, `tcp://HOST:PORT/NQN`,
// `/dev/ngXnY`, `vfio:<PCI address>`); simulated and QEMU boards get
// `page_size`-byte pages (4096 or 16384). KV heads are split over them in
// order. On success `*out` is a handle to free with instinfer_free().
//
// # Safety
// `specs` points to `count` NUL-terminated strings; `out` is writable.
int instinfer_open(const char *const *specs,
                   uintptr_t count,
                   uint32_t page_size,
                   struct instinfer_device **out);

// Opens the SSD block-sparse backend: a store at `location` (an existing
// directory, `/dev/nvmeXnY`, or `dram`) for sequences of `shape`.
//
// # Safety
// `location` is a NUL-terminated string; `shape` and `opts` point to
// their structs; `out` is writable.
int instinfer_open_ssd(const char *location,
                       const struct instinfer_shape *shape,
                       const struct instinfer_ssd_options *opts,
                       struct instinfer_device **out);

// Frees a handle (NULL is ignored): its sequences are dropped with it.
//
// # Safety
// `dev` is NULL or a handle from instinfer_open*() not yet freed.
void instinfer_free(struct instinfer_device *dev);

// Drives behind the handle (0 for the SSD backend or NULL).
//
// # Safety
// `dev` is NULL or a live handle.
uintptr_t instinfer_device_count(const struct instinfer_device *dev);

// Identify of drive `drive`.
//
// # Safety
// `dev` is a live handle; `out` is writable.
int instinfer_identify(struct instinfer_device *dev, uintptr_t drive, struct instinfer_caps *out);

// The statistics log of drive `drive`: INSTINFER_STATS counters, named
// by instinfer_stat_name().
//
// # Safety
// `dev` is a live handle; `out` has room for INSTINFER_STATS values.
int instinfer_stats(struct instinfer_device *dev, uintptr_t drive, uint64_t *out);

// The name of statistics counter `i` (NULL past the last).
const char *instinfer_stat_name(uintptr_t i);

// Opens sequence `seq` with `shape`; `opts` may be NULL (time order, raw
// basis, dim group 1).
//
// # Safety
// `dev` is a live handle; `shape` points to a shape; `opts` is NULL or
// points to options.
int instinfer_seq_open(struct instinfer_device *dev,
                       uint32_t seq,
                       const struct instinfer_shape *shape,
                       const struct instinfer_seq_options *opts);

// Closes sequence `seq` (collecting any pending batch with a step of it).
//
// # Safety
// `dev` is a live handle.
int instinfer_seq_close(struct instinfer_device *dev, uint32_t seq);

// Tokens stored in `layer` of `seq`, into `*out`.
//
// # Safety
// `dev` is a live handle; `out` is writable.
int instinfer_seq_length(struct instinfer_device *dev,
                         uint32_t seq,
                         uint32_t layer,
                         uintptr_t *out);

// Appends `tokens` tokens to `layer` of `seq`: `k` and `v` are
// `[kv_heads][tokens][head_dim]` elements of `dtype`.
//
// # Safety
// `dev` is a live handle; `k` and `v` each point to kv_heads × tokens ×
// head_dim elements of `dtype`.
int instinfer_append(struct instinfer_device *dev,
                     uint32_t seq,
                     uint32_t layer,
                     uint32_t dtype,
                     const void *k,
                     const void *v,
                     uintptr_t tokens);

// Submits one layer's decode for `batch` sequences: `q` is
// `[batch][q_heads][head_dim]`, `k_new`/`v_new` (both NULL, or both given)
// `[batch][kv_heads][head_dim]`, all of `dtype`, shapes those of
// `seqs[0]`. `*batch_id` receives the batch for instinfer_fetch().
//
// # Safety
// `dev` is a live handle; `seqs` points to `batch` ids; the arrays hold
// the elements named above; `method` points to a method whose name is a
// NUL-terminated string; `batch_id` is writable.
int instinfer_submit(struct instinfer_device *dev,
                     uint32_t layer,
                     const uint32_t *seqs,
                     uintptr_t batch,
                     uint32_t dtype,
                     const void *q,
                     const void *k_new,
                     const void *v_new,
                     const struct instinfer_method *method,
                     uint64_t *batch_id);

// Collects batch `batch_id`: `out` receives `[batch][q_heads][head_dim]`
// floats (`out_len` is its room, in floats), `reports` (NULL, or room for
// `reports_len` ≥ batch entries) each step's counters, `virtual_ns` (NULL
// or writable) the batch's virtual device time (UINT64_MAX where the
// drives have none). A buffer too small is INSTINFER_EINVALID and leaves
// the batch pending.
//
// # Safety
// `dev` is a live handle; the buffers are writable for the lengths given.
int instinfer_fetch(struct instinfer_device *dev,
                    uint64_t batch_id,
                    float *out,
                    uintptr_t out_len,
                    struct instinfer_report *reports,
                    uintptr_t reports_len,
                    uint64_t *virtual_ns);

// instinfer_submit() then instinfer_fetch() (the same arguments).
//
// # Safety
// As for those two functions.
int instinfer_decode(struct instinfer_device *dev,
                     uint32_t layer,
                     const uint32_t *seqs,
                     uintptr_t batch,
                     uint32_t dtype,
                     const void *q,
                     const void *k_new,
                     const void *v_new,
                     const struct instinfer_method *method,
                     float *out,
                     uintptr_t out_len,
                     struct instinfer_report *reports,
                     uintptr_t reports_len,
                     uint64_t *virtual_ns);

// The name of an error code (a static string).
const char *instinfer_strerror(int code);

// What went wrong in this thread's last failed call (valid until the
// thread's next failed call).
const char *instinfer_last_error(void);

// The NVMe status field of this thread's last INSTINFER_ESTATUS (SCT << 8
// | SC, DNR in bit 14); 0 when the last error had none.
uint16_t instinfer_last_nvme_status(void);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* INSTINFER_H */
