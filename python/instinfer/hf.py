"""Hugging Face transformers on the drive: decode attention of a
Llama-family model runs on an ``instinfer`` device.

    import instinfer.hf  # registers attn_implementation="instinfer"

    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="instinfer")
    cache = instinfer.hf.InstinferCache(model.config, method="sparf", compression=1/8)
    out = model.generate(input_ids, cache=cache, max_new_tokens=32)
    cache.close()

How it works: ``InstinferCache`` is a ``transformers`` ``Cache`` whose
layers keep no tensors. Its update appends a prompt's K and V of the layer
to the drive (``Device.append``); on a decode step it only hands the new
token's K and V to the attention function, which sends q, k_new and v_new
in one ``Device.decode`` (the drive stores the token and attends over the
whole sequence). The prompt's own causal attention runs on the host, as on
the drive's host side. One sequence per batch row; batches must not be
padded (the drive attends over every stored token).

``check=True`` keeps a host copy of the fp16 K/V and checks every decode
output of every layer against a float64 reference on the same fp16 inputs
with the engine's error bound (``instinfer.error_bound``); the worst ratio
(≤ 1 within the bound) is in ``cache.worst_bound_ratio``. Dense only.

Needs ``transformers`` ≥ 5 (the ``cache`` argument and layered caches).
"""

from __future__ import annotations

import contextvars
import math
from typing import Any, Optional

import numpy as np
import torch
from transformers import AttentionInterface
from transformers.cache_utils import Cache, CacheLayerMixin
from transformers.masking_utils import AttentionMaskInterface, eager_mask

from . import _native

__all__ = ["InstinferCache", "InstinferLayer", "attention", "register"]

NAME = "instinfer"

# The cache whose layer the model is in (set by its update, which runs
# right before the layer's attention).
_CURRENT: contextvars.ContextVar[Optional["InstinferCache"]] = contextvars.ContextVar(
    "instinfer_cache", default=None
)


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float32).contiguous().numpy()


class InstinferLayer(CacheLayerMixin):
    """One layer's cache: a token count; the tokens live on the drive."""

    is_sliding = False
    is_compileable = False
    is_croppable = False

    def __init__(self, cache: "InstinferCache", layer_idx: int):
        super().__init__()
        self.cache = cache
        self.layer_idx = layer_idx
        self.length = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n = key_states.shape[-2]
        self.cache._open(key_states.shape[0])
        if n > 1 or self.length == 0:
            if self.length:
                raise NotImplementedError(
                    "instinfer: a second multi-token chunk on a layer that holds tokens "
                    "(chunked prefill) is not supported"
                )
            self.cache._append(self.layer_idx, key_states, value_states)
        self.length += n
        return key_states, value_states

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.length + query_length, 0

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return -1

    def reset(self) -> None:
        raise NotImplementedError("instinfer: close the cache and make a new one")


