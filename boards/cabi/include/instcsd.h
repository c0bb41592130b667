/*
 * instcsd.h — the InstCSD device core (a computational SSD that runs LLM
 * decode attention inside the drive) as a library for NVMe emulators.
 *
 * The emulator keeps everything NVMe-transport: queues, doorbells, phase
 * tags, interrupts, the queue-management admin commands. For each command
 * it wants the InstCSD to serve it calls instcsd_submit(), which runs the
 * command to completion — moving its data with the emulator's DMA
 * callbacks at the PRP addresses in the SQE — and returns the 16-byte CQE.
 *
 * Served by instcsd_submit:
 *   admin queue (sqid 0): Identify Controller (06h, CNS 1; the InstCSD
 *     capability block sits at byte 3072) and Get Log Page (02h, the
 *     InstCSD statistics log, LID C0h). Every other admin opcode
 *     completes with Invalid Command Opcode: the emulator answers its
 *     standard admin set itself (queue creation/deletion included).
 *   I/O queues (sqid != 0): the InstCSD vendor commands SEQ_OPEN (80h),
 *     KV_APPEND (81h), SEQ_CLOSE (84h), DECODE_SUBMIT (85h) and
 *     DECODE_FETCH (86h), namespace 1. Other opcodes complete with an
 *     error status.
 *
 * Build: see boards/cabi/README.md. Hosted targets link libinstcsd_cabi.a
 * with -lpthread -ldl -lm; x86_64-unknown-none needs no libc.
 *
 * Threads: calls on one device must not overlap; different devices may be
 * used from different threads at once.
 */
#ifndef INSTCSD_H
#define INSTCSD_H

#ifdef __KERNEL__
/* A kernel module (NVMeVirt): the kernel's own fixed-width types. */
#include <linux/types.h>
#else
#include <stddef.h>
#include <stdint.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this ABI; instcsd_config.abi_version must equal it. */
#define INSTCSD_ABI_VERSION 1

/* Return codes: 0 or a negative errno value. */
#define INSTCSD_OK 0
/* The device is poisoned: a panic was caught in this or an earlier call
 * (hosted targets only; the panic callback got the message). Destroy it. */
#define INSTCSD_EIO (-5)
/* x86_64-unknown-none: the allocator hooks are already installed with
 * other alloc/free functions. */
#define INSTCSD_EBUSY (-16)
/* A null or misaligned pointer, a missing callback, or an invalid
 * configuration field. */
#define INSTCSD_EINVAL (-22)
/* instcsd_config.abi_version is not INSTCSD_ABI_VERSION. */
#define INSTCSD_ENOTSUP (-95)

/* Geometry presets (instcsd_config.geometry). */
#define INSTCSD_GEOMETRY_SIM 0         /* 8 ch x 4 ways x 256 blocks x 64 pages */
#define INSTCSD_GEOMETRY_DAISYPLUS 1   /* 4 x 2 x 2048 x 256, 16 KiB pages only */
#define INSTCSD_GEOMETRY_COSMOS_PLUS 2 /* 8 x 8 x 4096 x 256, 16 KiB pages only */
#define INSTCSD_GEOMETRY_CUSTOM 3      /* the channels..pages_per_block fields */

/* Wire sizes. */
#define INSTCSD_SQE_SIZE 64
#define INSTCSD_CQE_SIZE 16
/* sizeof(instcsd_env) on 64-bit targets and sizeof(instcsd_config). */
#define INSTCSD_ENV_SIZE 56
#define INSTCSD_CONFIG_SIZE 128

/* What the emulator provides. Every callback gets `ctx` back. */
typedef struct instcsd_env {
    void *ctx;
    /* Required. Copy `len` bytes of host memory at bus address `addr`
     * (a PRP value) into `buf`. Return 0, or nonzero (e.g. -EFAULT) to
     * refuse: the command then completes with Data Transfer Error (00h/04h).
     * `len` >= 1 and [addr, addr + len) never crosses a 4 KiB boundary (a
     * PRP data segment stays in its page, a PRP list read in its list
     * page). Do not keep `buf`. */
    int (*dma_read)(void *ctx, uint64_t addr, void *buf, size_t len);
    /* Required. Copy `len` bytes from `buf` to host memory at `addr`;
     * same rules as dma_read. */
    int (*dma_write)(void *ctx, uint64_t addr, const void *buf, size_t len);
    /* x86_64-unknown-none: required; they become the library's global
     * allocator. `alloc` returns memory of `size` bytes aligned to `align`
     * (a power of two), or NULL; `free` gets back exactly what `alloc`
     * returned with the same size and align. Use an allocator that can
     * serve large blocks (kvmalloc/kvfree in a kernel): the FTL tables are
     * allocated at create time. The hooks of the FIRST successful
     * instcsd_create (with its ctx) stay installed for the life of the
     * library; later creates must pass the same functions (else
     * INSTCSD_EBUSY), so that first ctx must stay valid. Before the first
     * create the allocator returns NULL; nothing allocates before then.
     * Hosted targets: ignored (the system allocator is used); may be NULL. */
    void *(*alloc)(void *ctx, size_t size, size_t align);
    void (*free)(void *ctx, void *p, size_t size, size_t align);
    /* Optional. A monotonic clock in nanoseconds, used for the time fields
     * of the statistics log only (values are clamped to never go back).
     * NULL: time is the number of commands submitted so far. */
    uint64_t (*now_ns)(void *ctx);
    /* Optional. Told about a panic: `msg` is `len` bytes, not
     * NUL-terminated, valid during the call only. Hosted targets: the
     * call returns INSTCSD_EIO afterwards and the device is poisoned.
     * x86_64-unknown-none: called from the panic handler (with the ctx of
     * the first create), which never returns (it spins) — stop the
     * machine here, e.g. BUG(). */
    void (*panic)(void *ctx, const char *msg, size_t len);
} instcsd_env;

