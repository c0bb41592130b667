"""llama.cpp's side of `instinfer bench model --against llama.cpp`.

Run by instinfer (embedded in the binary, written to a temporary file) with
the python of a venv that holds llama-cpp-python. Reads one JSON request on
stdin and prints one JSON object as the last line of stdout:

request: {"model": GGUF path, "n_threads": T, "eos": id,
          "bench": {"prompt": [ids], "decode": D, "n_ctx": C} or null,
          "nll": [ids] or null,
          "greedy": [{"prompt": [ids], "decode": D}, ...]}
reply:   {"version": llama_cpp.__version__,
          "bench": {"prompt_tokens", "prefill_s", "prefill_tok_s",
                    "decode_s", "decode_tok_s", "tokens", "n_ctx", "n_batch"} or null,
          "nll": {"mean": nats, "scored": N - 1} or null,
          "greedy": [{"tokens": [ids], "margins": [top1 - top2 logit at
                      each token], "stepwise": [ids]}, ...]}

Generation mirrors instinfer's `run_generation`: the first token is the
argmax of the prefill's last logits, every further one costs one
`llm.eval([tok])`, and generation stops at `eos` (not included) or after D
tokens. A greedy task also reports llama.cpp's margin at each token (its
top logit minus the runner-up: how near a tie the choice was) and its own
generation with the prompt fed one token at a time ("stepwise": the same
model and weights through llama.cpp's single-token path instead of its
batched one), so that a divergence can be told from a near-tie that
llama.cpp's own arithmetic does not decide the same way twice. The decode rate is (tokens - 1) / decode time, the prefill rate
prompt tokens / prefill time, both wall clock. Each timed part follows a
warm-up (the model loaded and a few tokens evaluated, then `reset`).
"""

import json
import sys
import time

import numpy as np

import llama_cpp


def load(req, n_ctx, n_batch, logits_all=False):
    t = req["n_threads"]
    return llama_cpp.Llama(
        model_path=req["model"],
        n_ctx=n_ctx,
        n_threads=t,
        n_threads_batch=t,
        n_batch=n_batch,
        logits_all=logits_all,
        verbose=False,
    )


def last_logits(llm):
    # Without logits_all, llama-cpp-python 0.3.x no longer copies logits into
    # `llm.scores` after `eval`; read the last output row from the context.
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),))


def argmax(logits):
    # np.argmax takes the first maximum, as instinfer's argmax does.
    return int(np.argmax(logits))


def warm_up(llm, prompt):
    llm.reset()
    llm.eval(prompt[: min(len(prompt), 8)])
    llm.reset()


def margin(logits):
    """Top logit minus the runner-up."""
    top2 = np.partition(logits, -2)[-2:]
    return float(top2[1] - top2[0])


def generate(llm, decode, eos, margins=None):
    """Greedy tokens after a prefill: the first from its logits, then one
    eval per further token. Appends each token's margin to `margins`."""
    tokens = []
    logits = last_logits(llm)
    nxt = argmax(logits)
    while decode > 0:
        if nxt == eos:
            break
        tokens.append(nxt)
        if margins is not None:
            margins.append(margin(logits))
        if len(tokens) == decode:
            break
        llm.eval([nxt])
        logits = last_logits(llm)
        nxt = argmax(logits)
    return tokens


def bench(req, task):
    prompt = task["prompt"]
    llm = load(req, task["n_ctx"], max(len(prompt), 1))
    warm_up(llm, prompt)
    t0 = time.perf_counter()
    llm.eval(prompt)
    prefill_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tokens = generate(llm, task["decode"], req["eos"])
    decode_s = time.perf_counter() - t0
    steps = max(len(tokens) - 1, 0)
    return {
        "prompt_tokens": len(prompt),
        "prefill_s": prefill_s,
        "prefill_tok_s": len(prompt) / prefill_s if prefill_s > 0 else 0.0,
        "decode_s": decode_s,
        "decode_tok_s": steps / decode_s if decode_s > 0 else 0.0,
        "tokens": tokens,
        "n_ctx": llm.n_ctx(),
        "n_batch": llm.n_batch,
    }


def nll(req, ids):
    """Mean -log softmax(logits[i])[ids[i + 1]] over i = 0 .. N - 2, in
    float64, from one eval of all N ids with every position's logits."""
    n = len(ids)
    llm = load(req, n, n, logits_all=True)
    warm_up(llm, ids)
    llm.eval(ids)
    scores = llm.scores[: n - 1]
    total = 0.0
    # Rows in chunks: a 262k vocabulary in float64 is 2 MB a row.
    for lo in range(0, n - 1, 64):
        rows = scores[lo : min(n - 1, lo + 64)].astype(np.float64)
        m = rows.max(axis=1)
        lse = m + np.log(np.exp(rows - m[:, None]).sum(axis=1))
        targets = np.asarray(ids[lo + 1 : lo + 1 + len(rows)])
        total += float((lse - rows[np.arange(len(rows)), targets]).sum())
    return {"mean": total / (n - 1), "scored": n - 1}


def greedy(req, tasks):
    if not tasks:
        return []
    n_ctx = max(len(t["prompt"]) + t["decode"] + 1 for t in tasks)
    n_batch = max(len(t["prompt"]) for t in tasks)
    llm = load(req, n_ctx, n_batch)
    warm_up(llm, tasks[0]["prompt"])
    out = []
    for t in tasks:
        llm.reset()
        llm.eval(t["prompt"])
        margins = []
        tokens = generate(llm, t["decode"], req["eos"], margins)
        llm.reset()
        for tok in t["prompt"]:
            llm.eval([tok])
        stepwise = generate(llm, t["decode"], req["eos"])
        out.append({"tokens": tokens, "margins": margins, "stepwise": stepwise})
    return out


def main():
    req = json.load(sys.stdin)
    reply = {"version": llama_cpp.__version__, "bench": None, "nll": None, "greedy": []}
    if req.get("bench"):
        reply["bench"] = bench(req, req["bench"])
    if req.get("nll"):
        reply["nll"] = nll(req, req["nll"])
    reply["greedy"] = greedy(req, req.get("greedy") or [])
    sys.stdout.write("\n" + json.dumps(reply) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
