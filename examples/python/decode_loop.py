"""A decode loop over a few attention layers with the KV cache on a drive.

Each layer projects the hidden state to q, k and v, attends over the
layer's cache, and adds the output projection back (a residual stream, no
MLP). Two copies of the loop run side by side from the same weights and
tokens: one keeps its KV cache on the simulated drive (``instinfer``),
the other in NumPy with float64 attention. The script prints, per step,
how far the drive's hidden state is from NumPy's, and the drive's virtual
time and flash pages for the layer calls.

    pip install .
    python examples/python/decode_loop.py [--method sparf --compression 0.125]
"""

import argparse

import numpy as np

import instinfer


def attention(q, k, v):
    """q [q_heads, d], k and v [kv_heads, S, d] -> [q_heads, d] (float64)."""
    group = q.shape[0] // k.shape[0]
    out = np.empty(q.shape)
    for h in range(q.shape[0]):
        s = k[h // group] @ q[h] / np.sqrt(q.shape[1])
        p = np.exp(s - s.max())
        out[h] = (p / p.sum()) @ v[h // group]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="sim", help="drive spec (sim, qemu:zynqmp, tcp://..., /dev/ngXnY)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=512, help="prompt tokens")
    ap.add_argument("--steps", type=int, default=8, help="tokens decoded")
    ap.add_argument("--method", default="dense")
    ap.add_argument("--compression", type=float, default=1.0)
    args = ap.parse_args()

    q_heads, kv_heads, d = 8, 2, 64
    width = q_heads * d
    rng = np.random.default_rng(0)
    scale = 1 / np.sqrt(width)
    w = [
        {
            "q": rng.standard_normal((width, q_heads * d)) * scale,
            "k": rng.standard_normal((width, kv_heads * d)) * scale,
            "v": rng.standard_normal((width, kv_heads * d)) * scale,
            "o": rng.standard_normal((q_heads * d, width)) * scale,
        }
        for _ in range(args.layers)
    ]
    tokens = rng.standard_normal((args.prompt + args.steps, width))

    dev = instinfer.open(args.device)
    dev.open_sequence(0, args.layers, q_heads, kv_heads, d)
    cache = [None] * args.layers  # NumPy's own (k, v) per layer

    # Prefill: the prompt's K and V per layer (causal attention in NumPy
    # gives the next layer's input), appended to the drive in one call.
    x = tokens[: args.prompt]
    for layer, wl in enumerate(w):
        k = (x @ wl["k"]).reshape(-1, kv_heads, d).transpose(1, 0, 2)
        v = (x @ wl["v"]).reshape(-1, kv_heads, d).transpose(1, 0, 2)
        dev.append(0, layer, k.astype(np.float32), v.astype(np.float32))
        cache[layer] = (k, v)
        q = (x @ wl["q"]).reshape(-1, q_heads, d)
        o = np.stack([attention(q[t], k[:, : t + 1], v[:, : t + 1]) for t in range(len(x))])
        x = x + o.reshape(len(x), -1) @ wl["o"]

    print(f"{args.layers} layers, {args.prompt}-token prompt on {dev.specs}, {args.method} at {args.compression}")
    print("step  max|drive - numpy|  virtual µs  pages read")
    for t in range(args.steps):
        xd = xn = tokens[args.prompt + t]
        virtual_ns, pages = 0, 0
        for layer, wl in enumerate(w):
            outs = []
            for x, on_drive in ((xd, True), (xn, False)):
                q = (x @ wl["q"]).reshape(q_heads, d)
                kn = (x @ wl["k"]).reshape(kv_heads, d)
                vn = (x @ wl["v"]).reshape(kv_heads, d)
                if on_drive:
                    o, rep = dev.decode(
                        layer, 0, q.astype(np.float32), kn.astype(np.float32), vn.astype(np.float32),
                        method=args.method, compression=args.compression,
                    )
                    virtual_ns += rep["virtual_ns"] or 0
                    pages += rep["steps"][0]["pages_read"]
                else:
                    k, v = cache[layer]
                    k = np.concatenate([k, kn[:, None]], 1)
                    v = np.concatenate([v, vn[:, None]], 1)
                    cache[layer] = (k, v)
                    o = attention(q, k, v)
                outs.append(x + o.reshape(-1) @ wl["o"])
            xd, xn = outs
        err = np.abs(xd - xn).max()
        print(f"{t:4d}  {err:18.2e}  {virtual_ns / 1e3:10.1f}  {pages:10d}")
    dev.close()


if __name__ == "__main__":
    main()
