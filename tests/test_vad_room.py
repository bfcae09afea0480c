"""The voice detector in a room: generated noise, hum after speech, start-up blips, two
commands split by noise after a digital silence, and the shared read clips.

Noise is made here from fixed seeds (sori.hearing.audio.augment), never stored."""

from __future__ import annotations

import csv
import dataclasses

import numpy as np
import pytest

from sori.assemble.hearing import build_scorer, endpoint_settings
from sori.core.clock import FakeClock
from sori.core.config import Config, VadConfig, parse_config
from sori.core.errors import AudioError, ConfigError
from sori.hearing.audio.augment import NOISE_KINDS, at_dbfs, make_noise, mix_at_snr, to_pcm16
from sori.hearing.audio.sources import FileSource
from sori.hearing.vad import (
    Endpointer,
    EndpointSettings,
    EndpointState,
    SileroScorer,
    endpoint_step,
    floor_step,
    silero_model_path,
)
from sori.testing.fakes import to_frames

MS = 1_000_000
RATE = 16_000
LEOPARD = "picovoice_leopard_test_ko.wav"
LEOPARD_SPEECH_END_S = 3.45
"""The leopard clip's speech ends here (its last 0.4 s is quiet room)."""
BACKENDS = ("silero", "webrtc")


def utterances(signal: np.ndarray, backend: str, **settings) -> list[tuple[float, float]]:
    """(start, end) in seconds of each utterance the endpointer finds in `signal`."""
    config = Config(vad=VadConfig(backend=backend))
    tuned = dataclasses.replace(endpoint_settings(config), **settings)
    endpointer = Endpointer(build_scorer(config), tuned, FakeClock())
    events = [e for f in to_frames(to_pcm16(signal), 20) if (e := endpointer.push(f))]
    if (last := endpointer.end_of_stream()) is not None:
        events.append(last)
    return [
        (a.audio_start_ns / 1e9, b.audio_end_ns / 1e9)
        for a, b in zip(events[::2], events[1::2], strict=True)
    ]


def noise(kind: str, seconds: float, dbfs: float, seed: int) -> np.ndarray:
    return at_dbfs(make_noise(kind, int(RATE * seconds), np.random.default_rng(seed)), dbfs)


