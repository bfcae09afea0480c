"""The hearing pipeline with scripted partial hypotheses: early commit, correction,
several utterances, pre-roll, the replay clock and the async driver."""

from __future__ import annotations

import asyncio

import numpy as np

from sori.core.clock import FakeClock
from sori.core.events import (
    IntentCommitted,
    IntentCorrected,
    IntentNotRecognized,
    SpeechStarted,
    SpeechStopped,
    TranscriptFinal,
    TranscriptPartial,
    UtteranceHeard,
    WakeDetected,
)
from sori.hearing.audio.denoise_decision import DenoiseDecision, DenoiserPool
from sori.hearing.audio.format import RATE_HZ, float_to_s16
from sori.hearing.committing import CommitSettings
from sori.hearing.pacing import ReplayClock, hear, replay
from sori.hearing.pipeline import Hearing
from sori.hearing.vad import EndpointSettings
from sori.hearing.wake.base import Detection
from sori.testing.fakes import (
    Cue,
    EnergyScorer,
    ScriptedRecognizer,
    kinds,
    run_frames,
    to_frames,
    tone,
    tone_frames,
)
from sori.understanding.intents import IntentMatch

MS = 1_000_000


class Understanding:
    """Two commands; closed when the text ends in 줘 or 꺼."""

    def match(self, text):
        if text.startswith("거실 불 켜"):
            return IntentMatch(
                "HassTurnOn", {"area": "거실", "domain": "light"}, 1.0, "켰어요", text
            )
        if text.startswith("거실 불 꺼"):
            return IntentMatch(
                "HassTurnOff", {"area": "거실", "domain": "light"}, 1.0, "껐어요", text
            )
        return None

    def is_closed(self, text):
        return text.endswith(("줘", "꺼"))


SPEECH = [(300, False), (700, True), (800, False)]  # speech 0.3-1.0 s
LIGHT_ON = "거실 불 켜 줘"


def hearing_for(scripts, clock, understanding=None, **commit):
    return Hearing(
        EnergyScorer(),
        ScriptedRecognizer(scripts),
        understanding or Understanding(),
        clock=clock,
        endpoint=EndpointSettings(frame_ms=20, start_ms=60, stop_ms=400, pre_roll_ms=200),
        commit=CommitSettings(**commit),
    )


def of(events, kind):
    return [e for e in events if isinstance(e, kind)]


def test_closed_complete_partial_commits_early_after_a_little_silence():
    clock = FakeClock()
    cues = [Cue(300, "거실"), Cue(500, "거실 불 켜"), Cue(760, "거실 불 켜 줘")]
    hearing = hearing_for([(cues, "거실 불 켜 줘")], clock, silence_ms=40)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    assert kinds(events) == [
        SpeechStarted,
        TranscriptPartial,
        TranscriptPartial,
        TranscriptPartial,
        IntentCommitted,
        SpeechStopped,
        TranscriptFinal,
        UtteranceHeard,
    ]
    commit = of(events, IntentCommitted)[0]
    assert commit.early and commit.intent == "HassTurnOn" and commit.slots["area"] == "거실"
    stopped = of(events, SpeechStopped)[0]
    assert stopped.audio_end_ns == 1000 * MS
    # committed once 40 ms of silence were heard, long before the endpointer's 400 ms
    assert commit.t_ns == 1040 * MS
    assert stopped.t_ns == 1400 * MS
    heard = of(events, UtteranceHeard)[0]
    assert heard.commit_t_ns == commit.t_ns and heard.speech_end_ns == 1000 * MS


class FuzzyUnderstanding(Understanding):
    """The same commands, matched only as near-misses (confidence 0.85)."""

    def match(self, text):
        found = super().match(text)
        return found and IntentMatch(found.intent, found.slots, 0.85, found.response, text)


