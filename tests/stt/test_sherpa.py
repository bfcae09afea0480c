"""The real sherpa-onnx OnlineRecognizer, driven through our backend with a tiny
streaming LSTM transducer built here (tiny_transducer.py). Models are loaded in
subprocesses: on a bad model sherpa-onnx ends the process instead of raising."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tiny_transducer import build

from hearing_fixtures import english_speech
from sori.core.errors import ModelError
from sori.hearing.audio.format import write_wav
from sori.hearing.stt.sherpa import SherpaModelFiles, prepare_hotwords, probe

HERE = Path(__file__).resolve().parent

DRIVE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from sori.hearing.stt.sherpa import SherpaModelFiles, SherpaRecognizer

    files = SherpaModelFiles.find(sys.argv[1])
    pcm = (np.random.default_rng(0).normal(0, 0.1, 16000) * 32767).astype("<i2").tobytes()
    out = {}
    for name, phrases in (("plain", ()), ("biased", ("거실 불 켜 줘", "날씨 어때"))):
        rec = SherpaRecognizer(files, model_type="lstm", threads=1, phrases=phrases,
                               hotwords_score=12.0, max_active_paths=64,
                               check_in_subprocess=False)
        stream = rec.open_stream()
        partials = [h.text for i in range(0, len(pcm), 640) if (h := stream.feed(pcm[i:i + 640]))]
        flushed = stream.flush(200)
        out[name] = {
            "partials": partials,
            "flushed": flushed.text if flushed else None,
            "final": stream.finalize().text,
            "skipped": list(rec.hotwords.skipped) if rec.hotwords else [],
        }
    print(json.dumps(out, ensure_ascii=False))
    """
)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-transducer")
    build(folder)
    return folder


@pytest.fixture(scope="module")
def driven(tiny_model) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", DRIVE, str(tiny_model)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_hotwords_the_blank_heavy_model_hears_nothing(driven):
    assert driven["plain"]["partials"] == []
    assert driven["plain"]["final"] == ""


def test_hotwords_bias_decoding_towards_the_phrases(driven):
    biased = driven["biased"]
    assert biased["final"].startswith("거실 불 켜 줘")
    assert set(biased["final"].split()) <= {"거실", "불", "켜", "줘"}
    # partial hypotheses arrive while the audio streams in, and grow
    assert len(biased["partials"]) >= 2
    assert biased["partials"][0] != biased["partials"][-1]
    # a flush decodes silence ahead of time: the hypothesis grows, the final extends it
    assert biased["flushed"].startswith(biased["partials"][-1])
    assert biased["final"].startswith(biased["flushed"])


def test_unencodable_hotwords_are_reported(driven, tiny_model, tmp_path):
    assert driven["biased"]["skipped"] == ["날씨 어때"]
    hotwords = prepare_hotwords(
        ["거실 불 켜 줘", "날씨 꺼 줘", "Zebra"],
        str(tiny_model / "bpe.model"),
        str(tiny_model / "tokens.txt"),
        str(tmp_path),
    )
    assert hotwords.text == "거실 불 켜 줘"
    assert set(hotwords.skipped) == {"날씨 꺼 줘", "Zebra"}
    vocab = Path(hotwords.bpe_vocab).read_text(encoding="utf-8").splitlines()
    assert vocab[0].split("\t")[0] == "<blk>" and len(vocab[5].split("\t")) == 2


def test_files_are_found_in_a_model_folder(tiny_model):
    files = SherpaModelFiles.find(tiny_model)
    assert Path(files.encoder).name == "encoder.onnx"
    assert files.bpe_model.endswith("bpe.model")


def test_int8_encoder_and_fp32_decoder_are_preferred(tmp_path):
    for name in (
        "encoder-epoch-99-avg-1.onnx",
        "encoder-epoch-99-avg-1.int8.onnx",
        "decoder-epoch-99-avg-1.onnx",
        "decoder-epoch-99-avg-1.int8.onnx",
        "joiner-epoch-99-avg-1.int8.onnx",
        "tokens.txt",
    ):
        (tmp_path / name).write_text("x")
    files = SherpaModelFiles.find(tmp_path)
    assert files.encoder.endswith("encoder-epoch-99-avg-1.int8.onnx")
    assert files.decoder.endswith("decoder-epoch-99-avg-1.onnx")
    assert files.bpe_model == ""


def test_missing_model_names_the_model_and_the_fix(tmp_path):
    with pytest.raises(ModelError, match="sherpa-onnx-streaming-zipformer-korean"):
        SherpaModelFiles.find(tmp_path / "absent")
    with pytest.raises(ModelError, match="no encoder"):
        SherpaModelFiles.find(tmp_path)


def test_a_bad_model_is_an_error_not_a_crash(tiny_model, tmp_path):
    for name in ("decoder.onnx", "joiner.onnx", "tokens.txt"):
        (tmp_path / name).write_bytes((tiny_model / name).read_bytes())
    (tmp_path / "encoder.onnx").write_bytes(b"this is not an onnx model")
    with pytest.raises(ModelError, match="cannot load the model"):
        probe(SherpaModelFiles.find(tmp_path), "lstm")
    probe(SherpaModelFiles.find(tiny_model), "lstm")  # the good one loads


def test_sori_replay_runs_the_sherpa_backend_from_the_config(tiny_model, tmp_path):
    config = tmp_path / "sori.toml"
    config.write_text(
        f"""
[stt]
backend = "sherpa"

[stt.sherpa]
model_dir = "{tiny_model}"
model_type = "lstm"
threads = 1
hotwords_score = 12.0
max_active_paths = 64
""",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "sori", "replay", "--config", str(config), "--json", "--no-wake"]
        + [str(english_speech().path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == 3
    # the blank-heavy tiny model can only say hotwords: every word comes from the packs
    heard = {w for r in records for w in r["transcript"].split()}
    assert heard, "hotwords from the intent packs should reach the recognizer"
    # most pack phrases use syllables the tiny model has no tokens for: reported, not lost
    assert "hotword phrases cannot be encoded" in done.stderr


def test_missing_sherpa_model_in_the_config_exits_2_naming_the_model(tmp_path):
    config = tmp_path / "sori.toml"
    config.write_text('[stt]\nbackend = "sherpa"\n', encoding="utf-8")
    wav = tmp_path / "a.wav"
    write_wav(wav, bytes(3200))
    done = subprocess.run(
        [sys.executable, "-m", "sori", "replay", "--config", str(config), str(wav)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "sherpa-onnx-streaming-zipformer-korean-2024-06-16" in done.stderr
    assert "Traceback" not in done.stderr
