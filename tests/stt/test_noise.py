"""Hearing in noise: real read Korean (none of it a command) mixed with white, pink and
babble noise, through the whole pipeline as `sori replay` runs it, against the presets of
the example home. No device may fire; CER at 20 dB white stays within a measured bound.
scripts/bench_noise.py gives the full table."""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

import numpy as np
import pytest

from sori.acting.actions.registry import DEVICE_INTENTS
from sori.assemble.hearing import build_recognizer
from sori.assemble.understanding import home_from_config, presets_from_config
from sori.core.config import load_config
from sori.hearing.audio.augment import babble, make_noise, mix_at_snr, to_pcm16
from sori.hearing.audio.format import read_file
from sori.hearing.audio.sources import RawSource
from sori.testing.fakes import character_errors
from sori.testing.replaying import replay_source

EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "device" / "sori.example.toml"
HEARD = ("picovoice_leopard_test_ko.wav", "zeroth_104_003_0294.wav")
"""The two shortest clips: the test stays quick."""
VOICES = ("zeroth_104_003_0019.wav", "zeroth_104_003_0193.wav", "zeroth_104_003_0253.wav")
"""Other speakers and sentences, for babble."""
CER_WHITE_20_DB = 0.45
"""Measured 0.32 on these two clips (vosk both, chunk 60 ms, the issue's goal is 0.35);
scripts/bench_noise.py measured 0.55 over six clips."""


@pytest.fixture(scope="module")
def hearing(shared_dir):
    folder = shared_dir / "audio" / "ko-read"
    rows = csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t")
    transcripts = {r["file"]: r["transcript"] for r in rows}

    def signal(name: str) -> np.ndarray:
        return np.frombuffer(read_file(folder / name), "<i2").astype(np.float32)

    config = load_config(str(EXAMPLE_CONFIG))
    config = dataclasses.replace(config, stt=dataclasses.replace(config.stt, warm_up_s=0.0))
    presets = presets_from_config(config.intents, home_from_config(config.home))
    recognizer = build_recognizer(config.stt, presets.phrases())
    voices = [signal(v) for v in VOICES]
    done: dict[tuple[str, float], list] = {}

    def hear(noise: str, snr_db: float) -> list[tuple[str, list[dict]]]:
        if (noise, snr_db) in done:
            return done[noise, snr_db]
        heard = done[noise, snr_db] = []
        for seed, name in enumerate(HEARD):
            speech = signal(name)
            rng = np.random.default_rng([seed, int(snr_db)])
            if noise == "babble":
                sound = babble(voices, len(speech), rng)
            else:
                sound = make_noise(noise, len(speech), rng)
            pcm = to_pcm16(mix_at_snr(speech, sound, snr_db))
            records = replay_source(
                RawSource(io.BytesIO(pcm), name=name), config, recognizer, presets
            )
            heard.append((transcripts[name], records))
        return heard

    return hear


def test_cer_at_20_db_white_noise_stays_within_the_measured_bound(hearing):
    errors = chars = 0
    for transcript, records in hearing("white", 20):
        text = " ".join(r["transcript"] for r in records)
        wrong, length = character_errors(transcript, text)
        errors, chars = errors + wrong, chars + length
    assert errors / chars <= CER_WHITE_20_DB


@pytest.mark.parametrize(("noise", "snr_db"), [("white", 20), ("pink", 10), ("babble", 5)])
def test_no_device_fires_on_noisy_non_command_speech(hearing, noise, snr_db):
    for _, records in hearing(noise, snr_db):
        fired = [r for r in records if r["intent"] in DEVICE_INTENTS]
        assert not fired, [(r["transcript"], r["intent"], r["slots"]) for r in fired]