def test_a_constrained_result_that_passed_the_ratio_test_commits_early_at_the_silence_gate():
    """The constrained pass's phrase stands in for the match-confidence floor: a closed
    command from it commits at the silence gate and carries its score."""
    clock = FakeClock()
    cues = [Cue(300, "거실"), Cue(760, "거실 불 켜 줘", "grammar", 8.5)]
    hearing = hearing_for([(cues, "거실 불 켜 줘")], clock, FuzzyUnderstanding(), silence_ms=40)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    (commit,) = of(events, IntentCommitted)
    assert commit.early and commit.lr_score == 8.5 and commit.t_ns == 1040 * MS
    assert kinds(events).index(IntentCommitted) < kinds(events).index(SpeechStopped)
    assert of(events, UtteranceHeard)[0].constrained  # a replay's report says so


def test_a_free_form_transcript_is_not_reported_as_the_constrained_pass_s():
    """`UtteranceHeard.constrained` tells a tester which pass a command came from: the
    free-form text that stood when the phrase failed its test is not the grammar's."""
    clock = FakeClock()
    cues = [Cue(300, "거실"), Cue(760, "거실 불 켜 줘", "free", -1.5)]
    hearing = hearing_for([(cues, "거실 불 켜 줘")], clock, Understanding(), silence_ms=40)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    (heard,) = of(events, UtteranceHeard)
    assert heard.text == "거실 불 켜 줘" and heard.lr_score == -1.5
    assert not heard.constrained


def test_the_utterance_s_snr_as_it_begins_reaches_the_recognizer():
    """The recognizer asks more of a phrase heard in noise (sori.hearing.stt.vosk,
    `threshold_for`), so the stream is opened with how far the speech stands above the
    room in the ring: a voice over noise just under the voice detector, about 17 dB; the
    same voice over a silent room, far more."""
    said = np.concatenate([tone(ms, voiced, 600.0, 0.05) for ms, voiced in SPEECH])
    noise = 0.008 * np.random.default_rng(4).standard_normal(len(said))

    def snr_db(room: np.ndarray) -> float:
        clock = FakeClock()
        hearing = hearing_for([([Cue(760, LIGHT_ON)], LIGHT_ON)], clock)
        run_frames(hearing, to_frames(float_to_s16(said + room)), clock)
        (opened,) = hearing.recognizer.snrs_db
        return opened

    assert 10.0 < snr_db(noise) < 25.0
    assert snr_db(0 * noise) > 60.0


def test_a_free_form_near_miss_still_waits_for_the_final_result():
    clock = FakeClock()
    cues = [Cue(300, "거실"), Cue(760, "거실 불 켜 줘", "free", -20.0)]
    hearing = hearing_for([(cues, "거실 불 켜 줘")], clock, FuzzyUnderstanding(), silence_ms=40)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    (commit,) = of(events, IntentCommitted)
    assert not commit.early
    assert kinds(events).index(IntentCommitted) > kinds(events).index(TranscriptFinal)


def test_open_ending_waits_for_the_final_result():
    clock = FakeClock()
    cues = [Cue(300, "거실 불 켜")]  # complete command, but not a closed form
    hearing = hearing_for([(cues, "거실 불 켜 줘")], clock)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    commit = of(events, IntentCommitted)[0]
    assert not commit.early
    assert kinds(events).index(IntentCommitted) > kinds(events).index(TranscriptFinal)


def test_no_early_commit_while_still_speaking():
    clock = FakeClock()
    cues = [Cue(200, "거실 불 켜 줘")]  # closed partial long before the speech ends
    hearing = hearing_for([(cues, "거실 불 켜 줘")], clock)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    assert of(events, IntentCommitted)[0].t_ns >= 1000 * MS


def test_early_commit_can_be_switched_off():
    clock = FakeClock()
    cues = [Cue(600, "거실 불 켜 줘")]
    hearing = hearing_for([(cues, "거실 불 켜 줘")], clock, early=False)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    assert [e.early for e in of(events, IntentCommitted)] == [False]


def test_final_that_contradicts_the_commit_corrects_it():
    clock = FakeClock()
    cues = [Cue(600, "거실 불 켜 줘")]
    hearing = hearing_for([(cues, "거실 불 꺼")], clock)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    (correction,) = of(events, IntentCorrected)
    assert correction.previous.intent == "HassTurnOn"
    assert correction.replacement.intent == "HassTurnOff"
    assert not correction.replacement.early


