"""Build wake detection and the listening state from `[wake]`: the detector the hearing
pipeline runs on each utterance, and the `Conversation` the daemon keeps."""

from __future__ import annotations

import logging
import time
from typing import Any

from sori.config import Config
from sori.conversation.listening import Conversation
from sori.errors import ConfigError
from sori.wake.base import WakeDetector

log = logging.getLogger(__name__)

WAKE_BACKENDS = ("phrase", "sherpa-kws")


def build_wake_detector(
    config: Config, phrases: list[str] | None = None, recognizer: Any = None
) -> WakeDetector:
    """The `[wake]` backend listening for `phrases` (default `wake.phrases`); the vosk
    model of a vosk `recognizer` is shared, else the one `stt.vosk.model` names is loaded.
    A phrase the model does not know is refused (ConfigError naming it)."""
    wake = config.wake
    phrases = list(phrases if phrases is not None else wake.phrases)
    if wake.backend == "sherpa-kws":
        raise ConfigError(
            'wake.backend = "sherpa-kws" is not built yet; use backend = "phrase" (vosk, '
            "no model to add)"
        )
    if wake.backend != "phrase":
        raise ConfigError(
            f"wake.backend must be one of {', '.join(WAKE_BACKENDS)}, got {wake.backend!r}"
        )
    from sori.stt.vosk import load_model
    from sori.wake.phrase import PhraseWakeDetector

    recognizer = getattr(recognizer, "inner", recognizer)  # AutoDenoised wraps the backend
    model = (
        getattr(recognizer, "model", None) if getattr(recognizer, "name", "") == "vosk" else None
    )
    started = time.perf_counter()
    detector = PhraseWakeDetector(
        model if model is not None else load_model(config.stt.vosk.model or None),
        phrases,
        threshold=wake.threshold,
    )
    log.info(
        "wake: listening for %s (%s backend, ready in %.2f s)",
        ", ".join(phrases), detector.name, time.perf_counter() - started,
    )  # fmt: skip
    return detector


def wake_on(config: Config, input_name: str, no_wake: bool = False) -> bool:
    """Whether turns need the wake phrase: `wake.enabled`, audio in, and no --no-wake."""
    return config.wake.enabled and input_name != "none" and not no_wake


def build_conversation(
    config: Config, input_name: str, no_wake: bool = False, keep_state: bool = True
) -> Conversation:
    """The daemon's listening state: gated by the wake phrase when `wake_on`; live (the
    follow-up window opens once the reply is spoken) with the microphone. Without
    `keep_state` (a replay), it starts unmuted and keeps no state file."""
    wake = config.wake
    return Conversation(
        gated=wake_on(config, input_name, no_wake),
        listen_s=wake.listen_s,
        follow_up_s=wake.follow_up_s,
        live=input_name == "mic",
        muted=wake.muted and keep_state,
        state_file=(wake.state_file or None) if keep_state else None,
    )