class InstinferCache(Cache):
    """A ``transformers`` cache whose KV lives on an ``instinfer`` device."""

    def __init__(
        self,
        config: Any,
        device: Optional[_native.Device] = None,
        *,
        method: str = "dense",
        compression: float = 1.0,
        first_seq: int = 0,
        check: bool = False,
    ):
        cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
        self.q_heads = cfg.num_attention_heads
        self.kv_heads = getattr(cfg, "num_key_value_heads", None) or self.q_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.q_heads
        self.n_layers = cfg.num_hidden_layers
        self.device = device if device is not None else _native.open("sim")
        self.method = method
        self.compression = compression
        self.first_seq = first_seq
        self.seqs: list[int] = []
        self.check = check
        if check and method != "dense":
            raise ValueError("check=True compares with dense attention: method must be 'dense'")
        self.worst_bound_ratio = 0.0
        self._host: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.reports: list[dict] = []
        super().__init__(layers=[InstinferLayer(self, i) for i in range(self.n_layers)])

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any):
        _CURRENT.set(self)
        return super().update(key_states, value_states, layer_idx, *args, **kwargs)

    def _open(self, batch: int) -> None:
        if self.seqs:
            if len(self.seqs) != batch:
                raise ValueError(f"instinfer: the cache holds {len(self.seqs)} sequences, the batch has {batch}")
            return
        seqs = list(range(self.first_seq, self.first_seq + batch))
        for i, s in enumerate(seqs):
            try:
                self.device.open_sequence(s, self.n_layers, self.q_heads, self.kv_heads, self.head_dim)
            except Exception:
                for t in seqs[:i]:
                    self.device.close_sequence(t)
                raise
        self.seqs = seqs

    def _append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        kn, vn = _np(k), _np(v)
        for b, s in enumerate(self.seqs):
            self.device.append(s, layer, kn[b], vn[b])
        if self.check:
            self._host[layer] = (kn.astype(np.float16), vn.astype(np.float16))

    def _decode(self, layer: int, q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor) -> np.ndarray:
        qn, kn, vn = _np(q), _np(k_new), _np(v_new)
        out, rep = self.device.decode(
            layer, self.seqs, qn, kn, vn, method=self.method, compression=self.compression
        )
        self.reports.append(rep)
        if self.check:
            self._check(layer, qn, kn, vn, out)
        return out

    def _check(self, layer: int, q: np.ndarray, kn: np.ndarray, vn: np.ndarray, out: np.ndarray) -> None:
        k, v = self._host[layer]
        k = np.concatenate([k, kn.astype(np.float16)[:, :, None]], 2)
        v = np.concatenate([v, vn.astype(np.float16)[:, :, None]], 2)
        self._host[layer] = (k, v)
        q16 = q.astype(np.float16).astype(np.float64)
        group = self.q_heads // self.kv_heads
        for b in range(q.shape[0]):
            kb, vb = k[b].astype(np.float64), v[b].astype(np.float64)
            for h in range(self.q_heads):
                s = kb[h // group] @ q16[b, h] / math.sqrt(self.head_dim)
                p = np.exp(s - s.max())
                ref = (p / p.sum()) @ vb[h // group]
                bound = _native.error_bound(_native.DENSE_EPS, float(np.abs(vb[h // group]).max()))
                ratio = float(np.abs(out[b, h] - ref).max()) / bound
                self.worst_bound_ratio = max(self.worst_bound_ratio, ratio)

    def close(self) -> None:
        """Closes the cache's sequences on the drive."""
        for s in self.seqs:
            self.device.close_sequence(s)
        self.seqs = []

    def __enter__(self) -> "InstinferCache":
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False


def _host_attention(module, query, key, value, attention_mask, scaling):
    group = query.shape[1] // key.shape[1]
    key = key.repeat_interleave(group, dim=1)
    value = value.repeat_interleave(group, dim=1)
    w = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        w = w + attention_mask[:, :, :, : key.shape[-2]]
    w = torch.softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(w, value).transpose(1, 2).contiguous()


def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """The attention function registered as ``instinfer``: a prompt on the
    host (causal), a decode step on the drive."""
    d = query.shape[-1]
    scaling = scaling if scaling is not None else d**-0.5
    cache = _CURRENT.get()
    if query.shape[2] > 1 or cache is None:
        return _host_attention(module, query, key, value, attention_mask, scaling), None
    if attention_mask is not None and bool((attention_mask < 0).any()):
        raise NotImplementedError("instinfer: padded batches are not supported (the drive attends every token)")
    q = query[:, :, 0]
    # The drive scales logits by 1/sqrt(d); another scale goes into q.
    if not math.isclose(scaling, d**-0.5, rel_tol=1e-6):
        q = q * (scaling * math.sqrt(d))
    out = cache._decode(module.layer_idx, q, key[:, :, -1], value[:, :, -1])
    out = torch.from_numpy(out).to(query.device, query.dtype)
    return out[:, None], None


def register() -> None:
    """Registers ``attn_implementation="instinfer"`` (done on import)."""
    AttentionInterface.register(NAME, attention)
    AttentionMaskInterface.register(NAME, eager_mask)


register()