def test_final_that_means_nothing_withdraws_the_commit():
    clock = FakeClock()
    hearing = hearing_for([([Cue(600, "거실 불 켜 줘")], "거실 분위기 좋다")], clock)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    (correction,) = of(events, IntentCorrected)
    assert correction.replacement is None
    assert of(events, UtteranceHeard)[0].commit_t_ns is None


def test_agreeing_final_adds_nothing():
    clock = FakeClock()
    hearing = hearing_for([([Cue(600, "거실 불 켜 줘")], "거실 불 켜 줘")], clock)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    assert len(of(events, IntentCommitted)) == 1 and not of(events, IntentCorrected)


def test_several_utterances_become_several_turns_with_pre_roll():
    clock = FakeClock()
    scripts = [([Cue(400, "거실 불 켜 줘")], "거실 불 켜 줘"), ([Cue(100, "음")], "음 글쎄")]
    hearing = hearing_for(scripts, clock)
    frames = tone_frames([(500, False), (600, True), (900, False), (400, True), (700, False)])
    events = run_frames(hearing, frames, clock)
    assert [e.utterance_id for e in of(events, UtteranceHeard)] == [0, 1]
    assert [e.text for e in of(events, IntentNotRecognized)] == ["음 글쎄"]
    first = hearing.recognizer.streams[0]
    # the recognizer got the 200 ms pre-roll + 600 ms speech + 400 ms trailing silence
    assert abs(first.fed_ms - 1200) <= 20
    assert all(s.finalized for s in hearing.recognizer.streams)


def test_stream_ending_mid_utterance_still_finishes_it():
    clock = FakeClock()
    hearing = hearing_for([([Cue(100, "거실 불")], "거실 불")], clock)
    events = run_frames(hearing, tone_frames([(200, False), (500, True)]), clock)
    assert kinds(events)[-4:] == [
        SpeechStopped,
        TranscriptFinal,
        IntentNotRecognized,
        UtteranceHeard,
    ]


def test_replay_clock_simulates_arrival_and_keeps_real_processing_time():
    clock = ReplayClock()
    clock.arrive(5_000 * MS)
    assert 5_000 * MS <= clock.now_ns() < 5_100 * MS
    clock.arrive(1 * MS)  # audio from the past: already late, time never goes back
    assert clock.now_ns() >= 5_000 * MS


def test_replay_driver_reports_latency_as_if_in_real_time():
    clock = ReplayClock()
    hearing = hearing_for([([Cue(760, "거실 불 켜 줘")], "거실 불 켜 줘")], clock)
    events = list(replay(tone_frames(SPEECH), hearing, clock))
    commit, stopped = of(events, IntentCommitted)[0], of(events, SpeechStopped)[0]
    # at least the 40 ms of silence after the last voiced frame (at 1.0 s) plus processing;
    # stamped in simulated time, so well before the endpointer's decision
    assert commit.t_ns - stopped.audio_end_ns >= 40 * MS
    assert 1_040 * MS <= commit.t_ns <= stopped.t_ns
    assert stopped.t_ns >= 1_400 * MS


def test_async_driver_yields_the_same_events():
    clock = FakeClock()
    hearing = hearing_for([([Cue(600, "거실 불 켜 줘")], "거실 불 켜 줘")], clock)

    async def collect():
        return [e async for e in hear(tone_frames(SPEECH), hearing)]

    events = asyncio.run(collect())
    assert kinds(events)[0] is SpeechStarted and kinds(events)[-1] is UtteranceHeard
    assert of(events, IntentCommitted)[0].early


