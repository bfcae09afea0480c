"""Greedy decoding under a GBNF grammar, fast on large vocabularies.

llama.cpp's grammar sampler checks every candidate token against the grammar: with Gemma's
262,144-token vocabulary that is about 0.4 s per token on a small CPU. Here the model's
top-k tokens are checked first; when any of them is allowed, the best allowed one among them
is also the best allowed one overall (every other token scores lower), so the result is
exactly what checking the whole vocabulary would give. Only when none of the top-k is allowed
is the whole vocabulary checked. The output is always accepted by the grammar.

Works on a loaded `llama_cpp.Llama`, reusing the KV cache's matching prefix like
`Llama.generate` does. Not thread-safe: the caller holds the model's lock.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def _token_data(n: int) -> Any:
    """A numpy array laid out like llama.cpp's `llama_token_data` (id, logit, p)."""
    import numpy as np

    return np.zeros(n, dtype=[("id", np.int32), ("logit", np.float32), ("p", np.float32)])


@dataclass
class Decoded:
    """What a constrained run produced."""

    text: str
    """The output, exactly as generated."""
    tokens: list[tuple[int, float]] = field(default_factory=list)
    """Each generated token with the probability the unconstrained model gave it."""
    finished: bool = False
    """True when the grammar was complete (end of generation chosen); False if cut off."""
    full_checks: int = 0
    """Steps where the whole vocabulary had to be checked."""


def decode(
    llm: Any,
    gbnf: str,
    prompt: list[int],
    max_tokens: int,
    top_k: int = 64,
    stopped: Callable[[], bool] = lambda: False,
) -> Decoded:
    """Greedy, grammar-constrained continuation of `prompt` (token ids); ends unfinished
    before the next token once `stopped()` is true (shutdown)."""
    import llama_cpp
    import numpy as np

    vocab = llm._model.vocab
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
    if not sampler:
        raise ValueError("llama.cpp rejected the grammar")
    n_vocab = llm.n_vocab()
    small = _token_data(top_k)
    full = _token_data(n_vocab)
    full["id"] = np.arange(n_vocab, dtype=np.int32)
    out = Decoded("")
    try:
        _evaluate_prompt(llm, prompt)
        for _ in range(max_tokens):
            if stopped():
                break
            logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(n_vocab,))
            top = np.argpartition(-logits, top_k)[:top_k]
            top = top[np.argsort(-logits[top])]
            small["id"] = top
            small["logit"] = logits[top]
            token = _best_allowed(llama_cpp, sampler, small)
            if token is None:
                out.full_checks += 1
                full["logit"] = logits
                token = _best_allowed(llama_cpp, sampler, full)
            if token is None:
                break  # nothing allowed: cannot happen with a grammar that admits an end
            peak = float(logits.max())
            lse = peak + math.log(float(np.exp(logits - peak).sum()))
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                out.finished = True
                break
            llama_cpp.llama_sampler_accept(sampler, token)
            out.tokens.append((token, math.exp(float(logits[token]) - lse)))
            llm.eval([token])
    finally:
        llama_cpp.llama_sampler_free(sampler)
    out.text = llm.detokenize([t for t, _ in out.tokens]).decode("utf-8", "replace")
    return out


def _evaluate_prompt(llm: Any, prompt: list[int]) -> None:
    """Evaluate `prompt`, keeping the longest cached prefix (at least one token is new)."""
    cached = llm.input_ids[: llm.n_tokens]
    keep = 0
    for a, b in zip(cached, prompt[:-1], strict=False):
        if a != b:
            break
        keep += 1
    if keep and not llm._ctx.kv_cache_seq_rm(-1, keep, -1):
        keep = 0
    llm.n_tokens = keep
    if keep == 0:
        llm.reset()
    llm.eval(prompt[keep:])


def _best_allowed(llama_cpp: Any, sampler: Any, candidates: Any) -> int | None:
    """The highest-scoring candidate the grammar allows (candidates sorted or not)."""
    import numpy as np

    data = candidates.copy()
    array = llama_cpp.llama_token_data_array(
        data=data.ctypes.data_as(llama_cpp.llama_token_data_p),
        size=len(data),
        selected=-1,
        sorted=False,
    )
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
    logits = data["logit"]
    best = int(np.argmax(logits))
    if not np.isfinite(logits[best]):
        return None
    return int(data["id"][best])
