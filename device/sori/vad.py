"""Voice activity: a confidence backend per frame, and a pure endpointing state machine.

    score = scorer.score(frame.pcm)                     # backend: webrtcvad, 0.0 or 1.0
    state, decision = endpoint_step(state, settings, score >= settings.threshold, t0, t1)

An utterance starts after `start_ms` of consecutive voiced frames (its start is the first
of them) and stops after `stop_ms` of trailing silence (its end is the end of the last
voiced frame). `Endpointer` wraps both and turns decisions into `SpeechStarted` and
`SpeechStopped` events stamped by the clock.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Literal, Protocol

from sori.audio.format import RATE_HZ, AudioFrame, check_frame_ms
from sori.clock import Clock
from sori.errors import AudioError, ConfigError, DependencyError
from sori.events import SpeechStarted, SpeechStopped

log = logging.getLogger(__name__)

MS = 1_000_000


class VoiceScorer(Protocol):
    """The model: how likely one frame of pipeline PCM is speech, in [0, 1]."""

    def score(self, pcm: bytes) -> float: ...


class WebrtcScorer:
    """webrtcvad (from the webrtcvad-wheels package): a hard 0/1 decision per frame."""

    def __init__(self, aggressiveness: int = 2) -> None:
        if aggressiveness not in (0, 1, 2, 3):
            raise ConfigError(f"vad.aggressiveness must be 0, 1, 2 or 3, got {aggressiveness}")
        try:
            import webrtcvad
        except ImportError:
            raise DependencyError("VAD needs webrtcvad: pip install webrtcvad-wheels") from None
        self._vad = webrtcvad.Vad(aggressiveness)

    def score(self, pcm: bytes) -> float:
        try:
            return 1.0 if self._vad.is_speech(pcm, RATE_HZ) else 0.0
        except Exception as exc:  # webrtcvad raises a bare Error on a bad frame length
            raise AudioError(f"webrtcvad rejected a {len(pcm)}-byte frame: {exc}") from None


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    """Hysteresis of the endpointer."""

    frame_ms: int = 20
    """Frame length, in milliseconds."""
    start_ms: int = 60
    """Consecutive voiced audio that starts an utterance, in milliseconds."""
    stop_ms: int = 500
    """Trailing silence that ends an utterance, in milliseconds."""
    pre_roll_ms: int = 300
    """Audio before the first voiced frame handed to the recognizer, in milliseconds."""
    max_utterance_ms: int = 20_000
    """An utterance is cut after this long, in milliseconds."""
    threshold: float = 0.5
    """A frame whose score reaches this is voiced."""

    def __post_init__(self) -> None:
        check_frame_ms(self.frame_ms)
        for name in ("start_ms", "stop_ms", "max_utterance_ms"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"vad.{name} must be positive, got {getattr(self, name)}")
        if self.pre_roll_ms < 0:
            raise ConfigError(f"vad.pre_roll_ms must not be negative, got {self.pre_roll_ms}")


@dataclass(frozen=True, slots=True)
class EndpointState:
    """Where the endpointer stands; stream times in nanoseconds."""

    in_speech: bool = False
    """True between a start and a stop."""
    voiced_run_ns: int = 0
    """Length of the current run of voiced frames."""
    run_start_ns: int = 0
    """Start of the current run of voiced frames."""
    silence_ns: int = 0
    """Trailing silence since the last voiced frame (in speech only)."""
    speech_start_ns: int = 0
    """Start of the current utterance."""
    last_voiced_end_ns: int = 0
    """End of the last voiced frame of the current utterance."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A boundary the endpointer found."""

    kind: Literal["start", "stop"]
    """Which boundary."""
    audio_ns: int
    """Stream time of the boundary: first voiced sample, or end of the last voiced frame."""


def endpoint_step(
    state: EndpointState, settings: EndpointSettings, voiced: bool, start_ns: int, end_ns: int
) -> tuple[EndpointState, Decision | None]:
    """One frame of hysteresis; pure."""
    if not state.in_speech:
        if not voiced:
            return dataclasses.replace(state, voiced_run_ns=0), None
        run_start = state.run_start_ns if state.voiced_run_ns else start_ns
        run = state.voiced_run_ns + (end_ns - start_ns)
        if run >= settings.start_ms * MS:
            started = EndpointState(True, run, run_start, 0, run_start, end_ns)
            return started, Decision("start", run_start)
        return dataclasses.replace(state, voiced_run_ns=run, run_start_ns=run_start), None
    if end_ns - state.speech_start_ns >= settings.max_utterance_ms * MS:
        end = end_ns if voiced else state.last_voiced_end_ns
        return EndpointState(), Decision("stop", end)
    if voiced:
        return dataclasses.replace(state, silence_ns=0, last_voiced_end_ns=end_ns), None
    silence = state.silence_ns + (end_ns - start_ns)
    if silence >= settings.stop_ms * MS:
        return EndpointState(), Decision("stop", state.last_voiced_end_ns)
    return dataclasses.replace(state, silence_ns=silence), None


class Endpointer:
    """Scores frames and emits `SpeechStarted` / `SpeechStopped` stamped by `clock`.

    Stream times in the events are offset by `origin_ns`, the clock time of stream time 0,
    so they can be compared with event times (0 for a replay).
    """

    def __init__(
        self, scorer: VoiceScorer, settings: EndpointSettings, clock: Clock, origin_ns: int = 0
    ) -> None:
        self.scorer = scorer
        self.settings = settings
        self.clock = clock
        self.origin_ns = origin_ns
        self.state = EndpointState()
        self.utterance_id = -1
        """Id of the current or last utterance; -1 before the first."""

    @property
    def trailing_silence_ns(self) -> int:
        return self.state.silence_ns if self.state.in_speech else 0

    def push(self, frame: AudioFrame) -> SpeechStarted | SpeechStopped | None:
        voiced = self.scorer.score(frame.pcm) >= self.settings.threshold
        self.state, decision = endpoint_step(
            self.state, self.settings, voiced, frame.start_ns, frame.end_ns
        )
        if decision is None:
            return None
        if decision.kind == "start":
            self.utterance_id += 1
            return SpeechStarted(
                self.clock.now_ns(), self.utterance_id, self.origin_ns + decision.audio_ns
            )
        return SpeechStopped(
            self.clock.now_ns(), self.utterance_id, self.origin_ns + decision.audio_ns
        )

    def end_of_stream(self) -> SpeechStopped | None:
        """Close an utterance still open when the audio ends."""
        if not self.state.in_speech:
            return None
        last = self.state.last_voiced_end_ns
        self.state = EndpointState()
        return SpeechStopped(self.clock.now_ns(), self.utterance_id, self.origin_ns + last)
