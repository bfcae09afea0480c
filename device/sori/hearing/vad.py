"""Voice activity: a confidence backend per frame, and a pure endpointing state machine.

    score = scorer.score(frame.pcm)                 # Silero: a probability; webrtcvad: 0 or 1
    energy = band_energy_db(frame.pcm)              # for the noise floor
    state, decision = endpoint_step(state, settings, score, energy, t0, t1)

A frame counts as voice when its score clears a threshold and its energy clears the noise
floor by `noise_margin_db`. Hysteresis: a run of voice starts only on frames scoring at
least `start_threshold`, and continues on frames scoring at least the lower `stop_threshold`.
An utterance starts after `start_ms` of such a run (its start is the run's first frame;
shorter bursts, such as the blip a microphone makes when it opens, never become turns) and
stops after `stop_ms` of trailing silence (its end is the end of the last voiced frame).
The first `noise_window_ms` of a stream measure the room: nothing starts before (a voiced
run that goes on past it starts then, at the run's first frame).

The noise floor follows stationary sound: whenever the last `noise_window_ms` of frame
energies lie within `noise_band_db` of each other, the floor is set to their loudest; a
frame far below the floor pulls it down at once. Speech never stays that steady for long,
but hum, fans and hiss do, so they stop counting as voice within `noise_window_ms` of
starting, even in the middle of an utterance: noise that follows speech closes it, and
noise that resumes after a digital silence splits two commands instead of joining them.
Energies are taken after pre-emphasis (a first difference), which weighs the speech band
and makes hum, rumble and brown noise steadier still.

`Endpointer` wraps scorer, energy and state, and turns decisions into `SpeechStarted` and
`SpeechStopped` events stamped by the clock.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from sori.core.clock import Clock
from sori.core.errors import AudioError, ConfigError, DependencyError
from sori.core.events import SpeechStarted, SpeechStopped
from sori.hearing.audio.format import RATE_HZ, AudioFrame, check_frame_ms

log = logging.getLogger(__name__)

MS = 1_000_000
BACKENDS = ("silero", "webrtc")
"""Voice scorers `vad.backend` may name."""
SILENCE_DB = -100.0
"""Energy of digital silence, in dBFS (the floor of `band_energy_db`)."""


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


def silero_model_path() -> Path:
    """The ONNX model shipped in the `silero-vad` package, found without importing the
    package (its `__init__` imports torch, which the runtime does not need)."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise DependencyError(
            "vad.backend = 'silero' needs the silero-vad package: "
            "pip install --no-deps silero-vad (or set vad.backend = 'webrtc')"
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / "silero_vad.onnx"
        if path.is_file():
            return path
    raise DependencyError(
        "the silero-vad package has no data/silero_vad.onnx: reinstall it "
        "(pip install --force-reinstall --no-deps silero-vad) or set vad.backend = 'webrtc'"
    )


