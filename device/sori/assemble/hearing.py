"""Build the hearing pipeline from the config: echo cancellation, voice detector,
recognizer, denoising and early commit. `sori replay` and the daemon both use it, so they
run the same pipeline."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

from sori.core.clock import Clock
from sori.core.config import AudioConfig, Config, SttConfig
from sori.core.errors import ConfigError
from sori.core.events import Event
from sori.hearing.audio.denoise import build_denoiser, check_denoise, denoised
from sori.hearing.audio.echo_cancel import cancel_echo
from sori.hearing.audio.format import FRAME_MS_CHOICES, AudioFrame
from sori.hearing.audio.played import PlayedAudio
from sori.hearing.committing import CommitSettings
from sori.hearing.pacing import hear
from sori.hearing.pipeline import Hearing
from sori.hearing.stt.base import SpeechRecognizer, warm_up
from sori.hearing.vad import BACKENDS as VAD_BACKENDS
from sori.hearing.vad import EndpointSettings, SileroScorer, VoiceScorer, WebrtcScorer

log = logging.getLogger(__name__)

BACKENDS = ("vosk", "sherpa")


def build_recognizer(
    stt: SttConfig, phrases: list[str], audio: AudioConfig | None = None, measure_ms: int = 300
) -> SpeechRecognizer:
    """The configured speech-to-text backend, its model loaded, biased towards `phrases`,
    and warmed up (`stt.warm_up_s`), so that the first utterance is not the slow one. With
    `audio.denoise = "auto"`, wrapped so that each utterance in a noisy room is denoised,
    the room measured on the first `measure_ms` of it (the VAD's pre-roll)."""
    recognizer = _load_recognizer(stt, phrases)
    if stt.warm_up_s > 0:
        done = warm_up(recognizer, stt.warm_up_s)
        log.info(
            "stt: %s warmed up on %.1f s of speech-like sound in %.2f s",
            recognizer.name,
            done.audio_s,
            done.took_s,
        )
    if audio is not None and check_denoise(audio.denoise) == "auto":
        return _auto_denoised(recognizer, audio, measure_ms)
    return recognizer


def hearing_recognizer(config: Config, understanding: Any) -> SpeechRecognizer:
    """The recognizer every driver hears with (the microphone, replayed files, `sori
    test`, the doctor's self-test, Wyoming clients), biased towards `understanding`'s
    phrases (blocking: the model loads here)."""
    phrases = understanding.phrases(config.stt.phrases.max_phrases)
    return build_recognizer(config.stt, phrases, config.audio, config.vad.pre_roll_ms)


def second_recognizer(recognizer: SpeechRecognizer) -> SpeechRecognizer:
    """A recognizer for a second audio stream heard at the same time as `recognizer`'s
    (the Wyoming server's clients beside the microphone), on the same loaded model: the
    backend's `twin()` where its decoders serve one stream at a time (vosk), else the same
    recognizer (its streams are independent). Without the room's denoising: a client's
    audio is not the room's."""
    inner = getattr(recognizer, "inner", recognizer)  # AutoDenoised wraps the backend
    twin = getattr(inner, "twin", None)
    return twin() if twin is not None else inner


def _auto_denoised(
    recognizer: SpeechRecognizer, audio: AudioConfig, measure_ms: int
) -> SpeechRecognizer:
    """`audio.denoise = "auto"`: the denoiser loaded and run once (its first frames are
    the slow ones), or, when it cannot load, the recognizer as it is and one log line."""
    from sori.hearing.audio.denoise import warm_denoiser
    from sori.hearing.stt.denoised import AutoDenoised

    denoiser = warm_denoiser("audio.denoise")
    if denoiser is None:
        return recognizer
    return AutoDenoised(recognizer, denoiser, audio.denoise_above_dbfs, measure_ms)


def _load_recognizer(stt: SttConfig, phrases: list[str]) -> SpeechRecognizer:
    if stt.backend == "vosk":
        from sori.hearing.stt.vosk import VoskRecognizer

        v = stt.vosk
        return VoskRecognizer(
            model_path=v.model or None,
            phrases=phrases,
            mode=v.mode,
            lr_threshold=v.lr_threshold,
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
    frames: Iterable[AudioFrame],
    played: PlayedAudio | None = None,
    origin_ns: int = 0,
) -> Iterator[AudioFrame]:
    """`frames` (a stream from clock time `origin_ns`) as the pipeline hears them: without
    Sori's own voice, when `played` records what its speaker plays into the room and
    `audio.echo_cancel` is "auto" (sori.hearing.audio.echo_cancel); then through the speech
    enhancement `audio.denoise` names (a fresh one per audio stream), or as they are
    ("off", and "auto", whose VAD hears the raw microphone: see sori.hearing.stt.denoised)."""
    if played is not None and config.audio.echo_cancel == "auto":
        frames = cancel_echo(frames, played, origin_ns)
    return denoised(frames, build_denoiser(config.audio.denoise))


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
) -> Hearing:
    """A fresh pipeline (one per audio stream) around an already loaded recognizer (None:
    wake detection only), with a wake detector and the gate that says when an utterance
    needs it (see `sori.hearing.pipeline.Hearing`)."""
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
    )


def open_hearing(
    input_name: str,
    config: Config,
    understanding: Any,
    clock: Clock,
    conversation: Any = None,
    recognizer: SpeechRecognizer | None = None,
    tap: Callable[[Iterable[AudioFrame], int], Iterable[AudioFrame]] | None = None,
) -> tuple[Any, AsyncIterator[Event]]:
    """The audio source `input_name` names ("mic" or a file) and the async stream of
    hearing events from it; blocking (the recognizer, unless given, and the wake detector
    load here). The `conversation` (`sori.serving.conversation.listening`) mutes, and when gated,
    the wake phrase opens turns. `tap(frames, origin_ns)` sees every frame heard, and
    the clock time the stream starts at (the Home Assistant satellite keeps the last
    seconds, to hand over an utterance Sori did not understand)."""
    from sori.hearing.audio.sources import FileSource, MicSource

    if input_name != "mic":  # a broken file is refused before the recognizer loads
        source = FileSource(input_name, config.audio.frame_ms)
    if recognizer is None:
        recognizer = hearing_recognizer(config, understanding)
    wake = None
    if conversation is not None and conversation.gated:
        from sori.assemble.wake import build_wake_detector

        wake = build_wake_detector(config, recognizer=recognizer)
    if input_name == "mic":  # opened last: audio buffered while models load would be stale
        source = MicSource(config.audio.device, config.audio.frame_ms).open()
    origin_ns = clock.now_ns()
    hearing = build_hearing(config, recognizer, understanding, clock, origin_ns, wake, conversation)
    frames = source.frames() if tap is None else tap(source.frames(), origin_ns)
    played = getattr(conversation, "echo", None)
    return source, hear(front_end(config, frames, played, origin_ns), hearing)
