"""Online WPE dereverberation on real read speech said across a simulated room, to one
microphone and to a circular array. What should be left is the talker's direct sound and
first 50 ms of reflections; everything else heard is measured against it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sori.hearing.audio.dereverb import OnlineWpe
from sori.hearing.audio.room import RoomSetup, simulate_room
from sori.testing.harness.conditions import clip

RATE = 16000
CLIP = "zeroth_104_003_0294.wav"  # 6.9 s of read speech


@pytest.fixture(scope="module")
def speech(shared_dir: Path) -> np.ndarray:
    return clip(shared_dir / "audio" / "ko-read" / CLIP) / 32768.0


def dereverbed(signal: np.ndarray, wpe: OnlineWpe, block: int = 320) -> np.ndarray:
    """`signal` (samples, channels) through `wpe` in blocks, realigned to the input."""
    padded = np.concatenate([signal, np.zeros((wpe.latency, signal.shape[1]))])
    out = np.concatenate([wpe.process(padded[i : i + block]) for i in range(0, len(padded), block)])
    return out[wpe.latency :]


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


def test_blocks_of_any_length_give_the_same_sound():
    noise = np.random.default_rng(0).standard_normal((3000, 2)).astype(np.float32)
    whole = OnlineWpe(2).process(noise)
    wpe = OnlineWpe(2)
    cuts = [0, 1, 50, 128, 129, 700, 2999, 3000]
    pieces = [wpe.process(noise[a:b]) for a, b in zip(cuts, cuts[1:], strict=False)]
    assert all(p.dtype == np.float32 and p.shape[1] == 2 for p in pieces)
    assert sum(len(p) for p in pieces) == len(noise)
    np.testing.assert_allclose(np.concatenate(pieces), whole, atol=1e-6)


def test_a_click_in_silence_comes_out_one_frame_later_unchanged():
    click = np.zeros((4000, 1), np.float32)
    click[1000] = 0.5
    wpe = OnlineWpe(1)
    out = wpe.process(click)
    assert wpe.latency == 512  # one 32 ms frame at 16 kHz
    np.testing.assert_allclose(out[wpe.latency :], click[: -wpe.latency], atol=1e-6)


def test_a_block_of_the_wrong_shape_is_refused():
    wpe = OnlineWpe(2)
    with pytest.raises(ValueError, match=r"\(frames, 2\)"):
        wpe.process(np.zeros((100, 3), np.float32))
    with pytest.raises(ValueError, match="must be >= 1"):
        OnlineWpe(0)
