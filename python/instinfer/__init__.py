"""Decode attention inside computational SSDs, from Python.

Open drives with the same spec strings as the ``instinfer`` CLI (the
simulated board ``"sim"`` by default), open a sequence with a model's
attention shape, append each layer's K and V, and decode one layer for a
batch of sequences at a time::

    import numpy as np, instinfer

    dev = instinfer.open("sim")
    dev.open_sequence(0, layers=1, q_heads=4, kv_heads=2, head_dim=64)
    dev.append(0, 0, k, v)                    # [kv_heads, tokens, d]
    out, report = dev.decode(0, 0, q, k_new, v_new, method="sparf", compression=1/8)

``submit`` / ``fetch`` split a decode so the caller can compute while the
drives work; the GIL is released while they do. ``open_ssd`` opens the SSD
block-sparse backend (a plain drive or a directory) as a ``Device`` with
the same calls.
Errors are ``instinfer.Error`` subclasses carrying ``code`` and, for a
drive's refusal, ``nvme_status`` and ``command``.
"""

from ._native import (
    DENSE_EPS,
    SPARF_EPS,
    Device,
    DeviceError,
    Error,
    InvalidArgument,
    Pending,
    SequenceError,
    StorageError,
    TransportError,
    __version__,
    error_bound,
    methods,
    open,
    open_ssd,
)

__all__ = [
    "DENSE_EPS",
    "SPARF_EPS",
    "Device",
    "DeviceError",
    "Error",
    "InvalidArgument",
    "Pending",
    "SequenceError",
    "StorageError",
    "TransportError",
    "__version__",
    "error_bound",
    "methods",
    "open",
    "open_ssd",
]
