"""audio.denoise = "auto": the hearing pipeline's one decision per utterance, by an SNR
estimate from the pre-roll and the speech, on shared read clips in generated rooms; kept
while Sori speaks; one denoiser for the recognizer and the wake detector."""

from __future__ import annotations

import csv
import dataclasses
import logging

import numpy as np
import pytest

from sori.assemble.hearing import build_hearing
from sori.core.config import Config
from sori.hearing.audio import denoise_decision
from sori.hearing.audio.augment import make_noise, mix_at_snr, to_pcm16
from sori.hearing.audio.denoise_decision import (
    SILENCE_DBFS,
    DenoiseDecision,
    DenoiserPool,
    band_levels,
    estimate,
    wants_denoise,
)
from sori.hearing.audio.format import read_file
from sori.hearing.audio.ring import FrameChunker
from sori.hearing.pacing import ReplayClock
from sori.hearing.stt.base import Hypothesis

CLIPS = 4
"""The first clips of the manifest: four speakers' read sentences."""


class Heard:
    """What one listener was fed, utterance by utterance."""

    def __init__(self) -> None:
        self.utterances: list[bytearray] = []


class StubStream:
    def __init__(self, heard: Heard) -> None:
        heard.utterances.append(bytearray())
        self._pcm = heard.utterances[-1]

    def feed(self, pcm: bytes) -> Hypothesis | None:
        self._pcm += pcm
        return None

    def flush(self, silence_ms: int, after: bytes = b"") -> Hypothesis | None:
        self._pcm += after
        return None

    def finalize(self) -> Hypothesis:
        return Hypothesis("")


class StubRecognizer:
    name = "stub"

    def __init__(self) -> None:
        self.heard = Heard()

    def open_stream(self, snr_db: float | None = None) -> StubStream:
        return StubStream(self.heard)


class StubWakeStream(StubStream):
    done = False

    def feed(self, pcm: bytes) -> list:  # type: ignore[override]
        super().feed(pcm)
        return []

    def finish(self) -> list:
        return []

    def close(self) -> None:
        pass


class StubWake:
    """A wake detector that never wakes, and records what it heard."""

    name, phrases, rearm_s = "stub", ["소리야"], None

    def __init__(self) -> None:
        self.heard = Heard()

    def open_stream(self, within: bool = False) -> StubWakeStream:
        return StubWakeStream(self.heard)

    def heard_in(self, phrase: str, pcm: bytes, heard_score: float) -> bool:
        return False


class Echo:
    """Sori's speaker: playing (or not) as the test says."""

    def __init__(self) -> None:
        self.playing = False

    def speaking(self, t_ns: int) -> bool:
        return self.playing


class Gate:
    """A gate always open (every utterance a command), with Sori's speaker as its echo."""

    muted = False

    def __init__(self) -> None:
        self.echo = Echo()

    def is_open(self, t_ns: int) -> bool:
        return True


