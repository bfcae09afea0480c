"""The wake gate's own-voice decision while Sori speaks, with a detector that hears a
phrase in every stream's second second: what echo cancellation took out of the phrase's
frames says whether the phrase was Sori's."""

from __future__ import annotations

import numpy as np

from sori.core.clock import FakeClock
from sori.hearing.audio.format import AudioFrame
from sori.hearing.audio.played import PlayedAudio
from sori.hearing.wake.base import Detection
from sori.hearing.wake_gate import ECHO_SHARE_DB, WakeGate

S = 1_000_000_000
FRAME_NS = 20_000_000


class SecondSecond:
    """A stream that hears "소리야" from 1.0 to 1.4 s of its audio."""

    def __init__(self):
        self.fed_ns = 0
        self.done = False

    def feed(self, pcm):
        self.fed_ns += len(pcm) // 2 * S // 16000
        if self.done or self.fed_ns < int(1.5 * S):
            return []
        self.done = True
        return [Detection("소리야", 1.0, 1.4, 5.0)]

    def finish(self):
        return []

    def close(self):
        self.done = True


class Detector:
    name, phrases, rearm_s = "stub", ["소리야"], 1.0

    def open_stream(self, within=False):
        return SecondSecond()

    def heard_in(self, phrase, pcm, heard_score):
        return False  # Sori's record never sounds like the phrase here


class Speaking:
    """A gate whose speaker plays all along, so every frame may hold Sori's echo."""

    muted = False

    def __init__(self):
        self.echo = PlayedAudio()
        self.echo.add(0, np.full(16000 * 10, 3000, "<i2").tobytes(), 16000)

    def is_open(self, t_ns):
        return False


def wakes(echo_db: float) -> list:
    """Wake events of a 2 s utterance whose frames lost `echo_db` more echo energy to the
    canceller than was left in them."""
    gate = WakeGate(Speaking(), Detector(), FakeClock())
    left = np.full(320, 100, "<i2")
    removed = float(left.astype(np.float64) @ left) * 10 ** (echo_db / 10)
    frames = [AudioFrame(left.tobytes(), i * FRAME_NS, removed) for i in range(100)]
    gate.begin(0, frames[0])
    return [w.event for f in frames if (w := gate.feed(f)) is not None]


def test_a_phrase_heard_in_what_echo_cancellation_left_of_sori_is_ignored():
    assert wakes(ECHO_SHARE_DB + 6) == []


def test_a_phrase_said_over_sori_as_loud_as_its_echo_wakes():
    (event,) = wakes(0.0)
    assert event.phrase == "소리야" and event.start_ns == 1 * S
