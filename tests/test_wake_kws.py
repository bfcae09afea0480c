"""The `sherpa-kws` wake backend: sherpa-onnx's real KeywordSpotter with a tiny keyword
model built here (tiny_kws.py) that spells "헤이 소리" only while the audio has energy."""

from __future__ import annotations

import json
import subprocess
import sys
import wave
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sori.core.config import Config
from sori.core.errors import ConfigError
from tiny_kws import build

KEYWORD = "헤이 소리"  # what the tiny model spells (two tokens: ▁헤이 ▁소리)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-kws")
    build(folder, KEYWORD)
    return folder


def kws_config(model_dir: Path | str, phrases: list[str]) -> Config:
    base = Config()
    wake = replace(  # raw audio: the tiny model spells its keyword from the noise's energy
        base.wake, backend="sherpa-kws", phrases=phrases, denoise="off",
        sherpa_kws=replace(base.wake.sherpa_kws, model_dir=str(model_dir)),
    )  # fmt: skip
    return replace(base, wake=wake)


def detect(detector, pcm: bytes) -> list:
    stream = detector.open_stream()
    found = []
    for i in range(0, len(pcm), 640):  # 20 ms frames, as the pipeline feeds them
        found += stream.feed(pcm[i : i + 640])
    return found + stream.finish()


NOISE = (np.random.default_rng(0).normal(0, 0.1, 32_000) * 32767).astype("<i2").tobytes()
SILENCE = bytes(64_000)


def test_the_keyword_is_spotted_in_audio_with_energy_and_not_in_silence(model):
    from sori.assemble.wake import build_wake_detector

    detector = build_wake_detector(kws_config(model, ["소리야", KEYWORD]))
    assert detector.name == "sherpa-kws"
    found = detect(detector, NOISE)
    assert [d.phrase for d in found] == [KEYWORD]  # mapped back to the phrase as configured
    assert 0.0 <= found[0].start_s <= found[0].end_s < 1.0
    assert detect(detector, SILENCE) == []
    assert [d.phrase for d in detect(detector, NOISE)] == [KEYWORD]  # streams are independent


def test_a_phrase_the_model_does_not_hear_is_not_spotted(model):
    from sori.assemble.wake import build_wake_detector

    detector = build_wake_detector(kws_config(model, ["소리야"]))  # spellable, never said
    assert detect(detector, NOISE) == []


def test_sori_wake_runs_the_sherpa_kws_backend_from_the_config(model, shared_dir, tmp_path):
    clip = shared_dir / "audio" / "ko-read" / "zeroth_104_003_0019.wav"
    with wave.open(str(clip)) as w:  # the first 3 s are enough for one utterance
        short = tmp_path / "short.wav"
        with wave.open(str(short), "wb") as out:
            out.setparams(w.getparams())
            out.writeframes(w.readframes(3 * w.getframerate()))
    toml = tmp_path / "sori.toml"
    toml.write_text(
        f'[wake]\nbackend = "sherpa-kws"\n[wake.sherpa_kws]\nmodel_dir = "{model}"\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "sori", "wake", "--config", str(toml), "--phrase", KEYWORD,
         "--phrase", "소리야", str(short), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    found = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(Path(r["file"]).name, r["phrase"]) for r in found] == [("short.wav", KEYWORD)]
    assert 0.0 <= found[0]["start_s"] <= found[0]["end_s"] < 3.0


def test_missing_model_and_unspellable_phrases_are_config_errors(model, tmp_path):
    from sori.assemble.wake import build_wake_detector

    with pytest.raises(ConfigError, match="wake.sherpa_kws.model_dir"):
        build_wake_detector(kws_config("", ["소리야"]))
    with pytest.raises(ConfigError, match="does not exist"):
        build_wake_detector(kws_config(tmp_path / "nowhere", ["소리야"]))
    with pytest.raises(ConfigError) as refused:  # no syllable of it in the tiny BPE
        build_wake_detector(kws_config(model, ["소리야", "빅스비"]))
    assert "'빅스비'" in str(refused.value)
    assert "'소리야'" not in str(refused.value)
