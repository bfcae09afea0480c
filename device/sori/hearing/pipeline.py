"""The hearing pipeline: audio frames → VAD/endpointer → speech-to-text → early commit.

`Hearing` is the synchronous core. Push one frame, get the events it caused:

    hearing = Hearing(scorer, recognizer, presets, clock=clock)
    for frame in source.frames():
        for event in hearing.push(frame):
            ...                                   # SpeechStarted, TranscriptPartial, ...
    events = hearing.end()                        # closes an utterance still open

It knows only protocols: a `VoiceScorer` (sori.hearing.vad), a `SpeechRecognizer`
(sori.hearing.stt.base) and an `Understanding` (anything with `match(text)` and
`is_closed(text)`, such as `sori.understanding.intents.Presets`). Which utterances reach the
recognizer (mute, the wake phrase) is `sori.hearing.wake_gate`'s; where frames come from and
how time passes, `sori.hearing.pacing`'s (`replay` in simulated real time, `pace` like a
microphone, `hear` for the daemon's loop).

Early commit: while an utterance is open, the latest partial hypothesis may already commit
to an intent (`IntentCommitted(early=True)`), before the recognizer's final result; if the
final transcript then means something else, `IntentCorrected` follows. Which intent, and
when, is `sori.hearing.committing`'s.

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

With a microphone array the beam (`Steering`) has a say too: a frame that does not stand
clear of a television the beam knows is no voice to the endpointer, and when a louder
talker takes the beam over within an utterance, the utterance ends where their voice
began and theirs opens there (`TAKEOVER_MARGIN_MS` before).
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from typing import Any, Protocol

from sori.core.clock import Clock
from sori.core.events import (
    Event,
    SpeechStarted,
    SpeechStopped,
    TranscriptFinal,
    TranscriptPartial,
    UtteranceHeard,
)
from sori.hearing.audio.denoise_decision import (
    DECISION_SPEECH_MS,
    SILENCE_DBFS,
    DenoiseDecision,
    heard_estimate,
)
from sori.hearing.audio.format import AudioFrame, pcm_duration_ns
from sori.hearing.audio.ring import FrameRing
from sori.hearing.committing import CommitSettings, Committer, Turn, Understanding
from sori.hearing.stt.base import Hypothesis, SpeechRecognizer
from sori.hearing.stt.tokens import spoken_text
from sori.hearing.vad import Endpointer, EndpointSettings, VoiceScorer, is_quiet
from sori.hearing.wake.base import WakeDetector
from sori.hearing.wake_gate import Gate, WakeGate, Woken

MS = 1_000_000
QUIET_HOLD_MS = 60
"""How long quiet frames may wait for the recognizer (`Hearing._feed`): as long as
Silero's score still calls voice after the speech ended (up to 60 ms), so that where a
pause begins they have not been decoded yet."""


TAKEOVER_LOOKBACK_MS = 1800
"""How far back the utterance of a talker who took an array's beam over may begin, before
the frame the beam turned on: the beam looks 1.5 s back for where their voice began
(sori.hearing.audio.takeover)."""
TAKEOVER_MARGIN_MS = 150
"""Audio kept before where the new voice was found to begin: its first consonant is
quieter than what made the beam sure, and a word cut at its start is a word lost."""


class Steering(Protocol):
    """A microphone array's beam, which the voice detector steers
    (sori.hearing.audio.front_end.ArrayFrontEnd)."""

    direction_deg: float | None
    """Direction of the current utterance's talker, in degrees; None before any."""
    clear: bool
    """Whether the frame just beamed stands clear of a standing source (a television)
    the beam knows; True while none stands. The voice detector hears only such frames."""
    takeovers: int
    """How many times a louder talker elsewhere took the held beam over."""
    takeover_lag_s: float
    """How long before the frame just beamed the last takeover's talker began."""
    holds: int
    """How many times the beam was held on an utterance's talker."""

    def heard(self, voiced: bool, in_speech: bool) -> None:
        """The detector's verdict on the frame just scored."""
        ...

    def rebeam(self, samples: int) -> bytes:
        """The last `samples` samples of the stream (s16le) as the beam points now; fewer
        when it keeps less."""
        ...


