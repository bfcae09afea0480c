"""Commit latency is measured from the end of speech the commit followed, never negative,
even when noise that the voice detector takes for voice keeps the utterance open."""

from __future__ import annotations

from sori.core.clock import FakeClock
from sori.core.events import IntentCommitted, SpeechStopped, UtteranceHeard
from sori.hearing.pipeline import CommitSettings, Hearing
from sori.hearing.vad import EndpointSettings
from sori.testing.fakes import Cue, EnergyScorer, ScriptedRecognizer, run_frames, tone_frames
from sori.testing.replaying import summarize
from sori.understanding.intents import IntentMatch

MS = 1_000_000


class Understanding:
    def match(self, text):
        if text.startswith("거실 불 켜"):
            return IntentMatch("HassTurnOn", {"area": "거실"}, 1.0, "켰어요", text)
        return None

    def is_closed(self, text):
        return text.endswith("줘")


def hear(segments, cues, final):
    clock = FakeClock()
    hearing = Hearing(
        EnergyScorer(),  # a detector that takes the noise for voice, as webrtcvad does
        ScriptedRecognizer([(cues, final)]),
        Understanding(),
        clock=clock,
        endpoint=EndpointSettings(start_ms=60, stop_ms=400, pre_roll_ms=200, noise_margin_db=0),
        commit=CommitSettings(silence_ms=40, flush_ms=0),
    )
    return run_frames(hearing, tone_frames(segments), clock)


def only(events, kind):
    (found,) = [e for e in events if isinstance(e, kind)]
    return found


def test_noise_after_an_early_commit_does_not_make_the_latency_negative():
    # speech 0.3-1.0 s, 100 ms of silence (the early commit comes at 1.04 s), then 0.9 s of
    # "voice" that is room noise, then silence: the utterance only ends at 2.0 s
    segments = [(300, False), (700, True), (100, False), (900, True), (800, False)]
    events = hear(segments, [Cue(500, "거실 불 켜 줘")], "거실 불 켜 줘")
    commit = only(events, IntentCommitted)
    assert commit.early and commit.t_ns == 1040 * MS
    assert only(events, SpeechStopped).audio_end_ns == 2000 * MS  # the old "end of speech"
    heard = only(events, UtteranceHeard)
    assert heard.speech_end_ns == 1000 * MS  # where the silence the commit waited on began
    (record,) = summarize("noisy.wav", events)
    assert record["speech_end_s"] == 1.0
    assert record["commit_latency_ms"] == 40.0  # it was -960 ms, measured from 2.0 s


def test_a_commit_on_the_final_result_is_measured_from_the_utterances_end():
    segments = [(300, False), (700, True), (800, False)]
    events = hear(segments, [Cue(500, "거실 불 켜")], "거실 불 켜 줘")  # never closed early
    commit = only(events, IntentCommitted)
    assert not commit.early
    (record,) = summarize("late.wav", events)
    assert record["speech_end_s"] == 1.0
    assert record["commit_latency_ms"] >= 400  # after the endpointer's stop_ms of silence
