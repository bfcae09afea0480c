"""Build a tiny streaming LSTM transducer that sherpa-onnx can load, for tests.

The network is deliberately trivial: the encoder keeps every 4th feature frame and maps
it to zeros, the decoder maps its context to zeros, and the joiner returns a fixed bias
(blank `BLANK_MARGIN` above every other token). So plain decoding yields nothing, and only
hotword boosts (a bonus per matched token) can make tokens win: a test of biasing that
cannot pass by accident. Tokens and bpe.model come from a sentencepiece BPE model trained
on Korean command phrases.
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
OPSET = 13

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
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["kept"]),
        helper.make_node("MatMul", ["kept", "w"], ["encoder_out"]),
        helper.make_node("Identity", ["h"], ["next_h"]),
        helper.make_node("Identity", ["c"], ["next_c"]),
    ]
    inits = [
        _const("starts", np.array([0], np.int64)),
        _const("ends", np.array([DECODE_CHUNK_LEN], np.int64)),
        _const("axes", np.array([1], np.int64)),
        _const("steps", np.array([4], np.int64)),
        _const("w", np.zeros((FEATURE_DIM, JOINER_DIM), np.float32)),
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


def decoder(vocab_size: int) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Cast", ["y"], ["yf"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["yf", "w"], ["decoder_out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "decoder",
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["N", CONTEXT_SIZE])],
        [helper.make_tensor_value_info("decoder_out", TensorProto.FLOAT, ["N", JOINER_DIM])],
        [_const("w", np.zeros((CONTEXT_SIZE, JOINER_DIM), np.float32))],
    )
    return _model(graph, {"vocab_size": str(vocab_size), "context_size": str(CONTEXT_SIZE)})


def joiner(vocab_size: int) -> onnx.ModelProto:
    f = TensorProto.FLOAT
    bias = np.full(vocab_size, -BLANK_MARGIN, np.float32)
    bias[0] = 0.0
    nodes = [
        helper.make_node("Add", ["encoder_out", "decoder_out"], ["sum"]),
        helper.make_node("MatMul", ["sum", "w"], ["projected"]),
        helper.make_node("Add", ["projected", "bias"], ["logit"]),
    ]
    graph = helper.make_graph(
        nodes,
        "joiner",
        [
            helper.make_tensor_value_info("encoder_out", f, ["N", JOINER_DIM]),
            helper.make_tensor_value_info("decoder_out", f, ["N", JOINER_DIM]),
        ],
        [helper.make_tensor_value_info("logit", f, ["N", vocab_size])],
        [_const("w", np.zeros((JOINER_DIM, vocab_size), np.float32)), _const("bias", bias)],
    )
    return _model(graph, {})


def train_bpe(vocab_size: int = 64) -> bytes:
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


def build(folder: Path) -> dict[str, str]:
    """Write encoder/decoder/joiner .onnx, tokens.txt and bpe.model into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bpe.model").write_bytes(train_bpe())
    sp = sentencepiece.SentencePieceProcessor(model_file=str(folder / "bpe.model"))
    vocab_size = sp.get_piece_size()
    (folder / "tokens.txt").write_text(
        "".join(f"{sp.id_to_piece(i)} {i}\n" for i in range(vocab_size)), encoding="utf-8"
    )
    onnx.save(encoder(), folder / "encoder.onnx")
    onnx.save(decoder(vocab_size), folder / "decoder.onnx")
    onnx.save(joiner(vocab_size), folder / "joiner.onnx")
    return {
        "encoder": str(folder / "encoder.onnx"),
        "decoder": str(folder / "decoder.onnx"),
        "joiner": str(folder / "joiner.onnx"),
        "tokens": str(folder / "tokens.txt"),
        "bpe_model": str(folder / "bpe.model"),
    }
