"""Dereverberation (online WPE, spectral suppression) on real read speech said across a
simulated room, to one microphone and to a circular array. What should be left is the
talker's direct sound and first 50 ms of reflections; everything else heard is measured
against it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sori.hearing.audio.dereverb import LateReverbSuppressor, OnlineWpe
from sori.hearing.audio.room import RoomSetup, simulate_room
from sori.testing.harness.conditions import clip

RATE = 16000
CLIP = "zeroth_104_003_0294.wav"  # 6.9 s of read speech


@pytest.fixture(scope="module")
def speech(shared_dir: Path) -> np.ndarray:
    return clip(shared_dir / "audio" / "ko-read" / CLIP) / 32768.0


def dereverbed(
    signal: np.ndarray, dereverb: OnlineWpe | LateReverbSuppressor, block: int = 320
) -> np.ndarray:
    """`signal` (samples, channels) through `dereverb` in blocks, realigned to the input."""
    padded = np.concatenate([signal, np.zeros((dereverb.latency, signal.shape[1]))])
    out = np.concatenate(
        [dereverb.process(padded[i : i + block]) for i in range(0, len(padded), block)]
    )
    return out[dereverb.latency :]


def early_to_late_db(heard: np.ndarray, early: np.ndarray, skip_s: float = 2.0) -> float:
    """How far above everything else the early sound is in `heard`, in dB, once the filter
    has had `skip_s` to learn the room."""
    start = int(skip_s * RATE)
    target, heard = early[start:], heard[start : len(early)]
    gain = (heard @ target) / (target @ target)
    rest = heard - gain * target
    return float(10 * np.log10(gain**2 * (target @ target) / (rest @ rest)))


@pytest.fixture(scope="module")
def rooms(speech) -> dict:
    """The clip said 2 m from one microphone and from a 4-mic array, RT60 0.8 s."""
    return {mics: simulate_room(speech, RoomSetup(0.8, 2.0, mics)) for mics in (1, 4)}


@pytest.mark.parametrize(("rt60_s", "assumed_s"), [(0.4, 0.4), (0.4, 0.6), (0.8, 0.6)])
def test_spectral_suppression_hears_less_of_the_room_from_the_first_word(speech, rt60_s, assumed_s):
    """It learns nothing, so the whole clip counts, its first second too (where WPE is
    still learning the room); the room's true RT60 or the default assumed."""
    room = simulate_room(speech, RoomSetup(rt60_s, 2.0, 1))
    cleaned = dereverbed(room.channels, LateReverbSuppressor(1, assumed_s))
    before = early_to_late_db(room.channels[:, 0], room.early, skip_s=0.0)
    after = early_to_late_db(cleaned[:, 0], room.early, skip_s=0.0)
    assert after > before + 1.0, (before, after)


def test_spectral_suppression_keeps_a_sound_and_takes_its_echo_down():
    """A burst of noise, then its tail dying away as a room of RT60 0.6 s would leave it:
    the tail from 100 ms on is taken down by at least 3 dB more than the burst (a steady
    sound loses a little: the model hears part of it as its own reverberation)."""
    rng = np.random.default_rng(3)
    burst_n, tail_n = RATE // 4, RATE // 2
    decay = np.exp(-3 * np.log(10) / 0.6 * np.arange(tail_n) / RATE)
    signal = np.concatenate([rng.standard_normal(burst_n), rng.standard_normal(tail_n) * decay])
    signal = 0.1 * signal[:, None]
    cleaned = dereverbed(signal, LateReverbSuppressor(1, 0.6))[:, 0]

    def db(x: np.ndarray) -> float:
        return float(10 * np.log10(np.mean(x**2)))

    burst = slice(RATE // 20, burst_n - RATE // 20)
    burst_lost = db(signal[burst, 0]) - db(cleaned[burst])
    tail = slice(burst_n + RATE // 10, burst_n + tail_n)
    tail_lost = db(signal[tail, 0]) - db(cleaned[tail])
    assert burst_lost < 2.0 and tail_lost > burst_lost + 3.0, (burst_lost, tail_lost)


@pytest.mark.parametrize(("mics", "better_db"), [(1, 0.6), (4, 2.0)])
def test_less_of_the_room_is_heard(rooms, mics, better_db):
    room = rooms[mics]
    cleaned = dereverbed(room.channels, OnlineWpe(mics))
    before = early_to_late_db(room.channels[:, 0], room.early)
    after = early_to_late_db(cleaned[:, 0], room.early)
    assert after > before + better_db, (before, after)


def test_a_muted_microphone_leaves_the_filter_as_it_was(rooms):
    """Digital silence teaches nothing: after a stretch of it (a muted microphone) the
    filter hears the room as a fresh one would, where forgetting without learning would
    have grown its inverse covariance by 1/alpha a frame, towards infinity."""
    heard = rooms[1].channels
    muted = 20 * RATE
    fresh = dereverbed(heard, OnlineWpe(1, alpha=0.99), block=4000)
    signal = np.concatenate([np.zeros((muted, 1)), heard])
    after_mute = dereverbed(signal, OnlineWpe(1, alpha=0.99), block=4000)[muted:]
    np.testing.assert_allclose(after_mute, fresh, atol=1e-6)


DEREVERBERATORS = {"wpe": lambda channels: OnlineWpe(channels),
                   "spectral": lambda channels: LateReverbSuppressor(channels, 0.6)}  # fmt: skip


@pytest.mark.parametrize("kind", DEREVERBERATORS)
def test_blocks_of_any_length_give_the_same_sound(kind):
    noise = np.random.default_rng(0).standard_normal((3000, 2)).astype(np.float32)
    whole = DEREVERBERATORS[kind](2).process(noise)
    dereverb = DEREVERBERATORS[kind](2)
    cuts = [0, 1, 50, 128, 129, 700, 2999, 3000]
    pieces = [dereverb.process(noise[a:b]) for a, b in zip(cuts, cuts[1:], strict=False)]
    assert all(p.dtype == np.float32 and p.shape[1] == 2 for p in pieces)
    assert sum(len(p) for p in pieces) == len(noise)
    np.testing.assert_allclose(np.concatenate(pieces), whole, atol=1e-6)


@pytest.mark.parametrize("kind", DEREVERBERATORS)
def test_a_click_in_silence_comes_out_one_frame_later_unchanged(kind):
    click = np.zeros((4000, 1), np.float32)
    click[1000] = 0.5
    dereverb = DEREVERBERATORS[kind](1)
    out = dereverb.process(click)
    assert dereverb.latency == 512  # one 32 ms frame at 16 kHz
    np.testing.assert_allclose(out[dereverb.latency :], click[: -dereverb.latency], atol=1e-6)


@pytest.mark.parametrize("kind", DEREVERBERATORS)
def test_a_block_of_the_wrong_shape_is_refused(kind):
    with pytest.raises(ValueError, match=r"\(frames, 2\)"):
        DEREVERBERATORS[kind](2).process(np.zeros((100, 3), np.float32))
    with pytest.raises(ValueError, match="must be >= 1"):
        DEREVERBERATORS[kind](0)


def test_a_room_without_reverberation_time_is_refused():
    with pytest.raises(ValueError, match="rt60_s"):
        LateReverbSuppressor(1, 0.0)
