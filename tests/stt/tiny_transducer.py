"""Build a tiny streaming LSTM transducer that sherpa-onnx can load, for tests.

The network is deliberately trivial: the encoder keeps every 4th feature frame and maps
it to zeros, the decoder maps its context to zeros, and the joiner returns a fixed bias
(blank `BLANK_MARGIN` above every other token). So plain decoding yields nothing, and only
hotword boosts (a bonus per matched token) can make tokens win: a test of biasing that
cannot pass by accident. Tokens and bpe.model come from a sentencepiece BPE model trained
on Korean command phrases.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnx_transducer import (
    CONTEXT_SIZE,
    FEATURE_DIM,
    JOINER_DIM,
    const,
    decoder,
    encoder,
    frames_kept,
    joiner,
    save,
    tokenizer,
)

BLANK_MARGIN = 8.0

TRAINING_TEXT = [
    "거실 불 켜 줘",
    "거실 불 꺼 줘",
    "안방 에어컨 꺼 줘",
    "화장실 조명 좀 켜 줘",
    "커튼 쳐 줘",
    "커튼 걷어 줘",
    "지금 몇 시야",
    "에어컨 이십삼 도로 맞춰 줘",
    "공기 청정기 켜 줘",
    "오 분 타이머 맞춰 줘",
]


def zero_encoder() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["kept"]),
        helper.make_node("MatMul", ["kept", "w"], ["encoder_out"]),
        helper.make_node("Identity", ["h"], ["next_h"]),
        helper.make_node("Identity", ["c"], ["next_c"]),
    ]
    w = const("w", np.zeros((FEATURE_DIM, JOINER_DIM), np.float32))
    return encoder(nodes, [*frames_kept(), w])


def zero_decoder(vocab_size: int) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Cast", ["y"], ["yf"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["yf", "w"], ["decoder_out"]),
    ]
    w = const("w", np.zeros((CONTEXT_SIZE, JOINER_DIM), np.float32))
    return decoder(nodes, [w], vocab_size)


def bias_joiner(vocab_size: int) -> onnx.ModelProto:
    bias = np.full(vocab_size, -BLANK_MARGIN, np.float32)
    bias[0] = 0.0
    nodes = [
        helper.make_node("Add", ["encoder_out", "decoder_out"], ["sum"]),
        helper.make_node("MatMul", ["sum", "w"], ["projected"]),
        helper.make_node("Add", ["projected", "bias"], ["logit"]),
    ]
    w = const("w", np.zeros((JOINER_DIM, vocab_size), np.float32))
    return joiner(nodes, [w, const("bias", bias)], vocab_size)


def build(folder: Path) -> dict[str, str]:
    """Write encoder/decoder/joiner .onnx, tokens.txt and bpe.model into `folder`."""
    vocab_size = tokenizer(folder, TRAINING_TEXT, vocab_size=64).get_piece_size()
    return save(folder, zero_encoder(), zero_decoder(vocab_size), bias_joiner(vocab_size))
