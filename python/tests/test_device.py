"""Every call of ``Device``: results, reports, and refusals."""

import threading

import numpy as np
import pytest

import instinfer
from conftest import SHAPE, kv, reference_attention


def opened(dev, seq=0, **kw):
    dev.open_sequence(seq, **SHAPE, **kw)
    return seq


def test_open_specs_and_identify():
    d = instinfer.open(["sim", "sim"])
    assert d.specs == ["sim", "sim"]
    assert instinfer.open("sim", count=3).specs == ["sim"] * 3
    info = d.identify()
    assert len(info) == 2
    assert {"dense", "sparf"} <= set(info[0]["methods"])
    assert info[0]["page_size"] == 4096
    assert instinfer.open(page_size=16384).identify()[0]["page_size"] == 16384
    assert "sim" in repr(d)


@pytest.mark.parametrize(
    "args",
    [
        dict(devices="floppy"),
        dict(devices="qemu:nowhere"),
        dict(devices="tcp://h:port/n"),
        dict(devices=[]),
        dict(count=0),
        dict(devices=["sim"], count=2),
        dict(page_size=1000),
    ],
)
def test_bad_device_arguments(args):
    with pytest.raises(instinfer.InvalidArgument):
        instinfer.open(**args)


def test_transport_error_for_an_unreachable_target():
    with pytest.raises(instinfer.TransportError) as e:
        instinfer.open("tcp://127.0.0.1:9/nqn.none")
    assert e.value.code == 6
    assert e.value.nvme_status is None


def test_dense_decode_matches_numpy_and_reports(dev, rng):
    seq = opened(dev)
    k, v = kv(rng, 300)
    assert dev.append(seq, 0, k, v) == 300
    assert dev.length(seq, 0) == 300 and dev.length(seq, 1) == 0
    q = rng.standard_normal((4, 64)).astype(np.float32)
    kn, vn = (rng.standard_normal((2, 64)).astype(np.float32) for _ in range(2))
    out, rep = dev.decode(0, seq, q, kn, vn)
    assert out.shape == (4, 64) and out.dtype == np.float32
    want = reference_attention(
        q, np.concatenate([k, kn[:, None]], 1), np.concatenate([v, vn[:, None]], 1)
    )
    # fp16 inputs and the engine's fixed point: a few 1e-3 at most.
    assert np.abs(out - want).max() < 2e-2
    assert dev.length(seq, 0) == 301
    step = rep["steps"][0]
    assert step["seq"] == seq and step["tokens"] == 301
    assert step["tokens_attended"] == 301 and step["pages_read"] > 0
    assert rep["virtual_ns"] > 0
    stats = dev.stats()[0]
    assert stats["decodes"] == 1 and stats["tokens_appended"] == 301
    assert dev.virtual_clock_ns()[0] > 0


def test_sparse_methods_read_less(dev, rng):
    dev.open_sequence(0, **SHAPE)
    dev.open_sequence(1, **SHAPE, basis="pca")
    dev.open_sequence(2, **SHAPE, layout="pages")
    k, v = kv(rng, 1024)
    for s in (0, 1, 2):
        dev.append(s, 0, k, v)
    q = rng.standard_normal((4, 64)).astype(np.float32)
    _, dense = dev.decode(0, 0, q)
    dense_pages = dense["steps"][0]["pages_read"]
    for seq, method in [(0, "sparf"), (1, "sparf-pca"), (2, "pages")]:
        out, rep = dev.decode(0, seq, q, method=method, compression=1 / 8)
        assert np.isfinite(out).all()
        s = rep["steps"][0]
        assert s["pages_read"] < dense_pages, (method, s)
        assert s["engine_bytes"] < dense["steps"][0]["engine_bytes"], (method, s)
    _, rep = dev.decode(0, 0, q, method="sparf", sparf=(8, 100, 20))
    assert rep["steps"][0]["elements_filtered"] > 0