@pytest.fixture(scope="module")
def leopard(shared_dir) -> np.ndarray:
    pcm = FileSource(shared_dir / "audio" / "ko-read" / LEOPARD).pcm
    return np.frombuffer(pcm, "<i2").astype(np.float32)[: int(RATE * LEOPARD_SPEECH_END_S)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dbfs", [-40, -30, -20])
@pytest.mark.parametrize("kind", NOISE_KINDS)
def test_a_minute_of_noise_opens_at_most_one_utterance(kind, dbfs, backend):
    # webrtcvad alone opened 38 a minute on pink noise at -30 dBFS
    found = utterances(noise(kind, 60, dbfs, seed=-dbfs * 10 + NOISE_KINDS.index(kind)), backend)
    assert len(found) <= 1, found


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", NOISE_KINDS)
def test_noise_that_follows_speech_closes_the_utterance(leopard, kind, backend):
    # webrtcvad alone held the utterance open for as long as the hum (or hiss) lasted
    signal = np.concatenate([leopard, noise(kind, 5, -30, seed=3)])
    found = utterances(signal, backend)
    assert len(found) == 1, found
    settings = EndpointSettings()
    # the end comes within the noise window (plus a frame or two) of the true end
    slack_s = (settings.noise_window_ms + 60) / 1000
    assert found[0][1] <= LEOPARD_SPEECH_END_S + slack_s, found


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_start_up_blip_never_becomes_a_turn(backend):
    # a microphone opening: a 100 ms burst, then a quiet room
    click = noise("white", 0.1, -20, seed=1)
    signal = np.concatenate([click, noise("pink", 3, -45, seed=2)])
    assert utterances(signal, backend) == []


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", NOISE_KINDS)
def test_two_commands_with_room_noise_after_a_digital_silence_are_two_utterances(
    leopard, kind, backend
):
    # command, 0.3 s of digital silence (a muted input), the room again, command
    def in_room(seconds: float, seed: int) -> np.ndarray:
        return noise(kind, seconds, -40, seed)

    command = leopard + in_room(len(leopard) / RATE, seed=4)
    gap = np.concatenate([np.zeros(int(RATE * 0.3), np.float32), in_room(1.0, seed=5)])
    found = utterances(np.concatenate([command, gap, command]), backend)
    assert len(found) == 2, found


def test_each_shared_clip_is_one_utterance(shared_dir):
    # 0472 opened a 120 ms blip at 0.06 s before the warm-up rule
    folder = shared_dir / "audio" / "ko-read"
    rows = list(csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t"))
    for row in rows:
        pcm = FileSource(folder / row["file"]).pcm
        found = utterances(np.frombuffer(pcm, "<i2").astype(np.float32), "silero")
        assert len(found) == 1, (row["file"], found)


# -- the pure core ------------------------------------------------------------------------


def run_scores(scores, settings, energy_db=-30.0):
    state, found = EndpointState(), []
    step = settings.frame_ms * MS
    for i, score in enumerate(scores):
        state, decision = endpoint_step(state, settings, score, energy_db, i * step, (i + 1) * step)
        if decision:
            found.append((decision.kind, decision.audio_ns // step))
    return found


def test_hysteresis_starts_high_and_holds_on_the_lower_threshold():
    settings = EndpointSettings(frame_ms=10, start_ms=30, stop_ms=50)
    warm = [0.0] * 30  # the room is measured first
    # 0.4 sits between the thresholds: it cannot start a run, but keeps one going
    assert run_scores(warm + [0.4] * 20, settings) == []
    found = run_scores(warm + [0.9] * 3 + [0.4] * 10 + [0.1] * 5, settings)
    assert found == [("start", 30), ("stop", 43)]


def test_the_noise_floor_follows_steady_sound_up_and_quiet_down():
    settings = EndpointSettings(frame_ms=20, noise_window_ms=100)  # 5 frames
    floor, recent = -100.0, ()
    for energy in [-20, -40, -25, -45, -30]:  # speech: not steady, the floor stays
        floor, recent = floor_step(floor, recent, settings, energy)
    assert floor == -100.0
    for energy in [-31, -30, -32, -31, -30]:  # hum: steady, it becomes the floor
        floor, recent = floor_step(floor, recent, settings, energy)
    assert floor == -30
    floor, recent = floor_step(floor, recent, settings, -60)  # far quieter: down at once
    assert floor == -60


def test_silero_takes_frames_of_every_length_and_refuses_odd_ones():
    assert silero_model_path().name == "silero_vad.onnx"
    scorer = SileroScorer()
    for ms in (10, 20, 30):
        assert 0.0 <= scorer.score(bytes(32 * ms)) <= 1.0
    with pytest.raises(AudioError, match="10, 20 or 30 ms"):
        scorer.score(bytes(33))


def test_the_noise_floor_is_webrtcs_alone():
    assert endpoint_settings(Config(vad=VadConfig(backend="webrtc"))).noise_margin_db == 3.0
    assert endpoint_settings(Config()).noise_margin_db == 0.0  # Silero: it would cut speech


@pytest.mark.parametrize("snr_db", [20, 10, 5])
def test_silero_keeps_speech_in_white_noise(leopard, snr_db):
    noisy = mix_at_snr(leopard, make_noise("white", len(leopard), np.random.default_rng(9)), snr_db)
    found = utterances(noisy, "silero")
    assert len(found) == 1 and found[0][1] - found[0][0] >= 2.5, found


def test_bad_vad_settings_name_the_fix():
    with pytest.raises(ConfigError, match="vad.backend must be one of silero, webrtc"):
        build_scorer(Config(vad=VadConfig(backend="cobra")))
    with pytest.raises(ConfigError, match="vad.backend must be silero or webrtc, got 'cobra'"):
        parse_config({"vad": {"backend": "cobra"}})  # refused when the config loads
    with pytest.raises(ConfigError, match="stop_threshold must be at most"):
        EndpointSettings(start_threshold=0.3, stop_threshold=0.6)
