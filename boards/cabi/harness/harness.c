/*
 * harness.c — a tiny NVMe emulator around libinstcsd_cabi.a that replays
 * a vector file recorded on the simulated board (see
 * boards/cabi/tests/support/vectors.rs for the format).
 *
 * Host memory is a sparse map of 4 KiB pages: a page exists once a `pre`
 * line loaded it; a DMA touching any other page is refused with -EFAULT,
 * as the simulated board refuses unmapped addresses. For each command the
 * harness loads the `pre` bytes, calls instcsd_submit, compares the CQE
 * (DW0, DW1, SQ id, command id, status field; SQ head and phase are the
 * emulator's) and then every `post` range, byte for byte.
 *
 *   usage: instcsd-harness VECTORS
 *   exit 0 when every command matched, 1 on a mismatch, 2 on bad input.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instcsd.h"

#define PAGE 4096u
#define BUCKETS 1024u
#define MAX_REPORTS 10

struct page {
    uint64_t addr;
    struct page *next;
    uint8_t bytes[PAGE];
};

struct memory {
    struct page *buckets[BUCKETS];
};

static size_t bucket(uint64_t page_addr) {
    return (size_t)((page_addr / PAGE) % BUCKETS);
}

static struct page *find(struct memory *m, uint64_t addr) {
    uint64_t base = addr & ~(uint64_t)(PAGE - 1);
    for (struct page *p = m->buckets[bucket(base)]; p; p = p->next) {
        if (p->addr == base) {
            return p;
        }
    }
    return NULL;
}

static struct page *map(struct memory *m, uint64_t addr) {
    struct page *p = find(m, addr);
    if (p) {
        return p;
    }
    p = calloc(1, sizeof *p);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    p->addr = addr & ~(uint64_t)(PAGE - 1);
    p->next = m->buckets[bucket(p->addr)];
    m->buckets[bucket(p->addr)] = p;
    return p;
}

static void unmap_all(struct memory *m) {
    for (size_t i = 0; i < BUCKETS; i++) {
        struct page *p = m->buckets[i];
        while (p) {
            struct page *next = p->next;
            free(p);
            p = next;
        }
        m->buckets[i] = NULL;
    }
}

/* Whether every byte of [addr, addr + len) is in a mapped page. */
static int mapped(struct memory *m, uint64_t addr, size_t len) {
    uint64_t end = addr + len;
    if (end < addr) {
        return 0;
    }
    for (uint64_t a = addr & ~(uint64_t)(PAGE - 1); a < end; a += PAGE) {
        if (!find(m, a)) {
            return 0;
        }
    }
    return 1;
}

/* Copies between host memory and `buf`; to_host selects the direction. */
static void copy(struct memory *m, uint64_t addr, uint8_t *buf, size_t len, int to_host) {
    size_t done = 0;
    while (done < len) {
        uint64_t a = addr + done;
        size_t off = (size_t)(a % PAGE);
        size_t n = PAGE - off;
        if (n > len - done) {
            n = len - done;
        }
        struct page *p = find(m, a);
        if (to_host) {
            memcpy(p->bytes + off, buf + done, n);
        } else {
            memcpy(buf + done, p->bytes + off, n);
        }
        done += n;
    }
}

static int dma_read(void *ctx, uint64_t addr, void *buf, size_t len) {
    struct memory *m = ctx;
    if (!mapped(m, addr, len)) {
        return -EFAULT;
    }
    copy(m, addr, buf, len, 0);
    return 0;
}

static int dma_write(void *ctx, uint64_t addr, const void *buf, size_t len) {
    struct memory *m = ctx;
    if (!mapped(m, addr, len)) {
        return -EFAULT;
    }
    /* copy() does not write through buf when to_host is set. */
    copy(m, addr, (uint8_t *)(uintptr_t)buf, len, 1);
    return 0;
}

static void on_panic(void *ctx, const char *msg, size_t len) {
    (void)ctx;
    fprintf(stderr, "instcsd panic: %.*s\n", (int)len, msg);
}

