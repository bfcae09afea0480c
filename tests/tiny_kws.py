"""Build a tiny streaming LSTM transducer for sherpa-onnx's KeywordSpotter, for tests.

The network spells one keyword, and only while the input has energy:
- the encoder keeps every 4th feature frame and outputs a gate, the frame's mean log-mel
  energy mapped to 0 (below `GATE_AT`, silence) .. 1 (above `GATE_AT + 1`);
- the decoder embeds its last token as the step of the keyword it has reached (blank:
  step 0, the keyword's i-th token: step i);
- the joiner gives blank a margin of `BLANK_MARGIN` over every token, plus `2 *
  BLANK_MARGIN * gate` to the keyword's next token.
So audio with energy spells the keyword token by token, then blanks; silence, or a
keyword made of other tokens, spells nothing. Tokens and bpe.model come from a tiny
sentencepiece BPE trained on a few Korean phrases.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from onnx_transducer import (
    CONTEXT_SIZE,
    JOINER_DIM,
    const,
    decoder,
    encoder,
    frames_kept,
    joiner,
    save,
)
from onnx_transducer import tokenizer as train_tokenizer

BLANK_MARGIN = 8.0
GATE_AT = -8.0
"""Mean log-mel energy where the gate opens (digital silence is about -15.9)."""

TRAINING_TEXT = ["소리야", "거실 불 켜 줘", "헤이 소리", "지금 몇 시야", "커튼 쳐 줘"]


def gated_encoder() -> onnx.ModelProto:
    first = np.zeros((1, JOINER_DIM), np.float32)
    first[0, 0] = 1.0
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["kept"]),
        helper.make_node("ReduceMean", ["kept"], ["energy"], axes=[2], keepdims=1),
        helper.make_node("Sub", ["energy", "gate_at"], ["shifted"]),
        helper.make_node("Clip", ["shifted", "zero", "one"], ["gate"]),
        helper.make_node("Mul", ["gate", "first"], ["encoder_out"]),
        helper.make_node("Identity", ["h"], ["next_h"]),
        helper.make_node("Identity", ["c"], ["next_c"]),
    ]
    inits = [
        *frames_kept(),
        const("gate_at", np.array(GATE_AT, np.float32)),
        const("zero", np.array(0.0, np.float32)),
        const("one", np.array(1.0, np.float32)),
        const("first", first),
    ]
    return encoder(nodes, inits)


def step_decoder(vocab_size: int, keyword: list[int]) -> onnx.ModelProto:
    steps = np.zeros((vocab_size, JOINER_DIM), np.float32)
    steps[0, 1] = 1.0  # blank: step 0 of the keyword
    for i, token in enumerate(keyword, start=1):
        steps[token, 1 + i] = 1.0
    nodes = [
        helper.make_node("Gather", ["y", "last"], ["token"], axis=1),
        helper.make_node("Gather", ["steps", "token"], ["decoder_out"], axis=0),
    ]
    last = const("last", np.array(CONTEXT_SIZE - 1, np.int64))
    return decoder(nodes, [last, const("steps", steps)], vocab_size)


def keyword_joiner(vocab_size: int, keyword: list[int]) -> onnx.ModelProto:
    bias = np.full(vocab_size, -BLANK_MARGIN, np.float32)
    bias[0] = 0.0
    following = np.zeros((JOINER_DIM, vocab_size), np.float32)
    for i, token in enumerate(keyword):  # at step i, the keyword's token i comes next
        following[1 + i, token] = 2 * BLANK_MARGIN
    nodes = [
        helper.make_node("Slice", ["encoder_out", "s0", "s1", "ax"], ["gate"]),
        helper.make_node("MatMul", ["decoder_out", "following"], ["next"]),
        helper.make_node("Mul", ["gate", "next"], ["gated"]),
        helper.make_node("Add", ["gated", "bias"], ["logit"]),
    ]
    inits = [
        const("s0", np.array([0], np.int64)),
        const("s1", np.array([1], np.int64)),
        const("ax", np.array([1], np.int64)),
        const("following", following),
        const("bias", bias),
    ]
    return joiner(nodes, inits, vocab_size)


def build(folder: Path, keyword: str) -> dict[str, str]:
    """Write encoder/decoder/joiner .onnx, tokens.txt and bpe.model into `folder`, for a
    model that spells `keyword` (its pieces must be distinct) whenever it hears energy."""
    sp = train_tokenizer(folder, TRAINING_TEXT, vocab_size=40)
    vocab_size = sp.get_piece_size()
    ids = sp.encode(keyword)
    assert len(set(ids)) == len(ids) and len(ids) < JOINER_DIM - 1, ids
    return save(
        folder,
        gated_encoder(),
        step_decoder(vocab_size, ids),
        keyword_joiner(vocab_size, ids),
    )
