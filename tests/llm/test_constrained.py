"""Sori's top-k-first grammar decoding against llama.cpp's own grammar sampler."""

from __future__ import annotations

import json

import llama_cpp
import pytest

from sori.thinking.constrained import decode
from sori.thinking.prompts import judge_instruction


@pytest.mark.parametrize("text", ["안방 에어컨 꺼 줘", "Why is the sea salty?"])
def test_the_output_equals_llama_cpps_grammar_sampler(local_llm, text):
    llm = local_llm._llm
    tokens = local_llm.prompt_tokens((), judge_instruction(text))
    ours = decode(llm, local_llm._grammar, tokens, 160)
    grammar = llama_cpp.LlamaGrammar.from_string(local_llm._grammar, verbose=False)
    theirs = llm.create_completion(tokens, max_tokens=160, temperature=0.0, grammar=grammar)
    assert ours.finished
    assert ours.text.strip() == theirs["choices"][0]["text"].strip()


def test_checking_only_the_best_token_falls_back_to_the_whole_vocabulary(local_llm):
    llm = local_llm._llm
    tokens = local_llm.prompt_tokens((), judge_instruction("불 켜"))
    narrow = decode(llm, local_llm._grammar, tokens, 160, top_k=1)
    wide = decode(llm, local_llm._grammar, tokens, 160)
    assert narrow.full_checks > 0  # the model's favourite token was often not allowed
    assert narrow.text == wide.text  # and the result is the same
    json.loads(narrow.text)


def test_a_small_grammar_and_a_cut_off(local_llm):
    llm = local_llm._llm
    tokens = local_llm.prompt_tokens((), "Answer yes or no: is the sky blue?")
    out = decode(llm, 'root ::= "yes" | "no"', tokens, 8)
    assert out.finished and out.text in ("yes", "no")
    cut = decode(llm, local_llm._grammar, local_llm.prompt_tokens((), "불"), 3)
    assert not cut.finished and len(cut.tokens) == 3
    assert all(0.0 <= p <= 1.0 for _, p in cut.tokens)