static int unhex_nibble(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes a hex string into a fresh buffer; returns its length or -1. */
static long unhex(const char *s, uint8_t **out) {
    size_t n = strlen(s);
    if (n % 2) {
        return -1;
    }
    *out = malloc(n / 2 + 1);
    if (!*out) {
        return -1;
    }
    for (size_t i = 0; i < n / 2; i++) {
        int hi = unhex_nibble(s[2 * i]), lo = unhex_nibble(s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(*out);
            return -1;
        }
        (*out)[i] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(n / 2);
}

/* Decodes exactly `n` bytes of hex into `out`. */
static int unhex_fixed(const char *s, void *out, size_t n) {
    uint8_t *b;
    long len = s ? unhex(s, &b) : -1;
    if (len != (long)n) {
        if (len >= 0) free(b);
        return -1;
    }
    memcpy(out, b, n);
    free(b);
    return 0;
}

struct state {
    struct memory mem;
    instcsd *dev;
    int in_cmd;
    int cmd_ok;
    uint16_t qid;
    uint8_t sqe[INSTCSD_SQE_SIZE];
    long commands, matched, devices, reported;
};

static void fail(struct state *s, const char *what) {
    s->cmd_ok = 0;
    if (s->reported++ < MAX_REPORTS) {
        printf("command %ld (opcode %02x, cid %02x%02x): %s\n", s->commands - 1, s->sqe[0],
               s->sqe[3], s->sqe[2], what);
    }
}

static void finish_command(struct state *s) {
    if (s->in_cmd && s->cmd_ok) {
        s->matched++;
    }
    s->in_cmd = 0;
}

static int bad_input(long line, const char *why) {
    fprintf(stderr, "vectors line %ld: %s\n", line, why);
    return 2;
}

static uint32_t le32(const uint8_t *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint16_t le16(const uint8_t *b) {
    return (uint16_t)(b[0] | b[1] << 8);
}

static int device_line(struct state *s, char *rest, long line) {
    instcsd_config cfg;
    memset(&cfg, 0, sizeof cfg);
    char *page = strtok(rest, " "), *ram = strtok(NULL, " "), *vid = strtok(NULL, " ");
    char *sn = strtok(NULL, " "), *mn = strtok(NULL, " "), *fr = strtok(NULL, " ");
    if (!page || !ram || !vid) {
        return bad_input(line, "short device line");
    }
    cfg.abi_version = INSTCSD_ABI_VERSION;
    cfg.page_size = (uint32_t)strtoul(page, NULL, 10);
    cfg.geometry = INSTCSD_GEOMETRY_SIM;
    cfg.ram_pages = strtoull(ram, NULL, 10);
    cfg.vendor_id = (uint16_t)strtoul(vid, NULL, 16);
    if (unhex_fixed(sn, cfg.serial, sizeof cfg.serial) || unhex_fixed(mn, cfg.model, sizeof cfg.model) ||
        unhex_fixed(fr, cfg.firmware_rev, sizeof cfg.firmware_rev)) {
        return bad_input(line, "bad identify strings");
    }
    instcsd_env env = {
        .ctx = &s->mem,
        .dma_read = dma_read,
        .dma_write = dma_write,
        .alloc = NULL,
        .free = NULL,
        .now_ns = NULL,
        .panic = on_panic,
    };
    int rc = instcsd_create(&env, &cfg, &s->dev);
    if (rc != INSTCSD_OK) {
        fprintf(stderr, "instcsd_create: %d (%s)\n", rc, instcsd_strerror(rc));
        return 2;
    }
    s->devices++;
    return 0;
}

static int mem_line(struct state *s, char *rest, long line, int post) {
    char *addr_s = strtok(rest, " "), *hex = strtok(NULL, " ");
    uint8_t *bytes;
    if (!addr_s || !hex) {
        return bad_input(line, "short memory line");
    }
    uint64_t addr = strtoull(addr_s, NULL, 16);
    long n = unhex(hex, &bytes);
    if (n < 0) {
        return bad_input(line, "bad hex");
    }
    if (!post) {
        for (uint64_t a = addr & ~(uint64_t)(PAGE - 1); a < addr + (uint64_t)n; a += PAGE) {
            map(&s->mem, a);
        }
        copy(&s->mem, addr, bytes, (size_t)n, 1);
    } else if (!mapped(&s->mem, addr, (size_t)n)) {
        fail(s, "expected bytes at an address the device could not reach");
    } else {
        uint8_t *got = malloc((size_t)n + 1);
        if (!got) {
            free(bytes);
            return bad_input(line, "out of memory");
        }
        copy(&s->mem, addr, got, (size_t)n, 0);
        for (long i = 0; i < n; i++) {
            if (got[i] != bytes[i]) {
                char what[96];
                snprintf(what, sizeof what, "host memory at 0x%" PRIx64 " is %02x, expected %02x",
                         addr + (uint64_t)i, got[i], bytes[i]);
                fail(s, what);
                break;
            }
        }
        free(got);
    }
    free(bytes);
    return 0;
}

static int cqe_line(struct state *s, char *rest, long line) {
    unsigned long f[5];
    char *tok = strtok(rest, " ");
    for (int i = 0; i < 5; i++) {
        if (!tok) {
            return bad_input(line, "short cqe line");
        }
        f[i] = strtoul(tok, NULL, 16);
        tok = strtok(NULL, " ");
    }
    uint8_t cqe[INSTCSD_CQE_SIZE];
    int rc = instcsd_submit(s->dev, s->qid, s->sqe, cqe);
    if (rc != INSTCSD_OK) {
        fail(s, instcsd_strerror(rc));
        return 0;
    }
    unsigned long got[5] = {le32(cqe), le32(cqe + 4), le16(cqe + 10), le16(cqe + 12),
                            (unsigned long)(le16(cqe + 14) >> 1)};
    if (le16(cqe + 8) != 0 || (le16(cqe + 14) & 1) != 0) {
        fail(s, "SQ head or phase set by the library");
    }
    for (int i = 0; i < 5; i++) {
        if (got[i] != f[i]) {
            char what[128];
            static const char *names[5] = {"dw0", "dw1", "sq_id", "cid", "status"};
            snprintf(what, sizeof what, "CQE %s is %lx, expected %lx", names[i], got[i], f[i]);
            fail(s, what);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s VECTORS\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    if (instcsd_abi_version() != INSTCSD_ABI_VERSION) {
        fprintf(stderr, "library ABI %u, header %d\n", instcsd_abi_version(), INSTCSD_ABI_VERSION);
        return 2;
    }
    static struct state s;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t got;
    long line = 0;
    int rc = 0;
    while (rc == 0 && (got = getline(&buf, &cap, f)) >= 0) {
        line++;
        if (got > 0 && buf[got - 1] == '\n') {
            buf[got - 1] = '\0';
        }
        char *rest = strchr(buf, ' ');
        if (rest) {
            *rest++ = '\0';
        } else {
            rest = buf + strlen(buf);
        }
        if (line == 1) {
            rc = strcmp(buf, "instcsd-vectors") == 0 && strcmp(rest, "1") == 0
                     ? 0
                     : bad_input(line, "not a vector file");
        } else if (strcmp(buf, "device") == 0 && !s.dev) {
            rc = device_line(&s, rest, line);
        } else if (strcmp(buf, "end") == 0 && s.dev) {
            finish_command(&s);
            instcsd_destroy(s.dev);
            s.dev = NULL;
            unmap_all(&s.mem);
        } else if (strcmp(buf, "cmd") == 0 && s.dev) {
            finish_command(&s);
            char *qid = strtok(rest, " "), *hex = strtok(NULL, " ");
            if (!qid || unhex_fixed(hex, s.sqe, sizeof s.sqe)) {
                rc = bad_input(line, "bad cmd line");
            }
            s.qid = (uint16_t)(qid ? strtoul(qid, NULL, 10) : 0);
            s.in_cmd = 1;
            s.cmd_ok = 1;
            s.commands++;
        } else if (strcmp(buf, "pre") == 0 && s.in_cmd) {
            rc = mem_line(&s, rest, line, 0);
        } else if (strcmp(buf, "post") == 0 && s.in_cmd) {
            rc = mem_line(&s, rest, line, 1);
        } else if (strcmp(buf, "cqe") == 0 && s.in_cmd) {
            rc = cqe_line(&s, rest, line);
        } else {
            rc = bad_input(line, "unexpected line");
        }
    }
    free(buf);
    fclose(f);
    if (rc == 0 && s.dev) {
        rc = bad_input(line, "last device not closed");
    }
    if (rc != 0) {
        return rc;
    }
    int ok = s.commands > 0 && s.matched == s.commands;
    printf("instcsd-harness: %ld/%ld commands matched on %ld devices: %s\n", s.matched, s.commands,
           s.devices, ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