class Hearing:
    """The synchronous core of the hearing pipeline (see the module docstring).

    With a wake detector and a gate (`sori.hearing.wake_gate`), the recognizer hears an utterance
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
        steering: Steering | None = None,
        denoise: DenoiseDecision | None = None,
    ) -> None:
        self.recognizer = recognizer
        """None: wake detection only (`sori wake`)."""
        self.steering = steering
        """The array's beam, told what the voice detector hears; None with one microphone."""
        self.wake = WakeGate(gate, wake, clock, origin_ns)
        """Mute and the wake phrase: which utterances the recognizer hears."""
        self.denoise = denoise
        """`audio.denoise = "auto"`: each utterance heard raw or denoised, one decision for
        the recognizer and the wake detector (sori.hearing.audio.denoise_decision)."""
        self.commits = Committer(understanding, commit or CommitSettings(), clock)
        """Which intent each turn's words commit to, and when."""
        self.clock = clock
        self.endpoint = endpoint or EndpointSettings()
        self.origin_ns = origin_ns
        """Clock time of stream time 0; event audio times are shifted by it."""
        self.endpointer = Endpointer(scorer, self.endpoint, clock, origin_ns)
        self._ring = FrameRing(
            self.endpoint.pre_roll_ms + self.endpoint.start_ms, self.endpoint.frame_ms
        )
        self._takeovers = 0
        self._holds = 0
        self._held_now = False
        """The array's beam was held on a talker on the frame being pushed: what was heard
        of their utterance so far went through the beam before, and is beamed again."""
        self._heard_from_ns: int | None = None
        """Stream time of the first frame the open turn's recognizer heard, where `_begin`
        opened it; None otherwise."""
        self._lookback: deque[AudioFrame] = deque(
            maxlen=TAKEOVER_LOOKBACK_MS // self.endpoint.frame_ms
        )
        """An array's last frames, for the utterance of a talker who takes the beam over."""
        self._turn: Turn | None = None
        self._snr_db: float | None = None
        """How far the open utterance's speech stood above the room, in dB, as it began
        (`_begin`): what its turns ask of a command heard in noise; None when unknown."""
        self._room_dbfs = SILENCE_DBFS
        """The room's level before the latest utterance that had a room to measure
        (`heard_estimate`), in dBFS: what a wake phrase's `snr_db` stands above."""
        self._deciding: tuple[SpeechStarted, list[AudioFrame], int] | None = None
        """An utterance begun whose denoise decision waits for `DECISION_SPEECH_MS` of its
        speech: its start, its frames so far (raw), and how many of them the ring held."""

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
        audible = self.steering is None or self.steering.clear
        boundary = self.endpointer.push(frame, audible)
        vad_ns = time.perf_counter_ns() - started
        if self.steering is not None:
            boundary = self._steer(boundary)
            self._lookback.append(frame)
            if self._taken_over(boundary):
                return self._split(frame, events)
            self._held_now, self._holds = self.steering.holds != self._holds, self.steering.holds
            if self._held_now and boundary is None and self._hear_again(events):
                return events
        if self._deciding is not None:
            self._decide_later(frame, boundary, events)
            return events
        if self._turn is None and not self.wake.listening:
            self._ring.push(frame)
            if isinstance(boundary, SpeechStarted):
                events.append(boundary)
                ring = self._ring.drain()
                if self._held_now:
                    ring = self._rebeamed(ring)
                if self._waits_to_decide(boundary, ring):
                    self._deciding = (boundary, ring, len(ring))
                    return events
                self._begin(boundary, ring, events)
                if self._turn is not None:
                    self._turn.busy_ns["vad"] += vad_ns
            elif isinstance(boundary, SpeechStopped):
                events.append(boundary)  # the end of an utterance Sori's answer cut short
            return events
        if self.denoise is not None:
            frame = self.denoise.hear(frame)  # the VAD heard it raw; its listeners, as decided
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

    def _steer(self, boundary: Any) -> Any:
        """Tell the array's beam what the voice detector heard; a start carries the
        talker's direction, which the beam finds as the utterance opens."""
        assert self.steering is not None
        state = self.endpointer.state
        voiced = state.silence_ns == 0 if state.in_speech else state.voiced_run_ns > 0
        self.steering.heard(voiced, state.in_speech)
        if isinstance(boundary, SpeechStarted):
            return dataclasses.replace(boundary, doa_deg=self.steering.direction_deg)
        return boundary

    def _taken_over(self, boundary: Any) -> bool:
        """Whether a louder talker took the array's beam over within an open utterance
        (and nothing else happens to it on this frame)."""
        assert self.steering is not None
        seen, self._takeovers = self._takeovers, self.steering.takeovers
        return (
            seen != self._takeovers and boundary is None and self._deciding is None
            and self.endpointer.state.in_speech
        )  # fmt: skip

    def _split(self, frame: AudioFrame, events: list[Event]) -> list[Event]:
        """The array turned to a louder talker: the utterance so far was someone else's (a
        television that was on when it began) and ends where the new voice began,
        committing nothing and asking for no answer (a commit made before stands); the new
        talker's opens there, with the frames since, beamed again towards them."""
        assert self.steering is not None
        lag_ns = int(self.steering.takeover_lag_s * 1e9) + TAKEOVER_MARGIN_MS * MS
        at_ns = max(
            self._lookback[0].start_ns,
            self.endpointer.state.speech_start_ns,
            frame.end_ns - lag_ns,
        )
        stopped, started = self.endpointer.split(at_ns)
        if self._turn is not None or self.wake.listening:
            self._stopped(stopped, events, taken_over=True)
        else:
            events.append(stopped)
        started = dataclasses.replace(started, doa_deg=self.steering.direction_deg)
        events.append(started)
        frames = self._rebeamed([frame for frame in self._lookback if frame.start_ns >= at_ns])
        if self._waits_to_decide(started, frames):
            self._deciding = (started, frames, len(frames))
        else:
            self._begin(started, frames, events)
        return events

    def _rebeamed(self, frames: list[AudioFrame]) -> list[AudioFrame]:
        """The array's last `frames` as its beam, turned to a new talker or held on one,
        hears them now: until then they went through the beam before. Frames older than
        the beam keeps stay as they were."""
        assert self.steering is not None
        again = self.steering.rebeam(sum(frame.samples for frame in frames))
        out, end = list(frames), len(again)
        for k in range(len(out) - 1, -1, -1):
            start = end - len(out[k].pcm)
            if start < 0:
                break
            out[k] = dataclasses.replace(out[k], pcm=again[start:end])
            end = start
        return out

    def _hear_again(self, events: list[Event]) -> bool:
        """The array's beam was just held on the open turn's talker: the recognizer heard
        them so far through the beam before (between utterances, the first microphone or
        straight up with a television's null). It hears the turn again, from a fresh
        stream, with the frames since its first beamed as the beam is held now, this one
        included; unless the turn committed, is denoised, is the wake detector's too, or
        began before the frames kept. Whether it did."""
        turn = self._turn
        if (
            turn is None or turn.committed is not None or self._heard_from_ns is None
            or self.wake.listening or (self.denoise is not None and self.denoise.denoising)
        ):  # fmt: skip
            return False
        frames = [frame for frame in self._lookback if frame.start_ns >= self._heard_from_ns]
        if not frames or frames[0].start_ns != self._heard_from_ns:
            return False
        t0 = time.perf_counter_ns()
        turn.stream.finalize()  # frees the decoders: its words are heard again
        busy = turn.busy_ns
        busy["stt"] += time.perf_counter_ns() - t0
        self._open(turn.utterance_id, turn.speech_start_ns)
        assert self._turn is not None
        for stage, ns in busy.items():
            self._turn.busy_ns[stage] += ns
        for again in self._rebeamed(frames):
            self._feed(again, events)
        self._check_early(events)
        return True

    def _continue(self, turn: Turn, frame: AudioFrame, boundary: Any, events: list[Event]) -> None:
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
        if self._deciding is not None:
            self._release(events)
        if boundary is not None and (self._turn is not None or self.wake.listening):
            self._stopped(boundary, events)
        return events

    def _stopped(
        self, boundary: SpeechStopped, events: list[Event], taken_over: bool = False
    ) -> None:
        """The utterance ended: the wake detector's part of it, then the turn's (which
        commits nothing when another talker `taken_over` it)."""
        events.append(boundary)
        if self.wake.listening:  # nothing follows a phrase found now; after a takeover, a
            # phrase from where the new talker began is heard again in their utterance
            events.extend(self.wake.finish(boundary.audio_end_ns if taken_over else None))
        if self._turn is not None:
            self._close(boundary.audio_end_ns, boundary.t_ns, events, taken_over)
        if self.denoise is not None:
            self.denoise.end()

    def _answered(self, frame: AudioFrame, events: list[Event]) -> None:
        """Sori began answering the committed turn with `frame` while the utterance goes
        on: the turn ends here, and the rest of the utterance (Sori's voice, and perhaps a
        phrase said over it) is the wake detector's."""
        self._close(self.origin_ns + frame.start_ns, self.clock.now_ns(), events)
        self.wake.listen_again()

    # -- wake phrase and mute --------------------------------------------------------------

    def _begin(
        self, started: SpeechStarted, frames: list[AudioFrame], events: list[Event], held: int = 0
    ) -> None:
        """An utterance began: the recognizer hears it when no wake phrase is needed (no
        detector, or the gate open); the detector, when there is one, hears it too. The
        last `held` of `frames` followed the ring (`_decide_later`)."""
        heard = self.recognizer is not None and self.wake.hears(started.audio_start_ns)
        self._snr_db = self._measure_room(frames, held)
        if self._denoise_decides(heard, frames):
            frames = self._decide_denoise(frames, held)
        if heard:
            self._open(started.utterance_id, started.audio_start_ns)
            self._heard_from_ns = frames[0].start_ns if frames else None
            for buffered in frames:
                self._feed(buffered, events)
            self._check_early(events)
        if self.wake.gated and frames:
            self.wake.begin(started.utterance_id, frames[0], self._room_dbfs)
            woken = False
            for buffered in frames:
                before = self._turn
                self._hear_wake(buffered, events)
                if woken:  # the phrase ended within the held frames: the rest are the command
                    self._feed(buffered, events)
                woken = woken or self._turn is not before
            if woken:
                self._check_early(events)

    def _denoise_decides(self, heard: bool, frames: list[AudioFrame]) -> bool:
        """Whether the utterance needs a denoise decision: someone listens to it (the
        recognizer from its start, or the wake detector where `wake.denoise` is "auto")."""
        if self.denoise is None:
            return False
        return heard or (self.wake.gated and bool(frames) and self.denoise.with_wake)

    def _waits_to_decide(self, started: SpeechStarted, ring: list[AudioFrame]) -> bool:
        """Whether the denoise decision waits for more of the speech: it is to be made, and
        Sori is silent (over Sori's voice the last decision is kept, at once)."""
        heard = self.recognizer is not None and self.wake.hears(started.audio_start_ns)
        return (
            DECISION_SPEECH_MS > 0
            and self._denoise_decides(heard, ring)
            and not any(self.wake.sori_speaks(frame) for frame in ring)
        )

    def _decide_later(self, frame: AudioFrame, boundary: Any, events: list[Event]) -> None:
        """One more frame of an utterance whose decision waits: once `DECISION_SPEECH_MS`
        of speech followed the ring, or the utterance ended, decide and let its listeners
        hear it all at once (the recognizer catches up on it in one go)."""
        assert self._deciding is not None
        _, frames, ring = self._deciding
        frames.append(frame)
        if self._held_now:
            frames[:] = self._rebeamed(frames)
        stopped = isinstance(boundary, SpeechStopped)
        if not stopped and (len(frames) - ring) * self.endpoint.frame_ms < DECISION_SPEECH_MS:
            return
        self._release(events)
        if stopped:
            if self._turn is not None or self.wake.listening:
                self._stopped(boundary, events)
            else:
                events.append(boundary)

    def _release(self, events: list[Event]) -> None:
        assert self._deciding is not None
        started, frames, ring = self._deciding
        self._deciding = None
        self._begin(started, frames, events, held=len(frames) - ring)

    def _measure_room(self, frames: list[AudioFrame], held: int) -> float | None:
        """The SNR of an utterance beginning with `frames` (the ring, then `held` frames),
        as the denoise decision measures it; None over Sori's voice, where the room is
        not what the pre-roll holds. The room's level is kept (`_room_dbfs`) all the same:
        a speaker that talks hears its user worse."""
        heard = heard_estimate(frames, self.endpoint.start_ms // self.endpoint.frame_ms + held)
        if heard is None:
            return None
        self._room_dbfs = heard.room_dbfs
        if any(self.wake.sori_speaks(frame) for frame in frames):
            return None
        return heard.snr_db

    def _decide_denoise(self, frames: list[AudioFrame], held: int) -> list[AudioFrame]:
        """The utterance's one denoise decision: on the ring (the pre-roll, then the onset
        the VAD started on) and the `held` frames after it; `frames` as its listeners hear
        them."""
        assert self.denoise is not None
        onset = self.endpoint.start_ms // self.endpoint.frame_ms + held
        sori_speaks = any(self.wake.sori_speaks(frame) for frame in frames)
        return self.denoise.begin(frames, onset, sori_speaks)

    def _hear_wake(self, frame: AudioFrame, events: list[Event]) -> None:
        """A wake phrase opens the utterance: `WakeDetected`, then a fresh recognizer turn
        on the audio after the phrase (replacing any turn a window opened). One heard over
        Sori's voice is `WakeHeard` first (sori.hearing.wake_gate)."""
        woken = None
        for heard in self.wake.feed(frame):
            if isinstance(heard, Woken):
                woken = heard
            else:
                events.append(heard)
        if woken is None:
            return
        if not woken.again:
            events.append(woken.event)
        if self.recognizer is None:
            return
        self._open(woken.event.utterance_id, woken.event.end_ns)
        command = woken.after
        if self.denoise is not None and self.wake.sori_speaks(frame):
            command = self.denoise.over_sori(command)  # Sori's voice masks it
        for after in command:
            self._feed(after, events)
        self._check_early(events)

    def _drop(self) -> list[Event]:
        """Muted: the frame is not heard; an utterance still open ends here."""
        events: list[Event] = []
        self._ring.drain()
        self._deciding = None
        if self.denoise is not None:
            self.denoise.end()
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
        self.commits.begin()
        t0 = time.perf_counter_ns()
        stream = self.recognizer.open_stream(self._snr_db)
        self._turn = Turn(utterance_id, stream, speech_start_ns)
        self._turn.busy_ns["stt"] += time.perf_counter_ns() - t0

    def _feed(self, frame: AudioFrame, events: list[Event]) -> None:
        """`frame` for the recognizer. When pauses are flushed, the last `QUIET_HOLD_MS`
        of quiet frames (no louder than the room) wait for what follows them: should a
        pause be flushed there, the recognizer is cut before them (`_flush`)."""
        turn = self._turn
        assert turn is not None
        if not self.commits.settings.flush_ms:
            self._hear(turn, frame.pcm, events)
        elif is_quiet(frame.pcm, self.endpointer.floor_db):
            turn.quiet.append(frame)
            while sum(waiting.duration_ns for waiting in turn.quiet) > QUIET_HOLD_MS * MS:
                self._hear(turn, turn.quiet.popleft().pcm, events)
        else:
            self._hear_quiet(turn, events)
            self._hear(turn, frame.pcm, events)

    def _hear(self, turn: Turn, pcm: bytes, events: list[Event]) -> None:
        t0 = time.perf_counter_ns()
        hyp = turn.stream.feed(pcm)
        turn.busy_ns["stt"] += time.perf_counter_ns() - t0
        turn.audio_ns += pcm_duration_ns(pcm)
        self._show(turn, hyp, events)

    def _hear_quiet(self, turn: Turn, events: list[Event]) -> None:
        """The recognizer hears the quiet frames that waited."""
        if turn.quiet:
            self._hear(turn, taken_quiet(turn), events)

    def _flush(self, turn: Turn, events: list[Event]) -> None:
        """A pause: the recognizer is cut where the speech ended, before the quiet frames
        that waited (the voice detector's score trails the speech by a few frames), and
        hears them, and as much silence as makes `flush_ms`, after the cut. A cut right at
        the end of speech costs vosk half as much as one 40 ms into the silence, most of
        all the first time it hears the words (docs/benchmarks.md)."""
        t0 = time.perf_counter_ns()
        after = taken_quiet(turn)
        held = self.denoise.drain() if self.denoise is not None else b""
        if held and not after:  # the denoiser's last few ms of speech, before the cut
            self._hear(turn, held, events)
        else:
            after += held  # later than the quiet frames
        flush_ms = self.commits.settings.flush_ms
        hyp = turn.stream.flush(flush_ms, after)
        turn.busy_ns["stt"] += time.perf_counter_ns() - t0
        after_ns = pcm_duration_ns(after)
        padded_ns = max(flush_ms * MS, after_ns)
        turn.audio_ns += padded_ns
        turn.pad_credit_ns += padded_ns - after_ns
        self._show(turn, hyp, events)

    def _show(self, turn: Turn, hyp: Hypothesis | None, events: list[Event]) -> None:
        """A new partial hypothesis becomes the turn's partial and a `TranscriptPartial`."""
        if hyp is not None and hyp.text != turn.partial:
            turn.partial, turn.hyp = hyp.text, hyp
            events.append(TranscriptPartial(self.clock.now_ns(), turn.utterance_id, hyp.text))

    def _check_early(self, events: list[Event]) -> None:
        """In a pause: flush it through the recognizer when the committer wants that, then
        commit early when the partial allows (sori.hearing.committing)."""
        turn = self._turn
        silence_ns = self.endpointer.trailing_silence_ns
        early = self.commits.settings.early
        if turn is None or turn.committed is not None or not early or not silence_ns:
            return
        if not self._voiced_since_open(turn):
            return  # a wake phrase opened it in this pause: its command has not begun
        if self.commits.wants_flush(turn):
            turn.flushes += 1
            self._flush(turn, events)
        committed = self.commits.early(turn, silence_ns)
        if committed is not None:
            turn.committed, turn.commit_t_ns = committed, committed.t_ns
            events.append(committed)

    def _voiced_since_open(self, turn: Turn) -> bool:
        """Whether the trailing silence began at least a voice onset (`start_ms`) after
        the turn's audio did. A turn a wake phrase opened starts at the phrase's end,
        often in the breath before the command: flushing that pause would have the
        recognizer transcribe the phrase's tail as words of their own."""
        began = self.endpointer.silence_start_ns
        return began is None or began - turn.speech_start_ns >= self.endpoint.start_ms * MS

    def _close(
        self, audio_end_ns: int, stopped_t_ns: int, events: list[Event], taken_over: bool = False
    ) -> None:
        """The turn ends: its audio reached `audio_end_ns` (clock-comparable stream time),
        and the endpointer (or Sori's answer, or a talker who took the array's beam over)
        ended it at clock time `stopped_t_ns`."""
        turn = self._turn
        assert turn is not None
        self._turn = self._heard_from_ns = None
        self._hear_quiet(turn, events)
        t0 = time.perf_counter_ns()
        final = turn.stream.finalize()
        turn.busy_ns["stt"] += time.perf_counter_ns() - t0
        said = spoken_text(final.text)  # "[3] 월" → "3 월": the recognizer's marks out
        final_event = TranscriptFinal(
            self.clock.now_ns(), turn.utterance_id, said, final.confidence, final.lr_score
        )
        events.append(final_event)
        if taken_over:  # someone else's words (a television's) mixed with the talker's
            commits: list[Event] = []
            speech_end_ns = max(audio_end_ns, turn.speech_start_ns)  # a wake phrase may
            # have opened the turn after where the talker who took it over began
        else:
            commits, speech_end_ns = self.commits.final(turn, final, audio_end_ns)
        events += commits
        events.append(
            UtteranceHeard(
                self.clock.now_ns(),
                turn.utterance_id,
                said,
                turn.speech_start_ns,
                speech_end_ns,
                stopped_t_ns,
                final_event.t_ns,
                turn.commit_t_ns,
                {**turn.busy_ns, "audio": turn.audio_ns},
                final.lr_score,
                None if self.steering is None else self.steering.direction_deg,
                final.source == "grammar" and bool(final.text),
            )
        )


def taken_quiet(turn: Turn) -> bytes:
    """The quiet frames that waited for the recognizer, as one piece; none wait after."""
    pcm = b"".join(frame.pcm for frame in turn.quiet)
    turn.quiet.clear()
    return pcm
