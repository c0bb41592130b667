"""``open_ssd``: the SSD block-sparse backend behind the same calls."""

import numpy as np
import pytest

import instinfer
from conftest import SHAPE, kv, reference_attention


def store(location, capacity=512, **kw):
    return instinfer.open_ssd(location, **SHAPE, capacity=capacity, **kw)


def test_block_sparse_on_a_file_equals_dram(tmp_path, rng):
    k, v = kv(rng, 300)
    q = rng.standard_normal((2, 4, 64)).astype(np.float32)
    outs = []
    for loc in (str(tmp_path), "dram"):
        s = store(loc, slots=2)
        for seq in (0, 1):
            s.open_sequence(seq, **SHAPE)
            assert s.append(seq, 1, k, v) == 300
        out, rep = s.decode(1, [0, 1], q, method="block", compression=0.25)
        assert out.shape == (2, 4, 64)
        assert rep["virtual_ns"] is None
        assert rep["steps"][0]["tokens"] == 300
        assert rep["steps"][0]["tokens_attended"] < 300
        outs.append(out)
        if loc != "dram":
            assert s.path.startswith(str(tmp_path))
            read, written = s.io_bytes()
            assert read > 0 and written > 0
    assert np.array_equal(outs[0], outs[1])


def test_dense_on_the_store_is_attention(tmp_path, rng):
    s = store(str(tmp_path))
    s.open_sequence(4, **SHAPE)
    k, v = kv(rng, 100)
    s.append(4, 0, k, v)
    q = rng.standard_normal((4, 64)).astype(np.float32)
    kn, vn = (rng.standard_normal((2, 64)).astype(np.float32) for _ in range(2))
    p = s.submit(0, 4, q, kn, vn, method="dense")
    out, rep = s.fetch(p)
    want = reference_attention(
        q, np.concatenate([k, kn[:, None]], 1), np.concatenate([v, vn[:, None]], 1)
    )
    # The store keeps fp16; attention runs in f32 on the host.
    assert np.abs(out - want).max() < 5e-3
    assert s.length(4, 0) == 101 and rep["steps"][0]["tokens_attended"] == 101


def test_store_refusals(tmp_path, rng):
    with pytest.raises(instinfer.InvalidArgument):
        store("/no/such/directory")
    with pytest.raises(instinfer.InvalidArgument):
        store("dram", capacity=0)
    with pytest.raises(instinfer.InvalidArgument):
        instinfer.open_ssd("dram", 1, 3, 2, 64, 16)
    s = store("dram", capacity=64)
    assert s.specs == [] and s.path is None and "DRAM" in repr(s)
    with pytest.raises(instinfer.InvalidArgument):
        s.open_sequence(0, **dict(SHAPE, head_dim=32))
    with pytest.raises(instinfer.InvalidArgument):
        s.open_sequence(0, **SHAPE, basis="pca")
    s.open_sequence(0, **SHAPE)
    with pytest.raises(instinfer.SequenceError):
        s.open_sequence(0, **SHAPE)
    for drives_only in (s.identify, s.stats, s.virtual_clock_ns):
        with pytest.raises(instinfer.InvalidArgument):
            drives_only()
    with pytest.raises(instinfer.InvalidArgument):
        s.append(0, 0, *kv(rng, 65))
    s.append(0, 0, *kv(rng, 10))
    q = np.zeros((4, 64), np.float32)
    with pytest.raises(instinfer.InvalidArgument, match="dense and block"):
        s.decode(0, 0, q, method="sparf")
    with pytest.raises(TypeError):
        s.decode(0, 0, q.astype(np.float64))
    s.close_sequence(0)
    with pytest.raises(instinfer.SequenceError):
        s.decode(0, 0, q)
