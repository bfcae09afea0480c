"""One vosk model per process: the daemon's recognizer, the Wyoming server's recognizer
and wake detector, and the microphone's wake detector built from the config load the
Korean model once, not once per user (the real model)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sori.assemble.hearing import hearing_recognizer, second_recognizer
from sori.assemble.understanding import home_from_config, presets_from_config
from sori.assemble.wake import build_wake_detector
from sori.core.config import load_config
from sori.hearing.stt import vosk as vosk_backend

EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "device" / "sori.example.toml"


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """The folders vosk.Model is constructed from, from an empty process-wide cache."""
    import vosk

    made: list[str] = []
    real = vosk.Model

    def counting(path: str, *args, **kwargs):
        made.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(vosk_backend, "_LOADED", {})
    monkeypatch.setattr(vosk, "Model", counting)
    return made


def build_all(config):
    """What `sori run` with [wake] and [wyoming] builds: the recognizer (built twice, as the
    doctor's self-test or a replay in the same process would), its wake detector, and
    the Wyoming server's recognizer and detector."""
    presets = presets_from_config(config.intents, home_from_config(config.home))
    recognizer = hearing_recognizer(config, presets)
    again = hearing_recognizer(config, presets)
    wake = build_wake_detector(config, recognizer=recognizer)
    served = second_recognizer(recognizer)
    served_wake = build_wake_detector(config, recognizer=recognizer)
    inner = [getattr(x, "inner", x) for x in (recognizer, again, served, wake, served_wake)]
    return inner


@pytest.mark.parametrize("chunk_ms", [None, 0])
def test_every_user_shares_one_model_at_the_recognizer_s_chunk(loads, chunk_ms):
    """The wake detectors decode at the recognizer's chunk (stt.vosk.chunk_ms, 60 ms by
    default; or Kaldi's own), with or without the recognizer at hand (`sori wake`): one
    load in all, however many users (the Korean model holds about 500 MiB)."""
    config = load_config(str(EXAMPLE_CONFIG))
    vosk_config = config.stt.vosk
    if chunk_ms is not None:
        vosk_config = dataclasses.replace(vosk_config, chunk_ms=chunk_ms)
    config = dataclasses.replace(
        config, stt=dataclasses.replace(config.stt, warm_up_s=0.0, vosk=vosk_config)
    )
    recognizer, again, served, wake, served_wake = build_all(config)
    alone = build_wake_detector(config)
    assert len(loads) == 1, loads
    assert recognizer.model is again.model is served.model is wake.model is served_wake.model
    assert alone.model is recognizer.model


def test_the_loader_keys_on_the_resolved_folder_and_the_chunk(loads, tmp_path):
    folder = vosk_backend.default_model_path()
    link = tmp_path / "model"
    link.symlink_to(folder)
    first = vosk_backend.load_model(folder, chunk_ms=60)
    assert vosk_backend.load_model(link, chunk_ms=60) is first  # the same folder
    assert vosk_backend.load_model(None, chunk_ms=60) is first  # the default is that folder
    assert len(loads) == 1