class SileroScorer:
    """Silero VAD v5 (ONNX, run by onnxruntime): a speech probability per frame.

    The model hears 512-sample windows (32 ms at 16 kHz) with the 64 samples before each as
    context, and carries a recurrent state from one window to the next. Frames of 10-30 ms
    are gathered into windows as they come; a window is scored as soon as it is full, and
    each frame gets the latest probability, so no frame waits for more than its own audio.
    One buffer, one state and one rate scalar are reused for the whole stream.
    """

    WINDOW = 512
    """Samples per model window at 16 kHz."""
    CONTEXT = 64
    """Samples of the previous window the model sees before each window."""

    def __init__(self, model_path: str | Path | None = None, threads: int = 1) -> None:
        try:
            import onnxruntime
        except ImportError:
            raise DependencyError(
                "vad.backend = 'silero' needs onnxruntime: pip install onnxruntime "
                "(or set vad.backend = 'webrtc')"
            ) from None
        path = Path(model_path) if model_path else silero_model_path()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads  # one 32 ms window: threads only add overhead
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        span = self.CONTEXT + self.WINDOW
        self._buffer = np.zeros((1, span + RATE_HZ * 30 // 1000), dtype=np.float32)
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._rate = np.array(RATE_HZ, dtype=np.int64)
        self._fill = self.CONTEXT  # the first window's context is silence
        self._probability = 0.0

    def reset(self) -> None:
        """Forget the stream heard so far (state, context and pending samples)."""
        self._buffer[:] = 0
        self._state[:] = 0
        self._fill = self.CONTEXT
        self._probability = 0.0

    def score(self, pcm: bytes) -> float:
        if len(pcm) % 2 or len(pcm) // 2 > self._buffer.shape[1] - self.CONTEXT - self.WINDOW:
            raise AudioError(
                f"Silero VAD got a {len(pcm)}-byte frame; frames are 10, 20 or 30 ms of "
                "16-bit mono PCM at 16 kHz"
            )
        samples = np.frombuffer(pcm, dtype="<i2")
        end = self._fill + len(samples)
        np.multiply(samples, 1 / 32768, out=self._buffer[0, self._fill : end], casting="unsafe")
        self._fill = end
        span = self.CONTEXT + self.WINDOW
        while self._fill >= span:
            out, state = self._session.run(
                None, {"input": self._buffer[:, :span], "state": self._state, "sr": self._rate}
            )
            self._state = state
            self._probability = float(out[0, 0])
            # the last CONTEXT samples of this window and what follows it move to the front
            left = self._fill - self.WINDOW
            self._buffer[0, :left] = self._buffer[0, self.WINDOW : self._fill]
            self._fill = left
        return self._probability


def band_energy_db(pcm: bytes) -> float:
    """Energy of a frame after pre-emphasis (a first difference), in dBFS; digital silence
    is SILENCE_DB. Pre-emphasis weighs the speech band over hum and rumble."""
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
    if len(x) < 2:
        return SILENCE_DB
    d = x[1:] - 0.97 * x[:-1]
    power = float(np.dot(d, d)) / len(d) / (32768.0 * 32768.0)
    return max(SILENCE_DB, 10 * math.log10(power)) if power > 0 else SILENCE_DB


QUIET_MARGIN_DB = 3.0
"""A frame at most this far above the noise floor is quiet (`is_quiet`): the floor
is the loudest of steady frames, so room noise stays under it, and speech is louder."""


def is_quiet(pcm: bytes, floor_db: float) -> bool:
    """Whether a frame is no louder than the noise floor by `QUIET_MARGIN_DB`: where a run
    of quiet frames begins, the speech ended, a few frames before the voice detector's
    score says so (Silero's trails it by up to 60 ms)."""
    return band_energy_db(pcm) <= floor_db + QUIET_MARGIN_DB


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    """Thresholds, hysteresis and the noise floor of the endpointer."""

    frame_ms: int = 20
    """Frame length, in milliseconds."""
    start_ms: int = 120
    """Run of voiced audio that starts an utterance, in milliseconds; a shorter burst (a
    click, a start-up blip) never becomes a turn, so this is the least utterance length."""
    stop_ms: int = 500
    """Trailing silence that ends an utterance, in milliseconds."""
    pre_roll_ms: int = 300
    """Audio before the first voiced frame handed to the recognizer, in milliseconds."""
    max_utterance_ms: int = 20_000
    """An utterance is cut after this long, in milliseconds."""
    start_threshold: float = 0.5
    """A frame scoring at least this may start (or continue) a run of voice, in [0, 1]."""
    stop_threshold: float = 0.35
    """A frame scoring at least this continues a run of voice once started, in [0, 1]."""
    noise_margin_db: float = 0.0
    """How far above the noise floor a frame must be to count as voice, in dB; 0 = off.
    For webrtcvad, which takes steady noise for voice; Silero tells them apart itself, and
    a margin would cut quiet speech in noise (at 5 dB SNR it hears nothing)."""
    noise_window_ms: int = 300
    """How long sound must stay steady to be taken as the noise floor, in milliseconds."""
    noise_band_db: float = 4.0
    """How steady: the spread of frame energies over `noise_window_ms`, in dB."""

    def __post_init__(self) -> None:
        check_frame_ms(self.frame_ms)
        for name in ("start_ms", "stop_ms", "max_utterance_ms", "noise_window_ms"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"vad.{name} must be positive, got {getattr(self, name)}")
        if self.pre_roll_ms < 0:
            raise ConfigError(f"vad.pre_roll_ms must not be negative, got {self.pre_roll_ms}")
        if not 0 <= self.stop_threshold <= self.start_threshold <= 1:
            raise ConfigError(
                "vad.stop_threshold must be at most vad.start_threshold, both in [0, 1]; got "
                f"{self.stop_threshold} and {self.start_threshold}"
            )
        if self.noise_margin_db < 0 or self.noise_band_db < 0:
            raise ConfigError("vad.noise_margin_db and vad.noise_band_db must not be negative")

    @property
    def noise_frames(self) -> int:
        return max(2, -(-self.noise_window_ms // self.frame_ms))


@dataclass(frozen=True, slots=True)
class EndpointState:
    """Where the endpointer stands; stream times in nanoseconds, energies in dBFS."""

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
    """End of the last voiced frame of the current utterance: where its trailing silence
    began."""
    floor_db: float = SILENCE_DB
    """The noise floor."""
    recent_db: tuple[float, ...] = ()
    """Energies of the last frames, oldest first (at most `noise_frames`)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A boundary the endpointer found."""

    kind: Literal["start", "stop"]
    """Which boundary."""
    audio_ns: int
    """Stream time of the boundary: first voiced sample, or end of the last voiced frame."""


def floor_step(
    floor_db: float, recent_db: tuple[float, ...], settings: EndpointSettings, energy_db: float
) -> tuple[float, tuple[float, ...]]:
    """The noise floor after one more frame of `energy_db`; pure."""
    recent = (*recent_db[1 - settings.noise_frames :], energy_db)
    if len(recent) == settings.noise_frames and max(recent) - min(recent) <= settings.noise_band_db:
        return max(recent), recent  # steady sound: that is the room now, up or down
    if energy_db < floor_db - settings.noise_band_db:
        return energy_db, recent  # far quieter than the floor: the room got quieter
    return floor_db, recent


def endpoint_step(
    state: EndpointState,
    settings: EndpointSettings,
    score: float,
    energy_db: float,
    start_ns: int,
    end_ns: int,
    audible: bool = True,
) -> tuple[EndpointState, Decision | None]:
    """One frame: noise floor, hysteresis, start and stop; pure. A frame not `audible`
    (a microphone array's beam says it does not stand clear of a television) is no voice."""
    floor, recent = floor_step(state.floor_db, state.recent_db, settings, energy_db)
    loud = audible and (
        not settings.noise_margin_db or energy_db >= floor + settings.noise_margin_db
    )
    measured = len(recent) >= settings.noise_frames  # the room is known: a start may come
    running = state.in_speech or state.voiced_run_ns > 0
    voiced = loud and score >= (settings.stop_threshold if running else settings.start_threshold)
    if not state.in_speech:
        if not voiced:
            return dataclasses.replace(
                state, voiced_run_ns=0, floor_db=floor, recent_db=recent
            ), None
        run_start = state.run_start_ns if state.voiced_run_ns else start_ns
        run = state.voiced_run_ns + (end_ns - start_ns)
        if run >= settings.start_ms * MS and measured:
            started = EndpointState(True, run, run_start, 0, run_start, end_ns, floor, recent)
            return started, Decision("start", run_start)
        return EndpointState(False, run, run_start, floor_db=floor, recent_db=recent), None
    if end_ns - state.speech_start_ns >= settings.max_utterance_ms * MS:
        end = end_ns if voiced else state.last_voiced_end_ns
        return EndpointState(floor_db=floor, recent_db=recent), Decision("stop", end)
    if voiced:
        return dataclasses.replace(
            state, silence_ns=0, last_voiced_end_ns=end_ns, floor_db=floor, recent_db=recent
        ), None
    silence = state.silence_ns + (end_ns - start_ns)
    if silence >= settings.stop_ms * MS:
        return EndpointState(floor_db=floor, recent_db=recent), Decision(
            "stop", state.last_voiced_end_ns
        )
    return dataclasses.replace(state, silence_ns=silence, floor_db=floor, recent_db=recent), None


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
    def floor_db(self) -> float:
        """The room's noise floor as it stands (see the module docstring)."""
        return self.state.floor_db

    @property
    def trailing_silence_ns(self) -> int:
        return self.state.silence_ns if self.state.in_speech else 0

    @property
    def silence_start_ns(self) -> int | None:
        """Clock-comparable stream time where the current trailing silence began (the end
        of speech so far); None outside an utterance or while voice goes on."""
        if not self.state.in_speech or not self.state.silence_ns:
            return None
        return self.origin_ns + self.state.last_voiced_end_ns

    def push(self, frame: AudioFrame, audible: bool = True) -> SpeechStarted | SpeechStopped | None:
        """Score one frame; the boundary it makes, if any. Not `audible`, it is no voice
        whatever its score (see `endpoint_step`)."""
        score = self.scorer.score(frame.pcm)
        energy = band_energy_db(frame.pcm)
        self.state, decision = endpoint_step(
            self.state, self.settings, score, energy, frame.start_ns, frame.end_ns, audible
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

    def split(self, at_ns: int) -> tuple[SpeechStopped, SpeechStarted]:
        """Another talker took the open utterance over from stream time `at_ns` (a
        microphone array's beam turned to them): the utterance ends there, and theirs,
        begun there, goes on as the voice does."""
        now = self.clock.now_ns()
        stopped = SpeechStopped(now, self.utterance_id, self.origin_ns + at_ns)
        self.utterance_id += 1
        self.state = dataclasses.replace(self.state, speech_start_ns=at_ns, silence_ns=0)
        return stopped, SpeechStarted(now, self.utterance_id, self.origin_ns + at_ns)

    def end_of_stream(self) -> SpeechStopped | None:
        """Close an utterance still open when the audio ends."""
        if not self.state.in_speech:
            return None
        last = self.state.last_voiced_end_ns
        self.state = EndpointState(floor_db=self.state.floor_db, recent_db=self.state.recent_db)
        return SpeechStopped(self.clock.now_ns(), self.utterance_id, self.origin_ns + last)