def test_a_pause_flushes_the_recognizer_once_and_real_silence_is_not_fed_twice():
    clock = FakeClock()
    # the scripted recognizer shows the closing word only after 1.0 s of audio: 0.2 s pre-roll
    # + 0.7 s speech + 0.04 s pause + the flush (0.2 s of silence fed at once)
    hearing = hearing_for([([Cue(1_000, "거실 불 켜 줘")], "거실 불 켜 줘")], clock, flush_ms=200)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    commit = of(events, IntentCommitted)[0]
    assert commit.early and commit.t_ns == 1_040 * MS
    stream = hearing.recognizer.streams[0]
    # 200 ms pre-roll + 700 ms speech + 400 ms silence until the stop: padding replaced
    # 200 ms of the real silence, so the total is unchanged
    assert abs(stream.fed_ms - 1_300) <= 20


def test_without_flush_the_commit_waits_for_the_recognizer():
    clock = FakeClock()
    hearing = hearing_for([([Cue(1_000, "거실 불 켜 줘")], "거실 불 켜 줘")], clock, flush_ms=0)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    assert of(events, IntentCommitted)[0].t_ns == 1_100 * MS


def test_free_speech_that_matches_nothing_is_flushed_once_per_pause():
    clock = FakeClock()
    hearing = hearing_for(
        [([Cue(300, "오늘 날씨가 참")], "오늘 날씨가 참 좋다")], clock, flush_ms=200
    )
    run_frames(hearing, tone_frames(SPEECH), clock)
    stream = hearing.recognizer.streams[0]
    assert stream.feeds.count(6_400) == 1  # one 200 ms flush
    # 200 ms pre-roll + 700 ms speech + 400 ms silence: the flush replaced real silence
    assert abs(stream.fed_ms - 1_300) <= 20


def test_an_unclosed_command_is_flushed_up_to_flush_steps_times():
    clock = FakeClock()
    cues = [Cue(600, "거실 불 켜")]  # never closes
    hearing = hearing_for([(cues, "거실 불 켜")], clock, flush_ms=100, flush_steps=2)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    stream = hearing.recognizer.streams[0]
    assert stream.feeds.count(3_200) == 2  # two 100 ms flushes, then no more
    # padding replaced real silence one for one: the total fed is unchanged
    assert abs(stream.fed_ms - 1_300) <= 20
    assert [e.early for e in of(events, IntentCommitted)] == [False]


def test_the_flush_runs_on_the_first_silent_frame_and_the_commit_when_the_gate_opens():
    clock = FakeClock()
    hearing = hearing_for(
        [([Cue(1_000, "거실 불 켜 줘")], "거실 불 켜 줘")], clock, silence_ms=40, flush_ms=200
    )
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    stream = hearing.recognizer.streams[0]
    # pre-roll and speech (0.1-1.0 s), then the flush on the first silent frame, which
    # waited (it is quiet): the cut comes where the speech ended, the frame after it
    assert stream.flushes == [(32 * 900, 32 * 20)]
    assert sum(stream.feeds[: stream.feeds.index(6_400)]) == 32 * 900
    (closed,) = [e for e in of(events, TranscriptPartial) if e.text == "거실 불 켜 줘"]
    assert closed.t_ns == 1_020 * MS  # caught up while the silence gate was still shut
    assert of(events, IntentCommitted)[0].t_ns == 1_040 * MS


class TrailingScorer:
    """Silero's way: the score stays up for `frames` frames after the voice stops."""

    def __init__(self, frames: int) -> None:
        self.voice, self.frames, self.left = EnergyScorer(), frames, 0

    def score(self, pcm: bytes) -> float:
        self.left = self.frames if self.voice.score(pcm) else max(0, self.left - 1)
        return 1.0 if self.voice.score(pcm) or self.left else 0.0


def trailing_hearing(clock):
    """A pipeline whose voice detector's score trails the speech by two frames."""
    return Hearing(
        TrailingScorer(frames=3), ScriptedRecognizer([([Cue(900, LIGHT_ON)], LIGHT_ON)]),
        Understanding(), clock=clock,
        endpoint=EndpointSettings(frame_ms=20, start_ms=60, stop_ms=400, pre_roll_ms=200),
        commit=CommitSettings(silence_ms=40, flush_ms=200),
    )  # fmt: skip


