"""The transformers adaptor on a randomly initialised small Llama (no
weights downloaded). Skipped where torch or transformers is missing."""

import os

import pytest

if os.environ.get("INSTINFER_REQUIRE_HF") == "1":
    import torch  # noqa: F401  (CI: a missing torch fails)
    import transformers  # noqa: F401
else:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

import instinfer  # noqa: E402
import instinfer.hf  # noqa: E402
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM  # noqa: E402


def tiny_llama():
    cfg = LlamaConfig(
        vocab_size=256,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).eval()
    # Larger embeddings than the default init, so that attention is peaked
    # enough for greedy choices to depend on it.
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(40)
    return model


def greedy(model, prompt, steps, cache):
    """Greedy decoding: tokens and each step's logits."""
    ids, logits = prompt, []
    with torch.no_grad():
        out = model(ids, cache=cache, use_cache=True)
        for _ in range(steps):
            last = out.logits[:, -1].float()
            logits.append(last)
            nxt = last.argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], 1)
            out = model(nxt, cache=cache, use_cache=True)
    return ids[:, prompt.shape[1] :], torch.stack(logits, 1)


def test_dense_on_the_drive_equals_eager():
    model = tiny_llama()
    prompt = torch.randint(0, 256, (2, 300), generator=torch.Generator().manual_seed(1))
    model.set_attn_implementation("eager")
    want, want_logits = greedy(model, prompt, 12, DynamicCache(config=model.config))
    model.set_attn_implementation("instinfer")
    dev = instinfer.open("sim")
    with instinfer.hf.InstinferCache(model.config, dev, check=True) as cache:
        got, logits = greedy(model, prompt, 12, cache)
        assert dev.length(0, 2) == 300 + 12 - 1 + 1
        reports = cache.reports
    assert torch.equal(got, want), (got, want)
    # Every decode output of every layer within the engine's bound.
    assert 0 < cache.worst_bound_ratio <= 1.0, cache.worst_bound_ratio
    diff = (logits - want_logits).abs().max().item()
    scale = want_logits.abs().max().item()
    print(f"max |logits - eager| = {diff:.3g} (logit scale {scale:.3g}), "
          f"worst bound ratio {cache.worst_bound_ratio:.3f}")
    assert diff < 1e-2 * scale
    assert len(reports) == 12 * 3 and all(r["virtual_ns"] > 0 for r in reports)
    assert dev.sequences() == []


def test_generate_with_sparf_runs_on_the_drive():
    model = tiny_llama()
    model.set_attn_implementation("instinfer")
    prompt = torch.randint(0, 256, (1, 400), generator=torch.Generator().manual_seed(2))
    with instinfer.hf.InstinferCache(model.config, method="sparf", compression=0.125) as cache:
        out = model.generate(prompt, cache=cache, max_new_tokens=6, do_sample=False)
        assert out.shape == (1, 406)
        pages = [r["steps"][0]["pages_skipped"] for r in cache.reports]
    assert len(pages) == 5 * 3 and sum(pages) > 0


def test_padded_batches_and_bad_settings_are_refused():
    model = tiny_llama()
    model.set_attn_implementation("instinfer")
    with pytest.raises(ValueError):
        instinfer.hf.InstinferCache(model.config, method="sparf", check=True)
    ids = torch.randint(0, 256, (2, 20))
    mask = torch.ones_like(ids)
    mask[0, :3] = 0
    cache = instinfer.hf.InstinferCache(model.config)
    with torch.no_grad(), pytest.raises(NotImplementedError):
        out = model(ids, attention_mask=mask, cache=cache, use_cache=True)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        model(nxt, attention_mask=torch.cat([mask, torch.ones_like(nxt)], 1), cache=cache, use_cache=True)
    cache.close()