def test_batches_split_submit_and_fetch(dev, rng):
    seqs = [3, 5, 7]
    for s in seqs:
        opened(dev, s)
        dev.append(s, 1, *kv(rng, 50 + s))
    q = rng.standard_normal((3, 4, 64)).astype(np.float16)
    kn = rng.standard_normal((3, 2, 64)).astype(np.float16)
    vn = rng.standard_normal((3, 2, 64)).astype(np.float16)
    p = dev.submit(1, seqs, q, kn, vn)
    assert p.seqs == seqs and "Pending" in repr(p)
    # The layer is busy until fetched.
    with pytest.raises(instinfer.InvalidArgument):
        dev.append(3, 1, *kv(rng, 1))
    out, rep = dev.fetch(p)
    assert out.shape == (3, 4, 64)
    assert [s["tokens"] for s in rep["steps"]] == [54, 56, 58]
    # One at a time gives the same numbers as the batch.
    for i, s in enumerate(seqs):
        o, _ = dev.decode(1, s, q[i])
        assert np.array_equal(o, dev.decode(1, s, q[i])[0])
    with pytest.raises(instinfer.SequenceError):
        dev.fetch(p)


def test_f16_and_f32_inputs_agree_bit_for_bit(rng):
    k, v = kv(rng, 80, np.float16)
    q = rng.standard_normal((4, 64)).astype(np.float16)
    outs = []
    for cast in (np.float16, np.float32):
        d = instinfer.open()
        d.open_sequence(0, **SHAPE)
        d.append(0, 0, k.astype(cast), v.astype(cast))
        outs.append(d.decode(0, 0, q.astype(cast))[0])
    assert outs[0].tobytes() == outs[1].tobytes()


def test_non_contiguous_arrays_are_read_in_order(dev, rng):
    seq = opened(dev)
    k, v = kv(rng, 40)
    kt = np.asfortranarray(k)
    dev.append(seq, 0, kt, v)
    d2 = instinfer.open()
    d2.open_sequence(0, **SHAPE)
    d2.append(0, 0, k, v)
    q = rng.standard_normal((64, 4)).astype(np.float32).T  # a transposed view
    assert np.array_equal(dev.decode(0, seq, q)[0], d2.decode(0, 0, np.ascontiguousarray(q))[0])


@pytest.mark.parametrize(
    "k_shape, v_shape",
    [((2, 10, 63), (2, 10, 63)), ((3, 10, 64), (3, 10, 64)), ((2, 10, 64), (2, 9, 64)), ((2, 64), (2, 64)), ((2, 0, 64), (2, 0, 64))],
)
def test_bad_shapes_are_refused(dev, k_shape, v_shape):
    seq = opened(dev)
    with pytest.raises(instinfer.InvalidArgument):
        dev.append(seq, 0, np.zeros(k_shape, np.float32), np.zeros(v_shape, np.float32))
    assert dev.length(seq, 0) == 0


@pytest.mark.parametrize("bad", [np.zeros((2, 4, 64), np.float64), np.zeros((2, 4, 64), np.int32), [[1.0]], "k"])
def test_bad_dtypes_are_type_errors(dev, bad):
    seq = opened(dev)
    with pytest.raises(TypeError, match="float16 or float32"):
        dev.append(seq, 0, bad, np.zeros((2, 4, 64), np.float32))


def test_bad_decode_arguments(dev, rng):
    seq = opened(dev)
    q = np.zeros((4, 64), np.float32)
    with pytest.raises(instinfer.InvalidArgument, match="no token"):
        dev.decode(0, seq, q)
    dev.append(seq, 0, *kv(rng, 20))
    kn = np.zeros((2, 64), np.float32)
    cases = [
        dict(q=np.zeros((4, 32), np.float32)),
        dict(q=np.zeros((1, 4, 64), np.float32)),
        dict(k_new=kn),
        dict(k_new=kn, v_new=np.zeros((2, 63), np.float32)),
        dict(method="sparq"),
        dict(method="nope"),
        dict(method="sparf", compression=0.0),
        dict(method="sparf", compression=2.0),
        dict(method="dense", sparf=(4, 4, 1)),
        dict(method="sparf", sparf=(65, 4, 1)),
        dict(method="sparf-pca"),
        dict(q=np.full((4, 64), np.nan, np.float32)),
        dict(layer=9),
    ]
    for c in cases:
        args = dict(layer=0, seqs=seq, q=q)
        args.update(c)
        with pytest.raises(instinfer.InvalidArgument):
            dev.decode(**args)
    assert dev.length(seq, 0) == 20
    with pytest.raises(instinfer.InvalidArgument):
        dev.decode(0, [seq, seq], np.zeros((2, 4, 64), np.float32))
    with pytest.raises(instinfer.InvalidArgument):
        dev.decode(0, [], np.zeros((0, 4, 64), np.float32))


