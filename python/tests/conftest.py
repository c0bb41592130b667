"""Shared fixtures of the package's tests."""

import numpy as np
import pytest

import instinfer


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def dev():
    d = instinfer.open("sim")
    yield d
    d.close()


SHAPE = dict(layers=2, q_heads=4, kv_heads=2, head_dim=64)


def kv(rng, tokens, dtype=np.float32, shape=SHAPE):
    """Random K and V, [kv_heads, tokens, d]."""
    dims = (shape["kv_heads"], tokens, shape["head_dim"])
    return (
        rng.standard_normal(dims).astype(dtype),
        rng.standard_normal(dims).astype(dtype),
    )


def reference_attention(q, k, v):
    """Dense softmax attention in float64 with grouped-query heads.

    q [q_heads, d], k and v [kv_heads, S, d] -> [q_heads, d].
    """
    q = q.astype(np.float64)
    k = k.astype(np.float64)
    v = v.astype(np.float64)
    group = q.shape[0] // k.shape[0]
    out = np.empty_like(q)
    for h in range(q.shape[0]):
        kh, vh = k[h // group], v[h // group]
        s = kh @ q[h] / np.sqrt(q.shape[1])
        p = np.exp(s - s.max())
        out[h] = (p / p.sum()) @ vh
    return out