def test_the_cut_comes_where_the_speech_ended_not_where_the_score_fell():
    """Quiet frames the voice detector still calls voice wait: the pause's flush cuts the
    recognizer before them and hands them on after the cut, and nothing is lost."""
    clock = FakeClock()
    hearing = trailing_hearing(clock)
    events = run_frames(hearing, tone_frames(SPEECH), clock)
    stream = hearing.recognizer.streams[0]
    # pre-roll and speech (0.1-1.0 s) before the cut; the two frames the score trailed
    # over and the first it called silent after it
    assert stream.flushes == [(32 * 900, 32 * 60)]
    assert of(events, IntentCommitted)[0].t_ns == 1_080 * MS  # the score fell at 1.04 s
    # the pre-roll and everything after it up to the stop, 400 ms into the silence
    assert stream.fed_ms == 1_340


def test_quiet_frames_within_speech_are_heard_in_their_place():
    """A gap shorter than the score's trail is no pause: its quiet frames wait, then
    reach the recognizer before the speech after them."""
    clock = FakeClock()
    speech = [(300, False), (400, True), (40, False), (300, True), (800, False)]
    hearing = trailing_hearing(clock)
    run_frames(hearing, tone_frames(speech), clock)
    stream = hearing.recognizer.streams[0]
    gap = stream.feeds.index(1_280)  # the gap's two frames, when the speech went on
    assert sum(stream.feeds[:gap]) == 32 * 600
    assert stream.flushes == [(32 * 940, 32 * 60)]  # one pause: after the speech
    assert stream.fed_ms == 1_380  # all of it up to the stop


def test_a_command_the_speaker_goes_on_from_with_go_is_held_for_the_final_transcript():
    """ "거실 불 끄고 … 에어컨 꺼 줘": the decoder shows "거실 불 꺼" (closed) and holds the
    ending 고 back until the pause's flush; nothing is committed early, and the final
    transcript decides."""
    clock = FakeClock()
    speech = [(300, False), (700, True), (200, False), (600, True), (800, False)]
    cues = [
        Cue(300, "거실"),
        Cue(800, "거실 불 꺼"),
        Cue(1_000, "거실 불 끄고"),  # reached only by the flush at the first pause
        Cue(1_500, "거실 불 끄고 에어컨 꺼"),
    ]
    hearing = hearing_for([(cues, "거실 불 끄고 에어컨 꺼 줘")], clock, silence_ms=40)
    events = run_frames(hearing, tone_frames(speech), clock)
    assert of(events, IntentCommitted) == []
    assert "거실 불 끄고" in [e.text for e in of(events, TranscriptPartial)]
    (final,) = of(events, IntentNotRecognized)
    assert final.text == "거실 불 끄고 에어컨 꺼 줘"  # several commands: the daemon splits it


class LiveRoom:
    """A gate without a wake phrase, live: Sori's speaker played an answer from 1.1 s."""

    muted = False

    def __init__(self):
        from sori.hearing.audio.played import PlayedAudio
        from sori.testing.fakes import tone_pcm

        self.echo = PlayedAudio()
        self.echo.add(1100 * MS, tone_pcm([(1200, True)]), 16000)

    def is_open(self, t_ns):
        return True


def test_sori_answering_before_the_pause_ends_the_committed_turn_where_the_answer_begins():
    """Live without echo cancellation the voice detector hears the answer (1.1-2.3 s) as
    more of the command's utterance (0.3-1.0 s): the turn ends where the answer began, so
    the recognizer never hears Sori's words and the commit stands; the endpointer's end of
    the utterance still follows."""
    clock = FakeClock()
    cues = [Cue(760, "거실 불 켜 줘"), Cue(1300, "거실 불 켜 줘 켰어요")]
    hearing = Hearing(
        EnergyScorer(),
        ScriptedRecognizer([(cues, "거실 불 켜 줘")]),
        Understanding(),
        clock=clock,
        endpoint=EndpointSettings(frame_ms=20, start_ms=60, stop_ms=400, pre_roll_ms=200),
        commit=CommitSettings(silence_ms=40),
        gate=LiveRoom(),
    )
    frames = tone_frames([(300, False), (700, True), (100, False), (1200, True), (800, False)])
    events = run_frames(hearing, frames, clock)
    assert kinds(events)[-4:] == [IntentCommitted, TranscriptFinal, UtteranceHeard, SpeechStopped]
    heard = of(events, UtteranceHeard)[0]
    assert heard.text == "거실 불 켜 줘" and heard.stopped_t_ns == 1120 * MS  # its 1st frame
    assert heard.speech_end_ns == 1000 * MS and not of(events, IntentCorrected)
    assert of(events, SpeechStopped)[0].audio_end_ns == 2300 * MS
    # fed up to the answer (with the pause's flush), never the 1.3 s of audio its words need
    assert not [e for e in of(events, TranscriptPartial) if "켰어요" in e.text]


