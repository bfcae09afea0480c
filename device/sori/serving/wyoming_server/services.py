"""What the Wyoming server answers with: every model loaded once (through
`sori.assemble`), shared by all connections, and the `info` that describes them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sori import __version__
from sori.assemble.hearing import build_hearing, hearing_recognizer
from sori.assemble.speaking import build_voice, replies, voice_backend
from sori.assemble.understanding import Swappable, presets_from_config
from sori.core.clock import MonotonicClock
from sori.core.config import Config
from sori.core.errors import DependencyError
from sori.core.home import Home
from sori.hearing.stt.base import SpeechRecognizer
from sori.hearing.wake.base import WakeDetector
from sori.hearing.wake_gate import NeverOpen
from sori.serving.wyoming_server.detecting import WakeListening
from sori.serving.wyoming_server.transcribing import Transcribing
from sori.speaking.base import Voice

ATTRIBUTION = ("Sori", "")
"""Who made the programs the info lists, and where they are from (no public address yet)."""


def require_wyoming() -> None:
    """The `wyoming` package, or an error naming the extra that installs it."""
    try:
        import wyoming  # noqa: F401
    except ImportError:
        raise DependencyError(
            "the Wyoming server needs the wyoming package: pip install 'sori[wyoming]'"
        ) from None


@dataclass
class Services:
    """What the server answers with: every model loaded once, shared by all connections."""

    language: str
    """Language of speech and text ("ko"), as [intents] language says."""
    recognizer: SpeechRecognizer
    """The configured speech-to-text backend, loaded."""
    understanding: Any
    """The preset matcher (`match(text)` → an IntentMatch or None)."""
    voice: Voice
    """The configured voice."""
    voice_name: str
    """The voice's name in the info (backend and model)."""
    not_understood: str
    """The reply sent with not-recognized."""
    detector: WakeDetector | None = None
    """A wake-phrase detector, when one is configured; `detect` is refused without."""
    listen_for_wake: Callable[[], WakeListening] | None = None
    """A `detect` request's listener: the voice detector, then `detector` on each
    utterance's start (None without a detector)."""
    transcribing: Callable[[threading.Lock], Transcribing] | None = None
    """A `transcribe` request's listener, given the "stt" lock: the hearing pipeline
    `sori replay` runs, on `recognizer` (None: the recognizer's own stream, without the
    pipeline)."""
    answerer: Any = None
    """Answers questions from the home's state, as the daemon does
    (`sori.understanding.answering.Answerer`); None: a question gets its preset reply."""
    satellite: Any = None
    """The satellite link (`sori.serving.wyoming_server.satellite.SatelliteLink`) when Sori is a
    Home Assistant voice satellite ([wyoming] satellite in `sori run`); None: it is not."""
    locks: dict[str, threading.Lock] = field(
        default_factory=lambda: {
            "stt": threading.Lock(),
            "tts": threading.Lock(),
            "wake": threading.Lock(),
        }  # fmt: skip
    )
    """One lock per model: each is used by one connection at a time."""


def voice_name(config: Config) -> str:
    """The configured voice as the info names it: "espeak-ko", "vits-mms-kor", ..."""
    backend = voice_backend(config)
    t = config.tts
    detail = {
        "espeak": t.espeak.voice or config.intents.language,
        "piper": t.piper.model.rsplit("/", 1)[-1].removesuffix(".onnx"),
        "vits": t.vits.voice or t.vits.model_dir.rstrip("/").rsplit("/", 1)[-1],
    }.get(backend, "")
    return f"{backend}-{detail}" if detail else backend


