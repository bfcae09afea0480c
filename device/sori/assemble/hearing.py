"""Build the hearing pipeline from the config: a microphone array's front end, echo
cancellation, voice detector, recognizer, denoising and early commit. `sori replay` and
the daemon both use it, so they run the same pipeline."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from functools import partial
from typing import Any

from sori.core.clock import Clock
from sori.core.config import AudioConfig, Config, SttConfig
from sori.core.config.sections import DEREVERBS
from sori.core.errors import AudioError, ConfigError, SoriError
from sori.core.events import Event
from sori.core.files import state_folder
from sori.hearing.audio.array import (
    BOARD_CHANNELS,
    ArrayGeometry,
    ChannelLayout,
    array_geometry,
    channel_layout,
)
from sori.hearing.audio.denoise import build_denoiser, check_denoise, denoised
from sori.hearing.audio.denoise_decision import DenoiseDecision
from sori.hearing.audio.echo_cancel import cancel_echo
from sori.hearing.audio.echo_path import FILE_NAME as ECHO_PATH_FILE
from sori.hearing.audio.echo_path import EchoPathStore
from sori.hearing.audio.format import FRAME_MS_CHOICES, AudioFrame, ChannelFrame
from sori.hearing.audio.front_end import ArrayFrontEnd, Dereverberator, array_frames, dereverbed
from sori.hearing.audio.played import PlayedAudio
from sori.hearing.committing import CommitSettings
from sori.hearing.pacing import hear
from sori.hearing.pipeline import Hearing
from sori.hearing.stt.base import SpeechRecognizer, WarmUp, warm_up, warm_up_later
from sori.hearing.vad import BACKENDS as VAD_BACKENDS
from sori.hearing.vad import EndpointSettings, SileroScorer, VoiceScorer, WebrtcScorer

log = logging.getLogger(__name__)

BACKENDS = ("vosk", "sherpa")


def build_recognizer(
    stt: SttConfig, phrases: list[str], warm_later: bool = False
) -> SpeechRecognizer:
    """The configured speech-to-text backend, its model loaded, biased towards `phrases`,
    and warmed up (`stt.warm_up_s`), so that the first utterance is not the slow one;
    `warm_later`: on a thread, which the first utterance stops (the daemon: it is ready
    3 s sooner, and an utterance in those seconds is heard at once, a little slower)."""
    recognizer = _load_recognizer(stt, phrases)
    if warm_later:
        warm_up_later(recognizer, stt.warm_up_s, partial(_warmed, recognizer.name))
    elif stt.warm_up_s > 0:
        _warmed(recognizer.name, warm_up(recognizer, stt.warm_up_s))
    return recognizer


def _warmed(name: str, done: WarmUp) -> None:
    how = (
        "warm-up stopped (an utterance began, or Sori stops) after"
        if done.stopped
        else "warmed up on"
    )
    log.info(
        "stt: %s %s %.1f s of speech-like sound in %.2f s", name, how, done.audio_s, done.took_s
    )


def hearing_recognizer(
    config: Config, understanding: Any, warm_later: bool = False
) -> SpeechRecognizer:
    """The recognizer every driver hears with (the microphone, replayed files, `sori
    test`, the doctor's self-test, Wyoming clients), biased towards `understanding`'s
    phrases (blocking: the model loads here); `warm_later`: see `build_recognizer`."""
    load_model_early(config.stt)  # while the phrases are listed (0.8 s for the defaults)
    phrases = understanding.phrases(config.stt.phrases.max_phrases)
    warm_auto_denoiser(config.audio)
    return build_recognizer(config.stt, phrases, warm_later)


def load_model_early(stt: SttConfig) -> None:
    """Start loading the vosk model on a background thread, so that what start-up does
    meanwhile (the presets, the voice, the phrase list) overlaps it; the recognizer's build
    then finds it loaded (`load_model` loads once per process, a second caller waits for
    the first). A model that cannot load is left for that build to report."""
    if stt.backend != "vosk":
        return

    def load() -> None:
        from sori.hearing.stt.vosk import load_model

        with contextlib.suppress(SoriError):  # the recognizer's build raises it again
            load_model(stt.vosk.model or None, stt.vosk.chunk_ms)

    threading.Thread(target=load, name="sori-stt-load", daemon=True).start()


def second_recognizer(recognizer: SpeechRecognizer) -> SpeechRecognizer:
    """A recognizer for a second audio stream heard at the same time as `recognizer`'s
    (the Wyoming server's clients beside the microphone), on the same loaded model: the
    backend's `twin()` where its decoders serve one stream at a time (vosk), else the same
    recognizer (its streams are independent)."""
    twin = getattr(recognizer, "twin", None)
    return twin() if twin is not None else recognizer


def warm_auto_denoiser(audio: AudioConfig) -> None:
    """`audio.denoise = "auto"`: load the denoiser it runs on a background thread, while
    the recognizer loads, so that neither start-up nor the first noisy utterance waits for
    it (sori.hearing.audio.denoise_decision.POOL; it logs one line if it cannot load)."""
    if check_denoise(audio.denoise) != "auto":
        return
    from sori.hearing.audio.denoise_decision import POOL

    threading.Thread(
        target=POOL.warm, args=(audio.denoise_engine,), name="denoise-warm", daemon=True
    ).start()


def auto_denoise(config: Config) -> DenoiseDecision | None:
    """`audio.denoise = "auto"`: one pipeline's decision, per utterance, whether it is heard
    denoised (the recognizer and the wake detector alike); None for any other choice."""
    if check_denoise(config.audio.denoise) != "auto":
        return None
    return DenoiseDecision(
        config.audio.denoise_engine,
        config.audio.denoise_above_dbfs,
        with_wake=config.wake.denoise == "auto",
    )


def _load_recognizer(stt: SttConfig, phrases: list[str]) -> SpeechRecognizer:
    if stt.backend == "vosk":
        from sori.hearing.stt.vosk import VoskRecognizer

        v = stt.vosk
        return VoskRecognizer(
            model_path=v.model or None,
            phrases=phrases,
            mode=v.mode,
            lr_threshold=v.lr_threshold,
            noisy_lr_threshold=v.noisy_lr_threshold,
            noisy_below_db=v.noisy_below_db,
            chunk_ms=v.chunk_ms,
            agreement_floor=v.agreement_floor,
        )
    if stt.backend == "sherpa":
        from sori.hearing.stt.sherpa import SherpaModelFiles, SherpaRecognizer

        s = stt.sherpa
        files = SherpaModelFiles.find(
            s.model_dir,
            encoder=s.encoder,
            decoder=s.decoder,
            joiner=s.joiner,
            tokens=s.tokens,
            bpe_model=s.bpe_model,
        )
        return SherpaRecognizer(
            files,
            model_type=s.model_type,
            threads=s.threads,
            provider=s.provider,
            phrases=phrases if s.hotwords else (),
            hotwords_score=s.hotwords_score,
            max_active_paths=s.max_active_paths,
            check_in_subprocess=s.probe,
        )
    raise ConfigError(f"stt.backend must be one of {', '.join(BACKENDS)}, got {stt.backend!r}")


def front_end(
    config: Config,
    frames: Iterable[AudioFrame] | Iterable[ChannelFrame],
    played: PlayedAudio | None = None,
    origin_ns: int = 0,
    array: ArrayFrontEnd | None = None,
    echo_store: EchoPathStore | None = None,
) -> Iterator[AudioFrame]:
    """`frames` (a stream from clock time `origin_ns`) as the pipeline hears them: without
    Sori's own voice, when `played` records what its speaker plays into the room and
    `audio.echo_cancel` is "auto" (sori.hearing.audio.echo_cancel; the echo path learned
    before kept in `echo_store`, `echo_path_store`), dereverberated when
    `audio.dereverb` says so; with an `array` (`build_array`), `frames` are its captured
    channels, whose microphones are cancelled (from the board's own playback channels
    where it has them) and dereverberated each, then beamed into one. Then through the speech
    enhancement `audio.denoise` names (a fresh one per audio stream), or as they are
    ("off", and "auto", whose VAD hears the raw microphone: sori.hearing.audio.denoise_decision)."""
    audio = config.audio
    cancel = audio.echo_cancel == "auto"
    if not cancel:
        played = None
    if array is not None:
        dereverb = build_dereverb(audio, array.geometry.channels)
        mono = array_frames(
            frames, array, played, origin_ns, dereverb, loopback=cancel, echo_store=echo_store
        )  # type: ignore[arg-type]
    else:
        mono = frames  # type: ignore[assignment]
        if played is not None:
            mono = cancel_echo(mono, played, origin_ns, store=echo_store)
        dereverb = build_dereverb(audio, 1)
        if dereverb is not None:
            mono = dereverbed(mono, dereverb)
    return denoised(mono, build_denoiser(audio.denoise))


def echo_path_store(config: Config) -> EchoPathStore:
    """Where the echo cancellers keep the path they learned, for the microphones and the
    frame `config` sets: a start with another microphone or frame starts afresh."""
    audio, array = config.audio, config.audio.array
    setup = {
        "device": audio.device,
        "channels": audio.channels,
        "frame_ms": audio.frame_ms,
        "geometry": array.geometry,
        "mic_positions_m": array.mic_positions_m,
        "mic_channels": array.mic_channels,
        "playback_channels": array.playback_channels,
    }
    return EchoPathStore(state_folder() / ECHO_PATH_FILE, setup)


def build_array(config: Config) -> ArrayFrontEnd | None:
    """The array's front end for one audio stream (`audio.channels` > 1), its geometry
    and which captured channels are its microphones checked; None with one microphone."""
    found = array_layout(config)
    if found is None:
        return None
    geometry, layout = found
    return ArrayFrontEnd(geometry, config.audio.array.beamform, layout)


def array_layout(config: Config) -> tuple[ArrayGeometry, ChannelLayout] | None:
    """The array's microphones and which captured channels they are (`audio.channels` >
    1), checked (a ConfigError says what to set); None with one microphone."""
    audio = config.audio
    if audio.channels == 1:
        return None
    array = audio.array
    geometry = array_geometry(array.geometry, array.mic_positions_m)
    layout = channel_layout(
        audio.channels, geometry, array.geometry, array.mic_channels, array.playback_channels
    )
    return geometry, layout


def check_capture(array: ArrayFrontEnd, board: str, source: Any) -> None:
    """Refuse a microphone opened with fewer channels than its device gives, where the
    named `board`'s driver puts the microphones elsewhere than the first channels opened
    (the ReSpeaker USB array's 6-channel firmware gives its own mix in channel 0): the
    beam would hear the wrong channels. `source` is the open MicSource."""
    known = BOARD_CHANNELS.get(board, {}).get(source.device_channels)
    if known is None or array.layout.captured >= source.device_channels:
        return
    if array.layout.microphones != known[0]:
        opened = array.layout.captured
        source.close()
        raise AudioError(
            f"input device {source.device_name!r} gives {source.device_channels} channels "
            f"and the {board}'s microphones are channels {', '.join(map(str, known[0]))}, "
            f"but audio.channels = {opened} opens channels 0-{opened - 1}; set "
            f"audio.channels = {source.device_channels}"
        )


def build_dereverb(audio: AudioConfig, channels: int) -> Dereverberator | None:
    """The dereverberator `audio.dereverb` names, for `channels` channels; None for "off"."""
    if audio.dereverb == "off":
        return None
    if audio.dereverb == "wpe":
        from sori.hearing.audio.dereverb import OnlineWpe

        return OnlineWpe(channels)
    if audio.dereverb == "spectral":
        from sori.hearing.audio.dereverb import LateReverbSuppressor

        return LateReverbSuppressor(channels, audio.rt60_s)
    raise ConfigError(
        f"audio.dereverb must be one of {', '.join(DEREVERBS)}, got {audio.dereverb!r}"
    )


def source_frames(source: Any, config: Config) -> Iterable[AudioFrame] | Iterable[ChannelFrame]:
    """What `source` yields for the front end: its pipeline frames with one microphone,
    each microphone's channel with an array; an AudioError for a source that has no
    channels to give (a test's fixture of mono frames)."""
    channels = config.audio.channels
    if channels == 1:
        return source.frames()
    channel_frames = getattr(source, "channel_frames", None)
    if channel_frames is None:
        raise AudioError(
            f"{source.name}: audio.channels is {channels} (a microphone array), which "
            "hears WAV/FLAC files, raw PCM or a microphone with one channel per microphone"
        )
    return channel_frames(channels)


def endpoint_settings(config: Config) -> EndpointSettings:
    if config.audio.frame_ms not in FRAME_MS_CHOICES:
        raise ConfigError(f"audio.frame_ms must be 10, 20 or 30, got {config.audio.frame_ms}")
    return EndpointSettings(
        frame_ms=config.audio.frame_ms,
        start_ms=config.vad.start_ms,
        stop_ms=config.vad.stop_ms,
        pre_roll_ms=config.vad.pre_roll_ms,
        max_utterance_ms=int(config.vad.max_utterance_s * 1000),
        start_threshold=config.vad.start_threshold,
        stop_threshold=config.vad.stop_threshold,
        # Silero tells steady noise from speech itself; a margin would cut quiet speech
        noise_margin_db=config.vad.noise_margin_db if config.vad.backend == "webrtc" else 0.0,
        noise_window_ms=config.vad.noise_window_ms,
        noise_band_db=config.vad.noise_band_db,
    )


def build_scorer(config: Config) -> VoiceScorer:
    """The configured voice detector; one per audio stream (Silero keeps state)."""
    if config.vad.backend == "silero":
        return SileroScorer()
    if config.vad.backend == "webrtc":
        return WebrtcScorer(config.vad.aggressiveness)
    raise ConfigError(
        f"vad.backend must be one of {', '.join(VAD_BACKENDS)}, got {config.vad.backend!r}"
    )


def commit_settings(config: Config) -> CommitSettings:
    c = config.commit
    return CommitSettings(
        early=c.early,
        silence_ms=c.silence_ms,
        min_confidence=c.min_confidence,
        flush_ms=c.flush_ms,
        flush_steps=c.flush_steps,
    )


def build_hearing(
    config: Config,
    recognizer: SpeechRecognizer | None,
    understanding: Any,
    clock: Clock,
    origin_ns: int = 0,
    wake: Any = None,
    gate: Any = None,
    steering: ArrayFrontEnd | None = None,
) -> Hearing:
    """A fresh pipeline (one per audio stream) around an already loaded recognizer (None:
    wake detection only), with a wake detector and the gate that says when an utterance
    needs it (see `sori.hearing.pipeline.Hearing`), and the array's front end the voice
    detector steers (`build_array`; None with one microphone). Under `audio.denoise =
    "auto"` it decides per utterance whether its listeners hear it denoised (`auto_denoise`)."""
    return Hearing(
        build_scorer(config),
        recognizer,
        understanding,
        clock=clock,
        endpoint=endpoint_settings(config),
        commit=commit_settings(config),
        origin_ns=origin_ns,
        wake=wake,
        gate=gate,
        steering=steering,
        denoise=auto_denoise(config),
    )


def open_hearing(
    input_name: str,
    config: Config,
    understanding: Any,
    clock: Clock,
    conversation: Any = None,
    recognizer: SpeechRecognizer | None = None,
    tap: Callable[[Iterable[AudioFrame], int], Iterable[AudioFrame]] | None = None,
    array: ArrayFrontEnd | None = None,
) -> tuple[Any, AsyncIterator[Event]]:
    """The audio source `input_name` names ("mic" or a file) and the async stream of
    hearing events from it; blocking (the recognizer, unless given, and the wake detector
    load here). The `conversation` (`sori.serving.conversation.listening`) mutes, and when gated,
    the wake phrase opens turns. `tap(frames, origin_ns)` sees every frame heard, and
    the clock time the stream starts at (the Home Assistant satellite keeps the last
    seconds, to hand over an utterance Sori did not understand). `array` is the front end
    of `audio.channels` > 1 (`build_array`), built here unless the caller keeps one."""
    from sori.hearing.audio.sources import FileSource, MicSource

    if array is None:
        array = build_array(config)  # a wrong geometry is refused before anything loads
    if input_name != "mic":  # a broken file is refused before the recognizer loads
        source = FileSource(input_name, config.audio.frame_ms)
    if recognizer is None:
        recognizer = hearing_recognizer(config, understanding)
    wake = None
    if conversation is not None and conversation.gated:
        from sori.assemble.wake import build_wake_detector

        wake = build_wake_detector(config, recognizer=recognizer)
        if input_name == "mic" and config.stt.warm_up_s > 0:
            wake.warm_up_later()  # the first phrase, not a file's, is answered at once
    if input_name == "mic":  # opened last: audio buffered while models load would be stale
        source = MicSource(
            config.audio.device, config.audio.frame_ms, channels=config.audio.channels
        ).open()
        if array is not None:
            check_capture(array, config.audio.array.geometry, source)
    origin_ns = clock.now_ns()
    hearing = build_hearing(
        config, recognizer, understanding, clock, origin_ns, wake, conversation, array
    )
    played = getattr(conversation, "echo", None)
    live = played is not None and input_name == "mic"  # a file holds no echo of this room
    store = echo_path_store(config) if live else None
    if array is None:
        frames = source.frames() if tap is None else tap(source.frames(), origin_ns)
        return source, hear(front_end(config, frames, played, origin_ns, echo_store=store), hearing)
    channels = source_frames(source, config)
    beamed = front_end(config, channels, played, origin_ns, array, echo_store=store)
    return source, hear(beamed if tap is None else tap(beamed, origin_ns), hearing)