class PhraseAt:
    """A wake detector whose streams hear "소리야" ending `end_s` into their audio, once
    they have been fed `heard_after_s` of it (the detector's own delay)."""

    name, phrases, rearm_s = "stub", ["소리야"], None

    def __init__(self, heard_after_s: float, end_s: float = 0.3) -> None:
        self.heard_after_s = heard_after_s
        self.end_s = end_s

    def open_stream(self, within=False):
        detector = self

        class Stream:
            fed_s, done = 0.0, False

            def feed(self, pcm):
                self.fed_s += len(pcm) / 32000
                if self.done or self.fed_s < detector.heard_after_s:
                    return []
                self.done = True
                return [Detection("소리야", 0.1, detector.end_s, 5.0)]

            def finish(self):
                return []

            def close(self):
                self.done = True

        return Stream()


class ClosedGate:
    """Every utterance needs the wake phrase."""

    muted, echo = False, None

    def is_open(self, t_ns):
        return False


def test_a_phrase_heard_while_the_onset_is_held_loses_none_of_the_command_after_it():
    """The denoise decision holds an utterance's first frames, then its listeners hear them
    at once. A phrase the detector finds within them (a quick detector: 0.36 s into its
    stream) must give the command's recognizer the same audio as one found after them."""
    frames = tone_frames([(300, False), (1200, True), (800, False)])
    fed = {}
    for heard_after_s in (0.36, 0.8):
        clock = FakeClock()
        recognizer = ScriptedRecognizer([((), "")])
        hearing = Hearing(
            EnergyScorer(), recognizer, Understanding(), clock=clock,
            endpoint=EndpointSettings(frame_ms=20, start_ms=60, stop_ms=400, pre_roll_ms=200),
            wake=PhraseAt(heard_after_s), gate=ClosedGate(),
            denoise=DenoiseDecision("rnnoise", above_dbfs=-65.0, pool=DenoiserPool()),
        )  # fmt: skip
        events = run_frames(hearing, frames, clock)
        assert len(of(events, WakeDetected)) == 1
        fed[heard_after_s] = recognizer.streams[0].fed_bytes
    assert fed[0.36] == fed[0.8] > 0


def test_a_turn_a_phrase_opens_in_the_breath_before_its_command_waits_for_the_command():
    """The phrase (0.3-0.8 s), a breath, the command (1.0-1.8 s). The detector finds the
    phrase in the breath; the turn it opens is not flushed there (the recognizer would
    make words of the phrase's tail), only in the pause after the command."""
    frames = tone_frames([(300, False), (500, True), (200, False), (800, True), (800, False)])
    clock = FakeClock()
    recognizer = ScriptedRecognizer([((Cue(600, "거실 불 켜 줘"),), "거실 불 켜 줘")])
    hearing = Hearing(
        EnergyScorer(), recognizer, Understanding(), clock=clock,
        endpoint=EndpointSettings(frame_ms=20, start_ms=60, stop_ms=400, pre_roll_ms=200),
        commit=CommitSettings(flush_ms=120), wake=PhraseAt(0.82, end_s=0.7), gate=ClosedGate(),
    )  # fmt: skip
    events = run_frames(hearing, frames, clock)
    assert len(of(events, WakeDetected)) == 1
    (stream,) = recognizer.streams
    flushed_at_ms = [fed / 32 for fed, _ in stream.flushes]
    assert (
        flushed_at_ms and min(flushed_at_ms) >= 1000
    )  # in the pause after the command (1.0 s of the turn)
    assert [e.intent for e in of(events, IntentCommitted)] == ["HassTurnOn"]