def load_services(
    config: Config,
    home: Home,
    understanding: Any = None,
    voice: Voice | None = None,
    detector: WakeDetector | None = None,
    recognizer: SpeechRecognizer | None = None,
) -> Services:
    """Every model the server needs, from the config (blocking: models load here). The
    daemon passes its own understanding (reloads reach it), voice and recognizer, so no
    model loads twice. Without a `detector`, [wake] enabled gives one listening for
    `wake.phrases` (its own decoder on the process's one vosk model at its chunk: nothing
    loads again, see sori.hearing.stt.vosk.load_model)."""
    require_wyoming()
    if understanding is None:  # held as the daemon holds it: several commands apart
        understanding = Swappable(presets_from_config(config.intents, home))
    if recognizer is None:
        recognizer = hearing_recognizer(config, understanding)
    if detector is None and config.wake.enabled and config.wake.phrases:
        from sori.assemble.wake import build_wake_detector

        detector = build_wake_detector(config, recognizer=recognizer)
    return Services(
        language=config.intents.language,
        recognizer=recognizer,
        understanding=understanding,
        voice=voice if voice is not None else build_voice(config),
        voice_name=voice_name(config),
        not_understood=replies(config.intents.language)["not_understood"],
        detector=detector,
        listen_for_wake=None if detector is None else partial(wake_listening, config, detector),
        transcribing=partial(Transcribing, config, recognizer, understanding),
    )


def wake_listening(config: Config, detector: WakeDetector) -> WakeListening:
    """A listener for one `detect` request: a fresh voice detector (it keeps state) before
    the shared wake detector, as `sori wake` hears a file."""
    clock = MonotonicClock()
    hearing = build_hearing(config, None, None, clock, clock.now_ns(), detector, NeverOpen())
    return WakeListening(hearing, config.audio.frame_ms)


def describe(services: Services) -> Any:
    """The `info` Sori answers `describe` with: ASR, TTS, intent and (with a detector)
    wake programs, each in Sori's language."""
    from wyoming.info import (
        AsrModel,
        AsrProgram,
        Attribution,
        Info,
        IntentModel,
        IntentProgram,
        TtsProgram,
        TtsVoice,
        WakeModel,
        WakeProgram,
    )

    by = Attribution(*ATTRIBUTION)
    lang = [services.language]
    stt = services.recognizer.name
    info = Info(
        asr=[
            AsrProgram(
                name="sori-stt",
                attribution=by,
                installed=True,
                version=__version__,
                description=f"Sori speech-to-text ({stt}), biased towards the home's commands",
                models=[
                    AsrModel(
                        name=stt,
                        attribution=by,
                        installed=True,
                        version=__version__,
                        description=f"{stt} ({services.language})",
                        languages=lang,
                    )
                ],
            )  # fmt: skip
        ],
        tts=[
            TtsProgram(
                name="sori-tts",
                attribution=by,
                installed=True,
                version=__version__,
                description="Sori's voice",
                voices=[
                    TtsVoice(
                        name=services.voice_name,
                        attribution=by,
                        installed=True,
                        version=__version__,
                        description=services.voice_name,
                        languages=lang,
                    )
                ],
            )  # fmt: skip
        ],
        intent=[
            IntentProgram(
                name="sori-intents",
                attribution=by,
                installed=True,
                version=__version__,
                description="Sori's preset sentences: Home Assistant intents and slots",
                models=[
                    IntentModel(
                        name="sori-presets",
                        attribution=by,
                        installed=True,
                        version=__version__,
                        description="preset sentence packs",
                        languages=lang,
                    )
                ],
            )  # fmt: skip
        ],
    )
    if services.detector is not None:
        d = services.detector
        info.wake = [
            WakeProgram(
                name="sori-wake",
                attribution=by,
                installed=True,
                version=__version__,
                description=f"Sori wake phrases ({d.name})",
                models=[
                    WakeModel(
                        name=p,
                        attribution=by,
                        installed=True,
                        version=__version__,
                        description=p,
                        languages=lang,
                        phrase=p,
                    )
                    for p in d.phrases
                ],
            )  # fmt: skip
        ]
    if services.satellite is not None:
        info.satellite = services.satellite.info()
    return info
