"""Endpointing: the pure hysteresis, and webrtcvad on speech with known boundaries."""

from __future__ import annotations

import pytest

from hearing_fixtures import english_speech
from sori.core.clock import FakeClock
from sori.core.errors import ConfigError
from sori.core.events import SpeechStarted, SpeechStopped
from sori.hearing.vad import (
    Endpointer,
    EndpointSettings,
    EndpointState,
    WebrtcScorer,
    endpoint_step,
)
from sori.testing.fakes import to_frames

MS = 1_000_000


SCORES = {"x": 1.0, "m": 0.4, ".": 0.0, "t": 1.0}
"""Pattern letters: voiced, between the stop and the start threshold, silent; and voiced
but not audible (an array's beam says it does not stand clear of a television)."""


def pure(**kw) -> EndpointSettings:
    """Settings for hysteresis alone: no noise floor, a room measured in two frames."""
    return EndpointSettings(noise_margin_db=0, noise_window_ms=10, **kw)


def run_pattern(pattern: str, settings: EndpointSettings, energy_db: float = -30.0):
    """'x' voiced, 'm' middling, '.' silent frames of settings.frame_ms; decisions with
    frame index."""
    state, found = EndpointState(), []
    step = settings.frame_ms * MS
    for i, c in enumerate(pattern):
        score = SCORES[c]
        state, decision = endpoint_step(
            state, settings, score, energy_db, i * step, (i + 1) * step, audible=c != "t"
        )
        if decision:
            found.append((decision.kind, decision.audio_ns // step))
    return found


def test_start_needs_consecutive_voiced_frames_and_stop_needs_trailing_silence():
    settings = pure(frame_ms=10, start_ms=30, stop_ms=50)
    # a 2-frame blip does not start; a 3-frame run starts at its first frame;
    # a 4-frame pause does not stop; 5 silent frames stop at the last voiced frame's end
    pattern = "..xx...xxx....xx.....x"
    assert run_pattern(pattern, settings) == [("start", 7), ("stop", 16)]


def test_several_utterances_in_one_stream():
    settings = pure(frame_ms=10, start_ms=20, stop_ms=30)
    found = run_pattern("xx...xxx...x.xx...", settings)
    assert found == [
        ("start", 0),
        ("stop", 2),
        ("start", 5),
        ("stop", 8),
        ("start", 13),
        ("stop", 15),
    ]


def test_max_utterance_cuts_a_long_one():
    settings = pure(frame_ms=10, start_ms=20, stop_ms=100, max_utterance_ms=100)
    found = run_pattern("x" * 25, settings)
    assert found[:2] == [("start", 0), ("stop", 10)]


def test_voice_that_is_not_audible_neither_starts_nor_keeps_an_utterance():
    settings = pure(frame_ms=10, start_ms=30, stop_ms=50)
    assert run_pattern("ttttttt", settings) == []
    # heard clear over the television it starts; drowned in it for 5 frames, it stops
    assert run_pattern("..xxxtttttxx", settings) == [("start", 2), ("stop", 5)]


def test_bad_settings_are_refused():
    with pytest.raises(Exception, match="10, 20 or 30"):
        EndpointSettings(frame_ms=25)
    with pytest.raises(ConfigError, match="stop_ms"):
        EndpointSettings(stop_ms=0)
    with pytest.raises(ConfigError, match="aggressiveness"):
        WebrtcScorer(7)


@pytest.mark.parametrize("frame_ms", [10, 20, 30])
def test_webrtcvad_finds_each_sentence_of_real_synthesized_speech(frame_ms):
    speech = english_speech()
    settings = EndpointSettings(frame_ms=frame_ms, start_ms=60, stop_ms=500)
    endpointer = Endpointer(WebrtcScorer(2), settings, FakeClock())
    events = [e for f in to_frames(speech.pcm, frame_ms) if (e := endpointer.push(f))]
    assert [type(e) for e in events] == [SpeechStarted, SpeechStopped] * len(speech.spans_s)
    assert [e.utterance_id for e in events] == [0, 0, 1, 1, 2, 2]
    for (start_s, end_s), began, ended in zip(
        speech.spans_s, events[::2], events[1::2], strict=True
    ):
        assert abs(began.audio_start_ns / 1e9 - start_s) < 0.12
        assert abs(ended.audio_end_ns / 1e9 - end_s) < 0.15
