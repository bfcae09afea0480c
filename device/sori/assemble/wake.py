"""Build wake detection and the listening state from `[wake]`: the detector the hearing
pipeline runs on each utterance, and the `Conversation` the daemon keeps."""

from __future__ import annotations

import logging
import time
from typing import Any

from sori.core.config import Config
from sori.core.errors import ConfigError
from sori.hearing.wake.base import WakeDetector
from sori.serving.conversation.listening import Conversation

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
        return _sherpa_kws(config, phrases)
    if wake.backend != "phrase":
        raise ConfigError(
            f"wake.backend must be one of {', '.join(WAKE_BACKENDS)}, got {wake.backend!r}"
        )
    from sori.hearing.wake.phrase import PhraseWakeDetector

    started = time.perf_counter()
    detector = PhraseWakeDetector(
        _wake_model(config, recognizer), phrases, threshold=wake.threshold
    )
    log.info(
        "wake: listening for %s (%s backend, ready in %.2f s)",
        ", ".join(phrases), detector.name, time.perf_counter() - started,
    )  # fmt: skip
    return detector


def _wake_model(config: Config, recognizer: Any) -> Any:
    """The vosk model the phrase detector decodes with: the recognizer's own, or the one
    every other user of `[stt.vosk]` in this process shares (`load_model` loads it once).
    One model at one chunk (`stt.vosk.chunk_ms`) for both: the Korean model holds about
    500 MiB, and the detector's threshold is calibrated at the recognizer's chunk."""
    if getattr(recognizer, "name", "") == "vosk":
        return recognizer.model
    from sori.hearing.stt.vosk import load_model

    vosk = config.stt.vosk
    return load_model(vosk.model or None, vosk.chunk_ms)


def _sherpa_kws(config: Config, phrases: list[str]) -> WakeDetector:
    """sherpa-onnx's KeywordSpotter with the model of `[wake.sherpa_kws]`; a missing file
    or a phrase its tokens cannot spell is a ConfigError naming it."""
    from sori.core.errors import ModelError
    from sori.hearing.stt.sherpa import MODEL_HINT, SherpaModelFiles
    from sori.hearing.wake.sherpa_kws import KwsModelFiles, SherpaKwsWakeDetector

    kws = config.wake.sherpa_kws
    if not (kws.model_dir or (kws.encoder and kws.decoder and kws.joiner and kws.tokens)):
        raise ConfigError(
            'wake.backend = "sherpa-kws" needs a keyword-spotting model: set '
            "wake.sherpa_kws.model_dir (a sherpa-onnx-kws-* folder) or its encoder, decoder, "
            'joiner and tokens; or use backend = "phrase" (no model to add)'
        )
    try:
        found = SherpaModelFiles.find(
            kws.model_dir, encoder=kws.encoder, decoder=kws.decoder, joiner=kws.joiner,
            tokens=kws.tokens, bpe_model=kws.bpe_model,
        )  # fmt: skip
    except ModelError as exc:
        fix = "set wake.sherpa_kws.model_dir (or its files) to a keyword-spotting model"
        raise ConfigError(f"wake.sherpa_kws: {str(exc).replace(MODEL_HINT, fix)}") from None
    files = KwsModelFiles(found.encoder, found.decoder, found.joiner, found.tokens, found.bpe_model)
    started = time.perf_counter()
    detector = SherpaKwsWakeDetector(
        files, phrases, threads=kws.threads, keywords_score=kws.keywords_score,
        keywords_threshold=kws.keywords_threshold, trailing_blanks=kws.trailing_blanks,
        max_active_paths=kws.max_active_paths, provider=kws.provider,
    )  # fmt: skip
    log.info(
        "wake: listening for %s (sherpa-kws backend, %s, ready in %.2f s)",
        ", ".join(phrases), files.encoder, time.perf_counter() - started,
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
