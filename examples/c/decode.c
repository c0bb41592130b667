/*
 * decode.c — one layer's decode attention on the simulated drive, from C.
 *
 * Opens the simulated drive (the default device), opens a sequence with a
 * small grouped-query shape, appends a prompt's K and V (float), then
 * decodes a few tokens: each step sends q and the new token's K and V, the
 * drive stores the token and attends over the whole sequence. Every output
 * is compared with the same attention computed here in double precision;
 * the program exits 0 when all are within 2e-2, and checks that a bad call
 * (a sequence never opened) is refused with a clear error.
 *
 *   cargo build -p instinfer-capi --release
 *   cc -std=c11 -Icapi/include examples/c/decode.c -Ltarget/release -linstinfer -lm -o decode
 *   LD_LIBRARY_PATH=target/release ./decode [device spec]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "instinfer.h"

enum { Q_HEADS = 8, KV_HEADS = 2, D = 64, PROMPT = 600, STEPS = 4 };
enum { CAP = PROMPT + STEPS };

static float *k_all, *v_all; /* [KV_HEADS][CAP][D], the host's copy */

static float rnd(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) / (double)(1ULL << 24)) * 2.0f - 1.0f;
}

static int check(int rc, const char *what) {
    if (rc != INSTINFER_OK) {
        fprintf(stderr, "%s: %s: %s (NVMe status 0x%04x)\n", what, instinfer_strerror(rc),
                instinfer_last_error(), instinfer_last_nvme_status());
        exit(1);
    }
    return rc;
}

/* Attention of query head h over the first s tokens, in double. */
static void attend(const float *q, int h, int s, double *out) {
    const float *k = k_all + (size_t)(h / (Q_HEADS / KV_HEADS)) * CAP * D;
    const float *v = v_all + (size_t)(h / (Q_HEADS / KV_HEADS)) * CAP * D;
    double *w = malloc(sizeof(double) * (size_t)s), mx = -INFINITY, sum = 0;
    for (int t = 0; t < s; t++) {
        double dot = 0;
        for (int i = 0; i < D; i++) dot += (double)q[h * D + i] * k[(size_t)t * D + i];
        w[t] = dot / sqrt((double)D);
        if (w[t] > mx) mx = w[t];
    }
    for (int t = 0; t < s; t++) sum += (w[t] = exp(w[t] - mx));
    for (int i = 0; i < D; i++) out[i] = 0;
    for (int t = 0; t < s; t++)
        for (int i = 0; i < D; i++) out[i] += w[t] / sum * v[(size_t)t * D + i];
    free(w);
}

int main(int argc, char **argv) {
    const char *spec = argc > 1 ? argv[1] : "sim";
    instinfer_device *dev = NULL;
    check(instinfer_open(&spec, 1, 4096, &dev), "open");

    instinfer_caps caps;
    check(instinfer_identify(dev, 0, &caps), "identify");
    printf("%s: %u channels x %u ways, pages of %u bytes, methods 0x%x\n", spec, caps.channels,
           caps.ways, caps.page_size, caps.methods);

    instinfer_shape shape = {.layers = 1, .q_heads = Q_HEADS, .kv_heads = KV_HEADS, .head_dim = D};
    check(instinfer_seq_open(dev, 7, &shape, NULL), "seq_open");

    uint64_t seed = 42;
    k_all = malloc(sizeof(float) * KV_HEADS * CAP * D);
    v_all = malloc(sizeof(float) * KV_HEADS * CAP * D);
    for (size_t i = 0; i < (size_t)KV_HEADS * CAP * D; i++) {
        k_all[i] = rnd(&seed);
        v_all[i] = rnd(&seed);
    }
    /* The prompt: [KV_HEADS][PROMPT][D], packed from the host copy. */
    float *k = malloc(sizeof(float) * KV_HEADS * PROMPT * D);
    float *v = malloc(sizeof(float) * KV_HEADS * PROMPT * D);
    for (int h = 0; h < KV_HEADS; h++)
        for (int t = 0; t < PROMPT; t++)
            for (int i = 0; i < D; i++) {
                k[((size_t)h * PROMPT + t) * D + i] = k_all[((size_t)h * CAP + t) * D + i];
                v[((size_t)h * PROMPT + t) * D + i] = v_all[((size_t)h * CAP + t) * D + i];
            }
    check(instinfer_append(dev, 7, 0, INSTINFER_F32, k, v, PROMPT), "append");

    instinfer_method dense = {.name = "dense", .compression = 1.0};
    double worst = 0;
    for (int step = 0; step < STEPS; step++) {
        int pos = PROMPT + step;
        float q[Q_HEADS * D], kn[KV_HEADS * D], vn[KV_HEADS * D], out[Q_HEADS * D];
        for (int i = 0; i < Q_HEADS * D; i++) q[i] = rnd(&seed);
        for (int h = 0; h < KV_HEADS; h++)
            for (int i = 0; i < D; i++) {
                kn[h * D + i] = k_all[((size_t)h * CAP + pos) * D + i];
                vn[h * D + i] = v_all[((size_t)h * CAP + pos) * D + i];
            }
        uint32_t seq = 7;
        uint64_t batch, vns;
        instinfer_report rep;
        check(instinfer_submit(dev, 0, &seq, 1, INSTINFER_F32, q, kn, vn, &dense, &batch), "submit");
        check(instinfer_fetch(dev, batch, out, Q_HEADS * D, &rep, 1, &vns), "fetch");
        for (int h = 0; h < Q_HEADS; h++) {
            double want[D];
            attend(q, h, pos + 1, want);
            for (int i = 0; i < D; i++) {
                double e = fabs(out[h * D + i] - want[i]);
                if (e > worst) worst = e;
            }
        }
        printf("step %d: %u tokens, %u pages read, %.1f virtual us\n", step, rep.tokens,
               rep.pages_read, (double)vns / 1e3);
    }
    size_t len = 0;
    check(instinfer_seq_length(dev, 7, 0, &len), "seq_length");
    printf("max |drive - host| = %.2e over %d steps, %zu tokens stored\n", worst, STEPS, len);

    /* A sequence never opened: refused, nothing changed. */
    int rc = instinfer_append(dev, 99, 0, INSTINFER_F32, k, v, 1);
    if (rc != INSTINFER_ENOSEQ) {
        fprintf(stderr, "append to an unknown sequence returned %d\n", rc);
        return 1;
    }
    printf("refused as expected: %s (%s)\n", instinfer_strerror(rc), instinfer_last_error());

    uint64_t stats[INSTINFER_STATS];
    check(instinfer_stats(dev, 0, stats), "stats");
    printf("%s = %llu\n", instinfer_stat_name(15), (unsigned long long)stats[15]);
    check(instinfer_seq_close(dev, 7), "seq_close");
    instinfer_free(dev);
    free(k);
    free(v);
    free(k_all);
    free(v_all);
    return worst < 2e-2 && len == (size_t)CAP ? 0 : 1;
}