REBEAMED = 1234
"""The sample `TurnsAt` beams every kept sample again as: none of the test's tones."""


class TurnsAt:
    """An array's beam, as the pipeline sees it, that a louder talker at 60° takes over
    on the `at`-th frame it is told of; it keeps `kept_ms` of the stream to beam again,
    and beams every sample of it as `REBEAMED`."""

    def __init__(self, at: int, kept_ms: int = 1000) -> None:
        self.at, self.told, self.kept_ms = at, 0, kept_ms
        self.direction_deg: float | None = 160.0
        self.clear = True
        self.takeovers = 0
        self.takeover_lag_s = 0.0
        self.holds = 0

    def heard(self, voiced: bool, in_speech: bool) -> None:
        self.told += 1
        if self.told == self.at:  # their voice began 0.65 s before
            self.takeovers, self.direction_deg, self.takeover_lag_s = 1, 60.0, 0.65

    def rebeam(self, samples: int) -> bytes:
        kept = min(samples, RATE_HZ * self.kept_ms // 1000)
        return np.full(kept, REBEAMED, "<i2").tobytes()


def test_a_talker_who_takes_the_array_over_gets_an_utterance_of_their_own():
    """A television's babble opens the utterance; 2 s in, the beam turns to a louder
    talker. What was heard until then commits nothing, even where it sounds like a
    command, and asks for no answer (no IntentNotRecognized); the talker's utterance
    begins 150 ms before where the beam found their voice began (0.65 s before the turn),
    hears those frames again, and commits."""
    clock = FakeClock()
    scripts = [
        ([Cue(300, "거실 불 켜")], "거실 불 켜"),
        ([Cue(900, "거실 불 꺼 줘")], "거실 불 꺼 줘"),
    ]
    hearing = hearing_for(scripts, clock)
    hearing.steering = TurnsAt(at=125)  # the frame ending at 2.5 s: 2.0 s into the speech
    events = run_frames(hearing, tone_frames([(500, False), (3500, True), (800, False)]), clock)

    starts, stops = of(events, SpeechStarted), of(events, SpeechStopped)
    assert [s.doa_deg for s in starts] == [160.0, 60.0]  # the television's, then theirs
    assert abs(starts[1].audio_start_ns / MS - 1700) <= 20  # 2.5 s - 0.65 s - 0.15 s
    assert stops[0].audio_end_ns == starts[1].audio_start_ns
    assert [e.text for e in of(events, TranscriptFinal)] == ["거실 불 켜", "거실 불 꺼 줘"]
    assert of(events, IntentNotRecognized) == []
    (committed,) = of(events, IntentCommitted)
    assert (committed.intent, committed.utterance_id) == ("HassTurnOff", 1)
    taken, talker = hearing.recognizer.streams
    assert taken.finalized and abs(talker.fed_ms - (4000 - 1700 + 400)) <= 40


def test_a_talker_who_takes_the_array_over_is_heard_through_the_turned_beam_from_their_start():
    """Until the beam turned, the talker's first words went through the beam that held the
    television: their utterance hears those frames again as the turned beam makes them,
    as far back as it keeps them (here 0.5 s of the 0.8 s), and the frames after it as
    they come."""
    clock = FakeClock()
    hearing = hearing_for([([], ""), ([Cue(900, "거실 불 꺼 줘")], "거실 불 꺼 줘")], clock)
    hearing.steering = TurnsAt(at=125, kept_ms=500)  # turns at 2.5 s; theirs opens at 1.7 s
    frames = tone_frames([(500, False), (3500, True), (800, False)])
    run_frames(hearing, frames, clock)

    _, talker = hearing.recognizer.streams
    heard = np.frombuffer(bytes(talker.audio), "<i2")
    sent = np.frombuffer(b"".join(f.pcm for f in frames), "<i2")
    ms = RATE_HZ // 1000
    assert np.array_equal(heard[: 300 * ms], sent[1700 * ms : 2000 * ms])  # older than kept
    assert np.all(heard[300 * ms : 800 * ms] == REBEAMED)
    assert np.array_equal(heard[800 * ms : 1500 * ms], sent[2500 * ms : 3200 * ms])
    assert not np.any(sent == REBEAMED)


class HoldsAt(TurnsAt):
    """An array's beam that is held on the talker of the utterance it hears on the `at`-th
    frame it is told of (no one takes it over)."""

    def heard(self, voiced: bool, in_speech: bool) -> None:
        self.told += 1
        if self.told == self.at:
            self.holds, self.direction_deg = 1, 60.0


def test_an_utterance_is_heard_again_through_the_beam_held_on_its_talker():
    """Until the beam is held on the talker, the recognizer hears them through the beam
    between utterances. Once it is held, the turn is heard again from a fresh stream: the
    frames since its first (pre-roll included) beamed as the beam is held now, then the
    frames as they come. One utterance, one transcript, and its command commits."""
    clock = FakeClock()
    scripts = [([], ""), ([Cue(900, "거실 불 꺼 줘")], "거실 불 꺼 줘")]
    hearing = hearing_for(scripts, clock)
    hearing.steering = HoldsAt(at=60)  # the frame ending at 1.2 s: 0.7 s into the speech
    frames = tone_frames([(500, False), (1500, True), (800, False)])
    events = run_frames(hearing, frames, clock)

    first, again = hearing.recognizer.streams
    assert first.finalized and 0 < first.fed_ms < 1200
    heard = np.frombuffer(bytes(again.audio), "<i2")
    sent = np.frombuffer(b"".join(f.pcm for f in frames), "<i2")
    ms = RATE_HZ // 1000
    beamed_again = int(np.argmax(heard != REBEAMED))  # every sample up to the hold's frame
    first_ms = 1200 - beamed_again // ms
    assert 200 <= first_ms <= 500  # the turn's first frame, in the pre-roll before the tone
    assert np.array_equal(
        heard[beamed_again : beamed_again + 500 * ms], sent[1200 * ms : 1700 * ms]
    )
    assert [e.text for e in of(events, TranscriptFinal)] == ["거실 불 꺼 줘"]
    assert [e.intent for e in of(events, IntentCommitted)] == ["HassTurnOff"]


class PhraseInSecondStream(PhraseAt):
    """A wake detector that finds the phrase only in the second utterance it hears, 0.3 s
    into it: the television's says none, the talker's opens with it."""

    def __init__(self) -> None:
        super().__init__(0.3)
        self.streams = 0

    def open_stream(self, within=False):
        self.streams += 1
        stream = super().open_stream(within)
        stream.done = self.streams != 2
        return stream


def test_a_talker_who_takes_the_array_over_is_heard_for_the_wake_phrase_from_their_start():
    """Every utterance needs the wake phrase. The television's opens first and has none;
    the talker who takes the beam over says the phrase as their utterance begins: the
    wake detector hears their utterance from its start, the phrase opens the turn, and
    the command after it commits."""
    clock = FakeClock()
    recognizer = ScriptedRecognizer([([Cue(300, "거실 불 꺼 줘")], "거실 불 꺼 줘")])
    detector = PhraseInSecondStream()
    hearing = Hearing(
        EnergyScorer(), recognizer, Understanding(), clock=clock,
        endpoint=EndpointSettings(frame_ms=20, start_ms=60, stop_ms=400, pre_roll_ms=200),
        wake=detector, gate=ClosedGate(), steering=TurnsAt(at=125),
    )  # fmt: skip
    events = run_frames(hearing, tone_frames([(500, False), (3500, True), (800, False)]), clock)

    assert detector.streams == 2  # the television's utterance, then the talker's
    (woke,) = of(events, WakeDetected)
    assert woke.utterance_id == 1
    assert [e.intent for e in of(events, IntentCommitted)] == ["HassTurnOff"]
