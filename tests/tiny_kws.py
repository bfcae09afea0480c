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

import io
from pathlib import Path

import numpy as np
import onnx
import sentencepiece
from onnx import TensorProto, helper, numpy_helper

FEATURE_DIM = 80
JOINER_DIM = 16
LAYERS = 1
D_MODEL = 8
HIDDEN = 8
DECODE_CHUNK_LEN = 32
T = 40
CONTEXT_SIZE = 2
BLANK_MARGIN = 8.0
GATE_AT = -8.0
"""Mean log-mel energy where the gate opens (digital silence is about -15.9)."""
OPSET = 13

TRAINING_TEXT = ["소리야", "거실 불 켜 줘", "헤이 소리", "지금 몇 시야", "커튼 쳐 줘"]


def _model(graph: onnx.GraphProto, meta: dict[str, str]) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    for key, value in meta.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    return model


def _const(name: str, array: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(array, name)


def encoder() -> onnx.ModelProto:
    f = TensorProto.FLOAT
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
        _const("starts", np.array([0], np.int64)),
        _const("ends", np.array([DECODE_CHUNK_LEN], np.int64)),
        _const("axes", np.array([1], np.int64)),
        _const("steps", np.array([4], np.int64)),
        _const("gate_at", np.array(GATE_AT, np.float32)),
        _const("zero", np.array(0.0, np.float32)),
        _const("one", np.array(1.0, np.float32)),
        _const("first", first),
    ]
    graph = helper.make_graph(
        nodes,
        "encoder",
        [
            helper.make_tensor_value_info("x", f, ["N", T, FEATURE_DIM]),
            helper.make_tensor_value_info("h", f, [LAYERS, "N", D_MODEL]),
            helper.make_tensor_value_info("c", f, [LAYERS, "N", HIDDEN]),
        ],
        [
            helper.make_tensor_value_info("encoder_out", f, ["N", "T_out", JOINER_DIM]),
            helper.make_tensor_value_info("next_h", f, [LAYERS, "N", D_MODEL]),
            helper.make_tensor_value_info("next_c", f, [LAYERS, "N", HIDDEN]),
        ],
        inits,
    )
    meta = {
        "model_type": "lstm",
        "num_encoder_layers": str(LAYERS),
        "T": str(T),
        "decode_chunk_len": str(DECODE_CHUNK_LEN),
        "rnn_hidden_size": str(HIDDEN),
        "d_model": str(D_MODEL),
    }
    return _model(graph, meta)


def decoder(vocab_size: int, keyword: list[int]) -> onnx.ModelProto:
    steps = np.zeros((vocab_size, JOINER_DIM), np.float32)
    steps[0, 1] = 1.0  # blank: step 0 of the keyword
    for i, token in enumerate(keyword, start=1):
        steps[token, 1 + i] = 1.0
    nodes = [
        helper.make_node("Gather", ["y", "last"], ["token"], axis=1),
        helper.make_node("Gather", ["steps", "token"], ["decoder_out"], axis=0),
    ]
    graph = helper.make_graph(
        nodes,
        "decoder",
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["N", CONTEXT_SIZE])],
        [helper.make_tensor_value_info("decoder_out", TensorProto.FLOAT, ["N", JOINER_DIM])],
        [_const("last", np.array(CONTEXT_SIZE - 1, np.int64)), _const("steps", steps)],
    )
    return _model(graph, {"vocab_size": str(vocab_size), "context_size": str(CONTEXT_SIZE)})


def joiner(vocab_size: int, keyword: list[int]) -> onnx.ModelProto:
    f = TensorProto.FLOAT
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
    graph = helper.make_graph(
        nodes,
        "joiner",
        [
            helper.make_tensor_value_info("encoder_out", f, ["N", JOINER_DIM]),
            helper.make_tensor_value_info("decoder_out", f, ["N", JOINER_DIM]),
        ],
        [helper.make_tensor_value_info("logit", f, ["N", vocab_size])],
        [
            _const("s0", np.array([0], np.int64)),
            _const("s1", np.array([1], np.int64)),
            _const("ax", np.array([1], np.int64)),
            _const("following", following),
            _const("bias", bias),
        ],
    )
    return _model(graph, {})


def train_bpe(vocab_size: int = 40) -> bytes:
    buffer = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(TRAINING_TEXT * 20),
        model_writer=buffer,
        model_type="bpe",
        vocab_size=vocab_size,
        character_coverage=1.0,
        user_defined_symbols=["<blk>", "<sos/eos>"],
        unk_id=2,
        bos_id=-1,
        eos_id=-1,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return buffer.getvalue()


def build(folder: Path, keyword: str) -> dict[str, str]:
    """Write encoder/decoder/joiner .onnx, tokens.txt and bpe.model into `folder`, for a
    model that spells `keyword` (its pieces must be distinct) whenever it hears energy."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bpe.model").write_bytes(train_bpe())
    sp = sentencepiece.SentencePieceProcessor(model_file=str(folder / "bpe.model"))
    vocab_size = sp.get_piece_size()
    ids = sp.encode(keyword)
    assert len(set(ids)) == len(ids) and len(ids) < JOINER_DIM - 1, ids
    (folder / "tokens.txt").write_text(
        "".join(f"{sp.id_to_piece(i)} {i}\n" for i in range(vocab_size)), encoding="utf-8"
    )
    onnx.save(encoder(), folder / "encoder.onnx")
    onnx.save(decoder(vocab_size, ids), folder / "decoder.onnx")
    onnx.save(joiner(vocab_size, ids), folder / "joiner.onnx")
    return {
        "encoder": str(folder / "encoder.onnx"),
        "decoder": str(folder / "decoder.onnx"),
        "joiner": str(folder / "joiner.onnx"),
        "tokens": str(folder / "tokens.txt"),
        "bpe_model": str(folder / "bpe.model"),
    }
