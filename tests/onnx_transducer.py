"""The frame every tiny sherpa-onnx streaming LSTM transducer in the tests shares.

sherpa-onnx checks an LSTM transducer's graph inputs, outputs and metadata, and reads its
tokens from tokens.txt (plus bpe.model for keywords and hotwords). The tiny models
(`tiny_transducer.py` for hotword biasing, `tiny_kws.py` for keyword spotting) differ only
in the nodes inside encoder, decoder and joiner; this module wraps those nodes in the
shapes and metadata sherpa-onnx expects, trains the BPE and writes the files.
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
OPSET = 13


def _model(graph: onnx.GraphProto, meta: dict[str, str]) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    for key, value in meta.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    return model


def const(name: str, array: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(array, name)


def frames_kept() -> list[TensorProto]:
    """Initializers for a Slice of `x` by ["starts", "ends", "axes", "steps"] that keeps
    every 4th feature frame of a chunk, as the encoder's 4x subsampling would."""
    return [
        const("starts", np.array([0], np.int64)),
        const("ends", np.array([DECODE_CHUNK_LEN], np.int64)),
        const("axes", np.array([1], np.int64)),
        const("steps", np.array([4], np.int64)),
    ]


def encoder(nodes: list[onnx.NodeProto], inits: list[TensorProto]) -> onnx.ModelProto:
    """An encoder from `x` (N, T, FEATURE_DIM) and states `h`, `c` to `encoder_out`,
    `next_h`, `next_c`."""
    f = TensorProto.FLOAT
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


def decoder(
    nodes: list[onnx.NodeProto], inits: list[TensorProto], vocab_size: int
) -> onnx.ModelProto:
    """A decoder from the last tokens `y` (N, CONTEXT_SIZE) to `decoder_out`."""
    graph = helper.make_graph(
        nodes,
        "decoder",
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["N", CONTEXT_SIZE])],
        [helper.make_tensor_value_info("decoder_out", TensorProto.FLOAT, ["N", JOINER_DIM])],
        inits,
    )
    return _model(graph, {"vocab_size": str(vocab_size), "context_size": str(CONTEXT_SIZE)})


def joiner(
    nodes: list[onnx.NodeProto], inits: list[TensorProto], vocab_size: int
) -> onnx.ModelProto:
    """A joiner from `encoder_out` and `decoder_out` to a `logit` per token."""
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "joiner",
        [
            helper.make_tensor_value_info("encoder_out", f, ["N", JOINER_DIM]),
            helper.make_tensor_value_info("decoder_out", f, ["N", JOINER_DIM]),
        ],
        [helper.make_tensor_value_info("logit", f, ["N", vocab_size])],
        inits,
    )
    return _model(graph, {})


def tokenizer(
    folder: Path, training_text: list[str], vocab_size: int
) -> sentencepiece.SentencePieceProcessor:
    """Train a tiny BPE on `training_text`, write bpe.model and tokens.txt into `folder`
    (blank is token 0), and return the tokenizer."""
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(training_text * 20),
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
    (folder / "bpe.model").write_bytes(buffer.getvalue())
    sp = sentencepiece.SentencePieceProcessor(model_file=str(folder / "bpe.model"))
    (folder / "tokens.txt").write_text(
        "".join(f"{sp.id_to_piece(i)} {i}\n" for i in range(sp.get_piece_size())),
        encoding="utf-8",
    )
    return sp


def save(
    folder: Path, encoder: onnx.ModelProto, decoder: onnx.ModelProto, joiner: onnx.ModelProto
) -> dict[str, str]:
    """Write the three graphs beside the tokens; return every file's path by the name
    sherpa-onnx's config gives it."""
    onnx.save(encoder, folder / "encoder.onnx")
    onnx.save(decoder, folder / "decoder.onnx")
    onnx.save(joiner, folder / "joiner.onnx")
    return {
        "encoder": str(folder / "encoder.onnx"),
        "decoder": str(folder / "decoder.onnx"),
        "joiner": str(folder / "joiner.onnx"),
        "tokens": str(folder / "tokens.txt"),
        "bpe_model": str(folder / "bpe.model"),
    }