def test_closed_and_unknown_sequences(dev, rng):
    seq = opened(dev)
    with pytest.raises(instinfer.SequenceError):
        dev.open_sequence(seq, **SHAPE)
    dev.append(seq, 0, *kv(rng, 10))
    p = dev.submit(0, seq, np.zeros((4, 64), np.float32))
    dev.close_sequence(seq)
    assert dev.sequences() == []
    with pytest.raises(instinfer.SequenceError):
        dev.fetch(p)
    for call in (
        lambda: dev.append(seq, 0, *kv(rng, 1)),
        lambda: dev.decode(0, seq, np.zeros((4, 64), np.float32)),
        lambda: dev.length(seq, 0),
        lambda: dev.close_sequence(seq),
    ):
        with pytest.raises(instinfer.SequenceError) as e:
            call()
        assert isinstance(e.value, KeyError) and e.value.code == 2


def test_bad_sequence_shapes(dev):
    bad = [
        dict(layers=0, q_heads=4, kv_heads=2, head_dim=64),
        dict(layers=1, q_heads=3, kv_heads=2, head_dim=64),
        dict(layers=1, q_heads=4, kv_heads=2, head_dim=64, basis="curved"),
        dict(layers=1, q_heads=4, kv_heads=2, head_dim=64, layout="spiral"),
        dict(layers=1, q_heads=4, kv_heads=2, head_dim=64, dim_group=3),
    ]
    for b in bad:
        with pytest.raises(instinfer.InvalidArgument):
            dev.open_sequence(0, **b)
    with pytest.raises(OverflowError):
        dev.open_sequence(-1, **SHAPE)


def test_a_drive_refusal_is_a_device_error_with_its_status(dev):
    limit = dev.identify()[0]["max_sequences"]
    with pytest.raises(instinfer.DeviceError) as e:
        for s in range(limit + 1):
            dev.open_sequence(s, layers=1, q_heads=1, kv_heads=1, head_dim=8)
    assert e.value.command == "SEQ_OPEN"
    assert e.value.nvme_status and e.value.code == 5
    assert len(dev.sequences()) == limit


def test_a_batch_belongs_to_its_device(rng):
    a, b = instinfer.open(), instinfer.open()
    for d in (a, b):
        d.open_sequence(0, **SHAPE)
        d.append(0, 0, *kv(rng, 8))
    p = a.submit(0, 0, np.zeros((4, 64), np.float32))
    with pytest.raises(instinfer.InvalidArgument):
        b.fetch(p)
    a.fetch(p)


def test_the_gil_is_released_while_the_drive_works(rng):
    """Two threads decoding on two drives at once both finish with the
    results each gets alone."""
    devs = [instinfer.open() for _ in range(2)]
    k, v = kv(rng, 2000)
    q = rng.standard_normal((4, 64)).astype(np.float32)
    alone = []
    for d in devs:
        d.open_sequence(0, **SHAPE)
        d.append(0, 0, k, v)
        alone.append(d.decode(0, 0, q)[0])
    got = [None, None]

    def work(i):
        for _ in range(3):
            got[i] = devs[i].decode(0, 0, q)[0]

    ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(np.array_equal(g, a) for g, a in zip(got, alone))


def test_context_manager_closes_sequences(rng):
    with instinfer.open() as d:
        d.open_sequence(0, **SHAPE)
        d.open_sequence(1, **SHAPE)
    assert d.sequences() == []


def test_methods_are_listed():
    names = [n for n, _ in instinfer.methods()]
    assert {"dense", "sparf", "sparf-pca", "pages", "block"} <= set(names)


def test_rust_loop_helper_times_the_same_decode(dev, rng):
    seq = opened(dev)
    dev.append(seq, 0, *kv(rng, 64))
    q = rng.standard_normal((4, 64)).astype(np.float32)
    assert dev.time_rust_decode(0, seq, q, 3) > 0
    assert dev.stats()[0]["decodes"] == 3


def test_error_bound_is_the_engines():
    assert instinfer.DENSE_EPS == 1e-4 and instinfer.SPARF_EPS == 2e-4
    assert instinfer.error_bound(instinfer.DENSE_EPS, 2.0) == pytest.approx(2e-4 + 2.0**-13)


def test_drives_have_no_store(dev):
    assert dev.path is None
    with pytest.raises(instinfer.InvalidArgument):
        dev.io_bytes()
