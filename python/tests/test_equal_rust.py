"""The Python decode path equals the Rust `CsdArray` path bit for bit:
`instinfer attend` (the CLI, which drives a `CsdArray`) on the same
`.npy` inputs. The CLI binary is `$INSTINFER_BIN`, else the workspace's
`target/{debug,release}/instinfer`; without one the test is skipped,
unless `INSTINFER_BIN` names it (then it must exist)."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import instinfer

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cli():
    given = os.environ.get("INSTINFER_BIN")
    if given:
        assert pathlib.Path(given).is_file(), f"INSTINFER_BIN={given} does not exist"
        return given
    for profile in ("debug", "release"):
        p = ROOT / "target" / profile / "instinfer"
        if p.is_file():
            return str(p)
    pytest.skip("no instinfer binary (cargo build -p instinfer, or set INSTINFER_BIN)")


@pytest.mark.parametrize(
    "method, devices, dtype",
    [("dense", 1, np.float32), ("sparf", 1, np.float16), ("sparf", 2, np.float32), ("dense", 4, np.float16)],
)
def test_decode_equals_the_rust_array(tmp_path, method, devices, dtype):
    exe = cli()
    rng = np.random.default_rng(99)
    kvh, qh, s, d = 4, 8, 700, 64
    k = rng.standard_normal((kvh, s, d)).astype(dtype)
    v = rng.standard_normal((kvh, s, d)).astype(dtype)
    q = rng.standard_normal((qh, d)).astype(dtype)
    for name, a in (("k", k), ("v", v), ("q", q)):
        np.save(tmp_path / f"{name}.npy", a)
    r, topk, local = 8, 90, 20
    args = [exe, "attend", "--method", method, "--devices", str(devices), "--out", str(tmp_path / "out.npy")]
    for name in ("k", "v", "q"):
        args += [f"--{name}", str(tmp_path / f"{name}.npy")]
    if method == "sparf":
        args += ["--r", str(r), "--topk", str(topk), "--local", str(local)]
    res = subprocess.run(args, capture_output=True, text=True, check=True)
    report = json.loads(res.stdout.strip().splitlines()[-1])
    want = np.load(tmp_path / "out.npy")

    dev = instinfer.open("sim", count=devices)
    dev.open_sequence(0, layers=1, q_heads=qh, kv_heads=kvh, head_dim=d)
    dev.append(0, 0, k, v)
    sparf = (r, topk, local) if method == "sparf" else None
    got, rep = dev.decode(0, 0, q, method=method, sparf=sparf)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    assert rep["steps"][0]["pages_read"] == report["flash_pages_read"], report
