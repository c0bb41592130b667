"""What the Python binding costs per layer call, against the same call made
in Rust in the same process (``Device.time_rust_decode``: a Rust loop of
submit + fetch through ``offload::Drives``, the API the binding wraps).

Wall time on this machine, both sides on the simulated drive, which
computes inside the call (its virtual device time is not wall time and is
not part of these figures). For each shape: the median over rounds of
the mean per-call time of ``iters`` calls, Python then Rust, alternated.

    pip install .
    python python/benches/overhead.py [--iters 200 --rounds 5]
"""

import argparse
import statistics
import time

import numpy as np

import instinfer

SHAPES = [
    # (name, q_heads, kv_heads, d, tokens, batch)
    ("SmolLM2-135M layer, 64 tokens", 9, 3, 64, 64, 1),
    ("SmolLM2-135M layer, 1024 tokens", 9, 3, 64, 1024, 1),
    ("Llama-3-8B layer, 1024 tokens", 32, 8, 128, 1024, 1),
    ("SmolLM2-135M layer, batch of 8 x 256", 9, 3, 64, 256, 8),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--method", default="dense")
    ap.add_argument("--compression", type=float, default=1.0)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{args.method} at {args.compression}; wall µs per layer call (median of {args.rounds} rounds of {args.iters})")
    print(f"{'shape':40} {'python':>9} {'rust':>9} {'overhead':>9} {'ratio':>7}")
    for name, qh, kvh, d, s, batch in SHAPES:
        dev = instinfer.open("sim")
        seqs = list(range(batch))
        for seq in seqs:
            dev.open_sequence(seq, 1, qh, kvh, d)
            k = rng.standard_normal((kvh, s, d)).astype(np.float16)
            dev.append(seq, 0, k, k)
        q = rng.standard_normal((batch, qh, d)).astype(np.float16)
        kw = dict(method=args.method, compression=args.compression)
        py, rs = [], []
        for _ in range(args.rounds):
            t = time.perf_counter()
            for _ in range(args.iters):
                if batch == 1:
                    dev.decode(0, 0, q[0], **kw)
                else:
                    dev.decode(0, seqs, q, **kw)
            py.append((time.perf_counter() - t) / args.iters)
            if batch == 1:
                rs.append(dev.time_rust_decode(0, 0, q[0], args.iters, **kw))
            else:
                rs.append(dev.time_rust_decode(0, seqs, q, args.iters, **kw))
        p, r = statistics.median(py) * 1e6, statistics.median(rs) * 1e6
        print(f"{name:40} {p:9.1f} {r:9.1f} {p - r:9.1f} {p / r:7.3f}")
        dev.close()


if __name__ == "__main__":
    main()