/* Start-up configuration. Zero means "default" where noted; reserved
 * fields must be zero. Every field is validated (INSTCSD_EINVAL). */
typedef struct instcsd_config {
    uint32_t abi_version;      /* INSTCSD_ABI_VERSION */
    uint32_t page_size;        /* flash page: 4096 or 16384 */
    uint32_t geometry;         /* INSTCSD_GEOMETRY_* */
    uint8_t channels;          /* INSTCSD_GEOMETRY_CUSTOM only (1..32), else 0 */
    uint8_t ways;              /* CUSTOM only (1..16), else 0 */
    uint16_t reserved0;
    uint32_t blocks_per_die;   /* CUSTOM only (>= 1), else 0 */
    uint32_t pages_per_block;  /* CUSTOM only (1..65536), else 0 */
    uint64_t ram_pages;        /* flash pages kept in RAM at once:
                                  1..=pages of the geometry; programming
                                  beyond it fails the command, not the
                                  device */
    uint64_t dram_budget_bytes;/* group buffers; 0 = 256 MiB; >= page_size */
    uint32_t max_sequences;    /* 0 = 1024; 1..=65536 */
    uint32_t max_streams;      /* FTL stream slots (layers x KV heads per
                                  sequence, summed); 0 = 65536; <= 2^20 */
    uint32_t mdts_bytes;       /* largest transfer; 0 = 2 MiB; a power of
                                  two in 4096..=256 MiB */
    uint16_t vendor_id;        /* Identify VID/SSVID; 0 = 0x1d1d */
    uint16_t reserved1;
    /* Identify strings: printable ASCII, NUL padded (no terminator needed
     * when full); all NUL = default ("EMU-0001", "InstCSD emulated (C
     * ABI)", the library version). */
    char serial[20];
    char model[40];
    char firmware_rev[8];
    uint32_t reserved2;
} instcsd_config;

/* An emulated InstCSD controller (opaque). */
typedef struct instcsd instcsd;

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(instcsd_config) == INSTCSD_CONFIG_SIZE, "instcsd_config layout");
#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
_Static_assert(sizeof(instcsd_env) == INSTCSD_ENV_SIZE, "instcsd_env layout");
#endif
#endif

/* The ABI version the library implements. */
uint32_t instcsd_abi_version(void);

/* A static, NUL-terminated description of a return code. */
const char *instcsd_strerror(int code);

/* Creates a device with its flash erased. `env` is copied (its callbacks
 * must stay valid until instcsd_destroy); `cfg` is only read during the
 * call. On success *out is the device and the result INSTCSD_OK; on
 * failure *out is NULL and the result is INSTCSD_EINVAL, INSTCSD_ENOTSUP,
 * INSTCSD_EBUSY or INSTCSD_EIO. Never aborts on bad input. */
int instcsd_create(const instcsd_env *env, const instcsd_config *cfg, instcsd **out);

/* Destroys a device and frees its memory (the flash contents are lost).
 * NULL is ignored. */
void instcsd_destroy(instcsd *dev);

/* Runs one command from submission queue `sqid` (0 = admin) to
 * completion and writes its CQE to `cqe_out`.
 *
 * Returns INSTCSD_OK when a CQE was written — whatever its status: a
 * malformed command, a refused DMA or a full flash is an NVMe status in
 * the CQE, never a failure of the call. Returns INSTCSD_EINVAL (a null
 * pointer) or INSTCSD_EIO (poisoned device) without writing the CQE.
 *
 * The CQE (little-endian, NVMe layout):
 *   bytes 0-3   DW0: command specific (e.g. KV_APPEND: the layer's new
 *               length; POSITION_MISMATCH: the current length)
 *   bytes 4-7   DW1: 0
 *   bytes 8-9   SQ head: 0 — the EMULATOR fills it in
 *   bytes 10-11 SQ id: `sqid`
 *   bytes 12-13 command id: copied from the SQE
 *   bytes 14-15 status field in bits 15:1 (SC, SCT, DNR) and the phase
 *               tag in bit 0, which is 0 — the EMULATOR sets the phase
 *
 * `sqe` and `cqe_out` are byte arrays of INSTCSD_SQE_SIZE and
 * INSTCSD_CQE_SIZE bytes (no alignment needed). */
int instcsd_submit(instcsd *dev, uint16_t sqid, const uint8_t sqe[64], uint8_t cqe_out[16]);

#ifdef __cplusplus
}
#endif

#endif /* INSTCSD_H */
