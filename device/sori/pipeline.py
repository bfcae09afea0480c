"""The hearing pipeline: audio frames → VAD/endpointer → speech-to-text → early commit.

`Hearing` is the synchronous core. Push one frame, get the events it caused:

    hearing = Hearing(scorer, recognizer, presets, clock=clock)
    for frame in source.frames():
        for event in hearing.push(frame):
            ...                                   # SpeechStarted, TranscriptPartial, ...
    events = hearing.end()                        # closes an utterance still open

It knows only protocols: a `VoiceScorer` (sori.vad), a `SpeechRecognizer` (sori.stt.base)
and an `Understanding` (anything with `match(text)` and `is_closed(text)`, such as
`sori.intents.Presets`). Which utterances reach the recognizer (mute, the wake phrase) is
`sori.wake_gate`'s; where frames come from and how time passes, `sori.pacing`'s (`replay`
in simulated real time, `pace` like a microphone, `hear` for the daemon's loop).

Early commit: while an utterance is open, the latest partial hypothesis is matched
against the presets. When it is a complete command (`match`, confidence at least
`CommitSettings.min_confidence`), its Korean sentence-final form is closed (`is_closed`)
and the endpointer has heard `silence_ms` of trailing silence, the intent is committed at
once (`IntentCommitted(early=True)`) instead of after the recognizer's final result. If
the final transcript then means something else, `IntentCorrected` follows. A hypothesis of
a recognizer's phrase-constrained pass (source "grammar", with an `lr_score`) has passed the
recognizer's likelihood-ratio test, which then stands in for the confidence floor.

Sori answers a committed command at once, often before the endpointer has heard the
pause that ends the utterance. Live, without echo cancellation, the voice detector then
hears the reply as more of the same utterance. So a committed turn ends where the gate's
echo says Sori began speaking (`WakeGate.sori_speaks`): its final transcript is the
command's, not the command followed by Sori's own words, and the wake detector listens
through the rest of the utterance for a phrase said over the reply (barge-in).

Streaming recognizers show a word only some way after it was spoken (vosk: up to its
chunk size plus the acoustic model's right context). So on the first silent frame of a
pause, when nothing can be committed yet, the pipeline asks the recognizer to catch up as
if `flush_ms` of silence had been heard (`RecognizerStream.flush`), and skips as much of
the real silence that follows; again (at most `flush_steps` times per pause) while the
partial is empty or an unclosed command. The flush thus runs while the silence gate is
still closed, and the commit usually comes on the frame that opens it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from sori.audio.format import AudioFrame
from sori.audio.ring import FrameRing
from sori.clock import Clock
from sori.events import (
    Event,
    IntentCommitted,
    IntentCorrected,
    IntentNotRecognized,
    SpeechStarted,
    SpeechStopped,
    TranscriptFinal,
    TranscriptPartial,
    UtteranceHeard,
)
from sori.intents.splitting import continues
from sori.stt.base import Hypothesis, RecognizerStream, SpeechRecognizer
from sori.vad import Endpointer, EndpointSettings, VoiceScorer
from sori.wake.base import WakeDetector
from sori.wake_gate import Gate, WakeGate

MS = 1_000_000


class Understanding(Protocol):
    """What the pipeline needs from preset understanding (`sori.intents.Presets`)."""

    def match(self, text: str) -> Any:
        """An IntentMatch-like result (intent, slots, confidence, response) or None."""
        ...

    def is_closed(self, text: str) -> bool:
        """True when `text` ends in a closed sentence-final form."""
        ...


@dataclass(frozen=True, slots=True)
class CommitSettings:
    """When a partial hypothesis may be acted on."""

    early: bool = True
    """Commit from partial hypotheses at all."""
    silence_ms: int = 40
    """Trailing silence the endpointer must have heard first, in milliseconds."""
    min_confidence: float = 0.9
    """Least preset match confidence for an early commit, in [0, 1]."""
    flush_steps: int = 2
    """How many times a pause may be flushed while no commit is possible yet."""
    flush_ms: int = 120
    """Silence fed to the recognizer ahead of time when a pause begins while the partial is
    empty or an unclosed command, in milliseconds, so a chunked decoder shows its hypothesis
    up to the end of speech at once; the same amount of real silence that follows is then
    not fed again. 0 = off."""


@dataclass
class _Turn:
    """Bookkeeping of one open utterance."""

    utterance_id: int
    stream: RecognizerStream
    speech_start_ns: int
    partial: str = ""
    hyp: Hypothesis | None = None
    """The hypothesis `partial` came from."""
    committed: IntentCommitted | None = None
    commit_t_ns: int | None = None
    commit_speech_end_ns: int | None = None
    """Where the trailing silence an early commit waited on began: the end of speech that
    commit follows (clock-comparable stream time)."""
    audio_ns: int = 0
    flushes: int = 0
    held: bool = False
    """A partial ended in a connective (켜고, 그리고, 이랑): no early commit in this
    utterance; the final transcript decides."""
    pad_credit_ns: int = 0
    busy_ns: dict[str, int] = field(default_factory=lambda: {"vad": 0, "stt": 0, "understand": 0})


class Hearing:
    """The synchronous core of the hearing pipeline (see the module docstring).

    With a wake detector and a gate (`sori.wake_gate`), the recognizer hears an utterance
    only when the gate is open as it begins, or from the end of a wake phrase that opens it
    (`WakeDetected`). Other utterances make only `SpeechStarted` and `SpeechStopped`. Muted
    (the gate says so), frames are dropped before the voice detector.
    """

    def __init__(
        self,
        scorer: VoiceScorer,
        recognizer: SpeechRecognizer,
        understanding: Understanding | None,
        *,
        clock: Clock,
        endpoint: EndpointSettings | None = None,
        commit: CommitSettings | None = None,
        origin_ns: int = 0,
        wake: WakeDetector | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.recognizer = recognizer
        """None: wake detection only (`sori wake`)."""
        self.wake = WakeGate(gate, wake, clock, origin_ns)
        """Mute and the wake phrase: which utterances the recognizer hears."""
        self.understanding = understanding
        self.clock = clock
        self.endpoint = endpoint or EndpointSettings()
        self.commit = commit or CommitSettings()
        self.origin_ns = origin_ns
        """Clock time of stream time 0; event audio times are shifted by it."""
        self.endpointer = Endpointer(scorer, self.endpoint, clock, origin_ns)
        self._ring = FrameRing(
            self.endpoint.pre_roll_ms + self.endpoint.start_ms, self.endpoint.frame_ms
        )
        self._turn: _Turn | None = None
        self._matches: dict[str, Any] = {}

    @property
    def in_speech(self) -> bool:
        return self._turn is not None

    @property
    def wake_busy_ns(self) -> int:
        """Processing time spent in the wake detector, in nanoseconds."""
        return self.wake.busy_ns

    def push(self, frame: AudioFrame) -> list[Event]:
        """Process one frame; the events it caused, in order."""
        if self.wake.muted:
            return self._drop()
        events: list[Event] = []
        started = time.perf_counter_ns()
        boundary = self.endpointer.push(frame)
        vad_ns = time.perf_counter_ns() - started
        if self._turn is None and not self.wake.listening:
            self._ring.push(frame)
            if isinstance(boundary, SpeechStarted):
                events.append(boundary)
                self._begin(boundary, self._ring.drain(), events)
                if self._turn is not None:
                    self._turn.busy_ns["vad"] += vad_ns
            elif isinstance(boundary, SpeechStopped):
                events.append(boundary)  # the end of an utterance Sori's answer cut short
            return events
        opened_now = False
        if self.wake.listening:
            before = self._turn
            self._hear_wake(frame, events)
            opened_now = self._turn is not None and self._turn is not before
        turn = self._turn
        if turn is not None:
            turn.busy_ns["vad"] += vad_ns
            if turn.committed is not None and self.wake.sori_speaks(frame):
                self._answered(frame, events)
            elif not opened_now:  # a turn opened by a wake phrase has had this frame
                self._continue(turn, frame, boundary, events)
        if isinstance(boundary, SpeechStopped):
            self._stopped(boundary, events)
        return events

    def _continue(self, turn: _Turn, frame: AudioFrame, boundary: Any, events: list[Event]) -> None:
        """One more frame of an open turn: feed it, commit early when possible."""
        if self.endpointer.trailing_silence_ns == 0 and not isinstance(boundary, SpeechStopped):
            turn.flushes, turn.pad_credit_ns = 0, 0  # voiced again: a new pause may flush
        if turn.pad_credit_ns >= frame.duration_ns:
            turn.pad_credit_ns -= frame.duration_ns  # already fed as padding
        else:
            self._feed(frame, events)
        self._check_early(events)
        if turn.committed is not None and turn.commit_speech_end_ns is None:
            silence_start = self.endpointer.silence_start_ns
            turn.commit_speech_end_ns = (
                silence_start if silence_start is not None else self.origin_ns + frame.end_ns
            )

    def end(self) -> list[Event]:
        """The audio ended: close an utterance still open."""
        events: list[Event] = []
        boundary = self.endpointer.end_of_stream()
        if boundary is not None and (self._turn is not None or self.wake.listening):
            self._stopped(boundary, events)
        return events

    def _stopped(self, boundary: SpeechStopped, events: list[Event]) -> None:
        """The utterance ended: the wake detector's part of it, then the turn's."""
        events.append(boundary)
        if self.wake.listening:
            found = self.wake.finish()
            if found is not None:
                events.append(found)  # nothing follows it
        if self._turn is not None:
            self._close(boundary.audio_end_ns, boundary.t_ns, events)

    def _answered(self, frame: AudioFrame, events: list[Event]) -> None:
        """Sori began answering the committed turn with `frame` while the utterance goes
        on: the turn ends here, and the rest of the utterance (Sori's voice, and perhaps a
        phrase said over it) is the wake detector's."""
        self._close(self.origin_ns + frame.start_ns, self.clock.now_ns(), events)
        self.wake.listen_again()

    # -- wake phrase and mute --------------------------------------------------------------

    def _begin(self, started: SpeechStarted, frames: list[AudioFrame], events: list[Event]) -> None:
        """An utterance began: the recognizer hears it when no wake phrase is needed (no
        detector, or the gate open); the detector, when there is one, hears it too."""
        if self.recognizer is not None and self.wake.hears(started.audio_start_ns):
            self._open(started.utterance_id, started.audio_start_ns)
            for buffered in frames:
                self._feed(buffered, events)
            self._check_early(events)
        if self.wake.gated and frames:
            self.wake.begin(started.utterance_id, frames[0])
            for buffered in frames:
                self._hear_wake(buffered, events)

    def _hear_wake(self, frame: AudioFrame, events: list[Event]) -> None:
        """A wake phrase opens the utterance: `WakeDetected`, then a fresh recognizer turn
        on the audio after the phrase (replacing any turn a window opened)."""
        woken = self.wake.feed(frame)
        if woken is None:
            return
        events.append(woken.event)
        if self.recognizer is None:
            return
        self._open(woken.event.utterance_id, woken.event.end_ns)
        for after in woken.after:
            self._feed(after, events)
        self._check_early(events)

    def _drop(self) -> list[Event]:
        """Muted: the frame is not heard; an utterance still open ends here."""
        events: list[Event] = []
        self._ring.drain()
        if self._turn is not None or self.wake.listening:
            boundary = self.endpointer.end_of_stream()
            if boundary is not None:
                events.append(boundary)
            self.wake.drop()
            if self._turn is not None and boundary is not None:
                self._close(boundary.audio_end_ns, boundary.t_ns, events)
            self._turn = None
        return events

    # -- one utterance ---------------------------------------------------------------------

    def _open(self, utterance_id: int, speech_start_ns: int) -> None:
        assert self.recognizer is not None
        self._matches.clear()
        t0 = time.perf_counter_ns()
        stream = self.recognizer.open_stream()
        self._turn = _Turn(utterance_id, stream, speech_start_ns)
        self._turn.busy_ns["stt"] += time.perf_counter_ns() - t0

    def _feed(self, frame: AudioFrame, events: list[Event]) -> None:
        turn = self._turn
        assert turn is not None
        t0 = time.perf_counter_ns()
        hyp = turn.stream.feed(frame.pcm)
        turn.busy_ns["stt"] += time.perf_counter_ns() - t0
        turn.audio_ns += frame.duration_ns
        self._show(turn, hyp, events)

    def _flush(self, turn: _Turn, events: list[Event]) -> None:
        t0 = time.perf_counter_ns()
        hyp = turn.stream.flush(self.commit.flush_ms)
        turn.busy_ns["stt"] += time.perf_counter_ns() - t0
        turn.audio_ns += self.commit.flush_ms * MS
        turn.pad_credit_ns += self.commit.flush_ms * MS
        self._show(turn, hyp, events)

    def _show(self, turn: _Turn, hyp: Hypothesis | None, events: list[Event]) -> None:
        """A new partial hypothesis becomes the turn's partial and a `TranscriptPartial`."""
        if hyp is not None and hyp.text != turn.partial:
            turn.partial, turn.hyp = hyp.text, hyp
            events.append(TranscriptPartial(self.clock.now_ns(), turn.utterance_id, hyp.text))

    def _match(self, turn: _Turn, text: str) -> tuple[Any, bool]:
        """(match or None, closed), cached per text within the utterance."""
        if self.understanding is None or not text:
            return None, False
        if text not in self._matches:
            t0 = time.perf_counter_ns()
            found = self.understanding.match(text)
            closed = found is not None and self.understanding.is_closed(text)
            turn.busy_ns["understand"] += time.perf_counter_ns() - t0
            self._matches[text] = (found, closed)
        return self._matches[text]

    def _check_early(self, events: list[Event]) -> None:
        turn = self._turn
        silence_ns = self.endpointer.trailing_silence_ns
        if turn is None or turn.committed is not None or not self.commit.early or not silence_ns:
            return
        found, closed = self._match(turn, turn.partial)
        # A pause began. Flush at once, so the hypothesis has caught up by the time the
        # silence gate opens: a closed command too, so "거실 불 켜" still becomes "거실 불
        # 켜고" when the decoder holds the ending back. Flush again only while the partial
        # is empty or a command whose closing word has not appeared.
        lagging = not turn.partial or (found is not None and not closed)
        if (
            self.commit.flush_ms
            and turn.flushes < self.commit.flush_steps
            and (turn.flushes == 0 or lagging)
        ):
            turn.flushes += 1
            self._flush(turn, events)
            found, closed = self._match(turn, turn.partial)
        if turn.held or continues(turn.partial):  # "거실 불 켜고 …": the final decides
            turn.held = True
            return
        if silence_ns < self.commit.silence_ms * MS or not turn.partial:
            return
        if found is None or not closed:
            return
        # A phrase-constrained hypothesis reaches here only when it passed the recognizer's
        # likelihood-ratio test, which stands in for the match-confidence floor: the text is
        # one of the phrases, and the ratio says the audio was that phrase.
        hyp = turn.hyp
        constrained = hyp is not None and hyp.source == "grammar" and hyp.lr_score is not None
        if found.confidence < self.commit.min_confidence and not constrained:
            return
        turn.committed = self._committed(
            turn, turn.partial, found, early=True, lr_score=hyp.lr_score if hyp else None
        )
        turn.commit_t_ns = turn.committed.t_ns
        events.append(turn.committed)

    def _committed(
        self, turn: _Turn, text: str, found: Any, early: bool, lr_score: float | None = None
    ) -> IntentCommitted:
        return IntentCommitted(
            self.clock.now_ns(),
            turn.utterance_id,
            text,
            found.intent,
            dict(found.slots),
            float(found.confidence),
            found.response,
            early,
            lr_score,
        )

    def _close(self, audio_end_ns: int, stopped_t_ns: int, events: list[Event]) -> None:
        """The turn ends: its audio reached `audio_end_ns` (clock-comparable stream time),
        and the endpointer (or Sori's answer) ended it at clock time `stopped_t_ns`."""
        turn = self._turn
        assert turn is not None
        self._turn = None
        t0 = time.perf_counter_ns()
        final = turn.stream.finalize()
        turn.busy_ns["stt"] += time.perf_counter_ns() - t0
        final_event = TranscriptFinal(
            self.clock.now_ns(), turn.utterance_id, final.text, final.confidence, final.lr_score
        )
        events.append(final_event)
        found, _ = self._match(turn, final.text)
        previous = turn.committed
        # The end of speech the standing commit follows: for an early commit, where the
        # silence it waited on began (noise heard later may keep the utterance open past
        # the commit); for a commit on the final result, the utterance's end.
        speech_end_ns = audio_end_ns
        if previous is not None:
            same = found is not None and (found.intent, dict(found.slots)) == (
                previous.intent,
                previous.slots,
            )
            if same and turn.commit_speech_end_ns is not None:
                speech_end_ns = min(turn.commit_speech_end_ns, audio_end_ns)
            if not same:
                replacement = (
                    self._committed(turn, final.text, found, False, final.lr_score)
                    if found
                    else None
                )
                events.append(
                    IntentCorrected(self.clock.now_ns(), turn.utterance_id, previous, replacement)
                )
                turn.commit_t_ns = replacement.t_ns if replacement else None
        elif found is not None:
            committed = self._committed(turn, final.text, found, False, final.lr_score)
            turn.commit_t_ns = committed.t_ns
            events.append(committed)
        else:
            events.append(IntentNotRecognized(self.clock.now_ns(), turn.utterance_id, final.text))
        events.append(
            UtteranceHeard(
                self.clock.now_ns(),
                turn.utterance_id,
                final.text,
                turn.speech_start_ns,
                speech_end_ns,
                stopped_t_ns,
                final_event.t_ns,
                turn.commit_t_ns,
                {**turn.busy_ns, "audio": turn.audio_ns},
                final.lr_score,
            )
        )