class Halving:
    """A stand-in denoiser: half the amplitude, 10 ms late."""

    delay_ms = 10

    def __init__(self) -> None:
        self._held = bytes(320)

    def restart(self) -> None:
        self._held = bytes(320)

    def drain(self) -> bytes:
        return self.process(bytes(320))

    def process(self, pcm: bytes) -> bytes:
        data = self._held + (np.frombuffer(pcm, "<i2") // 2).astype("<i2").tobytes()
        self._held = data[len(pcm) :]
        return data[: len(pcm)]


@pytest.fixture(scope="module")
def speech(shared_dir) -> list[np.ndarray]:
    """The first `CLIPS` clips, after half a second of the room (silence here)."""
    folder = shared_dir / "audio" / "ko-read"
    rows = list(csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t"))
    return [
        np.concatenate([np.zeros(8000), np.frombuffer(read_file(folder / r["file"]), "<i2")])
        for r in rows[:CLIPS]
    ]


def decisions(signals: list[np.ndarray], gate: Gate | None = None, pool=None) -> list:  # noqa: ANN001
    """The decision on each signal's first utterance, through the whole pipeline (a stub
    recognizer: the decision does not depend on what is recognized). The rest of a signal
    is not fed once the decision is made: denoising it would cost seconds and say nothing."""
    config = Config()
    config = dataclasses.replace(config, audio=dataclasses.replace(config.audio, denoise="auto"))
    made = []
    for signal in signals:
        hearing = build_hearing(config, StubRecognizer(), None, ReplayClock(), gate=gate)
        if pool is not None:
            hearing.denoise = DenoiseDecision("deepfilter", -65.0, pool=pool)
        for frame in FrameChunker(20).push(to_pcm16(signal)):
            hearing.push(frame)
            if hearing.denoise.decisions:
                break
        hearing.end()
        made.append(hearing.denoise.decisions[0])
    return made


def room(kind: str, dbfs: float, samples: int, seed: int) -> np.ndarray:
    """Room noise of `kind` at `dbfs` (RMS, full scale 0 dBFS), int16 scale."""
    return make_noise(kind, samples, np.random.default_rng(seed)) * 32768 * 10 ** (dbfs / 20)


def test_levels_are_read_in_the_speech_band():
    """A 1 kHz tone at -20 dBFS RMS reads -20; brown noise (a home's rumble) at -35 dBFS
    RMS reads much lower in the band, as it masks little speech."""
    tone = 32768 * 0.1 * np.sqrt(2) * np.sin(2 * np.pi * 1000 * np.arange(16_000) / 16_000)
    assert np.allclose(band_levels(to_pcm16(tone)), -20, atol=0.5)
    rumble = band_levels(to_pcm16(room("brown", -35, 16_000, 0)))
    assert np.median(rumble) < -45
    assert band_levels(b"").size == 0
    heard = estimate(to_pcm16(room("white", -40, 4800, 1)), to_pcm16(tone[:3200]))
    # white noise: 3100 of its 8000 Hz in the band (-4.1 dB), its quieter frames (-1.5)
    assert -47 < heard.room_dbfs < -44 and 24 < heard.snr_db < 27
    assert estimate(b"", b"").room_dbfs == SILENCE_DBFS


def test_the_rule_wants_a_low_snr_above_the_quiet_floor():
    noisy = denoise_decision.Estimate(room_dbfs=-40.0, speech_dbfs=-15.0)  # 25 dB
    clear = denoise_decision.Estimate(room_dbfs=-40.0, speech_dbfs=-5.0)  # 35 dB
    quiet = denoise_decision.Estimate(room_dbfs=-70.0, speech_dbfs=-60.0)  # 10 dB, quiet
    assert wants_denoise(noisy, -55.0) and not wants_denoise(clear, -55.0)
    assert not wants_denoise(quiet, -55.0)


def test_clean_speech_in_real_rooms_is_heard_raw(speech):
    """A home's room at -35 or -45 dBFS (brown noise: rumble, a fridge, the street) under
    read speech at about -19 dBFS RMS: no utterance denoised; nor in a quiet room."""
    for level in (-35, -45):
        mixed = [s + room("brown", level, len(s), i) for i, s in enumerate(speech)]
        made = decisions(mixed)
        assert not any(d.denoised for d in made), [d.estimate for d in made]
        assert all(d.estimate.room_dbfs > -60 for d in made)  # loud rooms, by level
    assert not any(d.denoised for d in decisions(speech))


def test_steady_noise_at_10_db_snr_is_denoised_at_any_level(speech):
    for kind in ("white", "pink"):
        for gain in (1.0, 0.1):  # the same SNR 20 dB quieter
            mixed = [
                gain * mix_at_snr(s, make_noise(kind, len(s), np.random.default_rng(i)), 10)
                for i, s in enumerate(speech)
            ]
            made = decisions(mixed)
            assert all(d.denoised for d in made), (kind, gain, [d.estimate for d in made])


def test_white_noise_at_20_db_snr_is_mostly_denoised(speech):
    mixed = [
        mix_at_snr(s, make_noise("white", len(s), np.random.default_rng(i)), 20)
        for i, s in enumerate(speech)
    ]
    assert sum(d.denoised for d in decisions(mixed)) >= CLIPS // 2


def test_over_sori_s_voice_the_last_decision_is_kept(speech, monkeypatch):
    """An utterance that begins while Sori's speaker plays has Sori's voice in its pre-roll,
    not the room: it keeps the last decision made with Sori silent."""
    monkeypatch.setattr(denoise_decision, "load_denoiser", lambda kind: Halving())
    config = Config()
    config = dataclasses.replace(config, audio=dataclasses.replace(config.audio, denoise="auto"))
    gate = Gate()
    hearing = build_hearing(config, StubRecognizer(), None, ReplayClock(), gate=gate)
    hearing.denoise = DenoiseDecision("deepfilter", -65.0, pool=DenoiserPool())
    white = make_noise("white", len(speech[0]), np.random.default_rng(0))
    pause = np.zeros(16_000)
    chunker = FrameChunker(20)
    for signal, playing in ((mix_at_snr(speech[0], white, 10), False), (speech[1], True),
                            (speech[1], False)):  # fmt: skip
        gate.echo.playing = playing
        for frame in chunker.push(to_pcm16(np.concatenate([signal, pause]))):
            hearing.push(frame)
    hearing.end()
    first, kept, fresh = hearing.denoise.decisions
    assert first.denoised and first.estimate is not None
    assert kept.denoised and kept.estimate is None
    assert not fresh.denoised and fresh.estimate is not None


def test_one_denoiser_serves_the_recognizer_and_the_wake_detector(speech, monkeypatch):
    """Both hear every utterance through the same decision and the same denoiser: the
    same denoised audio; the pool loads one denoiser for all the utterances."""
    monkeypatch.setattr(denoise_decision, "load_denoiser", lambda kind: Halving())
    pool = DenoiserPool()
    config = Config()
    config = dataclasses.replace(config, audio=dataclasses.replace(config.audio, denoise="auto"))
    recognizer, wake = StubRecognizer(), StubWake()
    hearing = build_hearing(config, recognizer, None, ReplayClock(), 0, wake, Gate())
    hearing.denoise = DenoiseDecision("deepfilter", -65.0, pool=pool)
    white = [make_noise("white", len(s), np.random.default_rng(i)) for i, s in enumerate(speech)]
    stream = np.concatenate([mix_at_snr(s, w, 10) for s, w in zip(speech, white, strict=True)])
    for frame in FrameChunker(20).push(to_pcm16(stream)):
        hearing.push(frame)
    hearing.end()
    made = hearing.denoise.decisions
    assert len(made) >= CLIPS and all(d.denoised for d in made)
    assert pool.loaded == 1
    opening = 2 * 16 * 600  # the ring and the held speech: fed before any pause's flush
    for by_stt, by_wake in zip(recognizer.heard.utterances, wake.heard.utterances, strict=False):
        assert len(by_stt) >= opening and by_stt[:opening] == by_wake[:opening]
    raw = to_pcm16(stream)
    first = bytes(recognizer.heard.utterances[0][:3200])
    assert first not in raw  # denoised (halved), not the microphone's samples


def test_a_denoiser_that_cannot_load_leaves_auto_raw_with_one_log_line(speech, monkeypatch, caplog):
    def missing(kind: str):  # noqa: ANN202
        raise denoise_decision.DependencyError("pip install 'sori[denoise]'")

    monkeypatch.setattr(denoise_decision, "load_denoiser", missing)
    pool = DenoiserPool()
    white = make_noise("white", len(speech[0]), np.random.default_rng(0))
    noisy = mix_at_snr(speech[0], white, 10)
    with caplog.at_level(logging.WARNING, logger="sori.hearing.audio.denoise_decision"):
        decisions([noisy, noisy], Gate(), pool)
    lines = [r.getMessage() for r in caplog.records if r.name.endswith("denoise_decision")]
    assert len(lines) == 1 and "sori[denoise]" in lines[0]
    assert pool.loaded == 0


def test_a_warmed_denoiser_hears_as_a_fresh_one(speech):
    """Start-up warms the "auto" denoiser on a thread (sori.assemble.hearing); whether it
    had finished when the first noisy utterance came must not change what the recognizer
    hears, or a replay would not repeat (`sori test` gave one worker other words than
    two). The real DeepFilterNet, warmed and not."""
    white = make_noise("white", len(speech[0]), np.random.default_rng(3))
    noisy = mix_at_snr(speech[0], white, 10)
    warmed = DenoiserPool()
    assert warmed.warm("deepfilter") and warmed.loaded == 1
    heard = []
    for pool in (warmed, DenoiserPool()):
        recognizer = StubRecognizer()
        hearing = build_hearing(Config(), recognizer, None, ReplayClock())
        hearing.denoise = DenoiseDecision("deepfilter", -65.0, pool=pool)
        for frame in FrameChunker(20).push(to_pcm16(noisy)):
            hearing.push(frame)
        hearing.end()
        assert hearing.denoise.decisions[0].denoised and pool.loaded == 1
        heard.append(bytes(recognizer.heard.utterances[0]))
    assert len(heard[0]) > 16000 and heard[0] == heard[1]
