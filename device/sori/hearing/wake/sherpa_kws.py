"""The `sherpa-kws` wake backend: sherpa-onnx's `KeywordSpotter`, a streaming transducer
that fires when its beam search spells one of the keywords with enough probability.

The keywords file is built here from the configured phrases with the model's own tokens:
sentencepiece pieces when the model has a `bpe.model`, else characters (syllables), each
checked against `tokens.txt`. sherpa-onnx skips a keyword it cannot spell with only a
printed line, so a phrase it would lose is refused up front (ConfigError naming it).
Each keyword line carries `@wN`, N the phrase's index, so a result maps back to the
phrase as configured.
"""

from __future__ import annotations

import logging
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sori.core.errors import ConfigError, DependencyError
from sori.hearing.wake.base import RATE_HZ, Detection

log = logging.getLogger(__name__)

TAIL_S = 0.5
"""Silence fed after an utterance ends, in seconds: the spotter needs trailing blanks
after a keyword's last token before it fires."""
_NOT_WORD = re.compile(r"[^\w\s]")


@dataclass(frozen=True, slots=True)
class KwsModelFiles:
    """The files of a keyword-spotting transducer (paths checked by the assembly)."""

    encoder: str
    """Encoder ONNX file."""
    decoder: str
    """Decoder ONNX file."""
    joiner: str
    """Joiner ONNX file."""
    tokens: str
    """tokens.txt: one "symbol id" per line."""
    bpe_model: str = ""
    """sentencepiece bpe.model; "" when the tokens are characters."""


def read_tokens(path: str) -> dict[str, int]:
    table = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        parts = line.rsplit(maxsplit=1)
        if len(parts) == 2:
            table[parts[0]] = int(parts[1])
    return table


def spell(phrases: list[str], files: KwsModelFiles) -> list[list[str]]:
    """Each phrase as the model's tokens; ConfigError naming every phrase (and the pieces)
    that the tokens cannot spell."""
    if not phrases:
        raise ConfigError('wake.phrases is empty; add at least one, e.g. phrases = ["소리야"]')
    table = read_tokens(files.tokens)
    if files.bpe_model:
        try:
            import sentencepiece
        except ImportError:
            raise DependencyError(
                "the sherpa-kws wake backend needs sentencepiece for a bpe model: "
                "pip install sentencepiece"
            ) from None
        try:
            sp = sentencepiece.SentencePieceProcessor(model_file=files.bpe_model)
        except (OSError, RuntimeError) as exc:
            raise ConfigError(
                f"wake.sherpa_kws.bpe_model {files.bpe_model} is not a sentencepiece model "
                f"({exc}); point it at the keyword model's bpe.model"
            ) from None

        def pieces(text: str) -> list[str]:
            return [p for p in sp.encode(text, out_type=str) if sp.piece_to_id(p) != sp.unk_id()]
    else:

        def pieces(text: str) -> list[str]:
            return list(text.replace(" ", ""))

    spelled, problems = [], []
    for phrase in phrases:
        text = " ".join(_NOT_WORD.sub(" ", phrase).split())
        tokens = pieces(text) if text else []
        missing = [t for t in tokens if t not in table]
        if not tokens or missing or "".join(tokens).replace("▁", "") != text.replace(" ", ""):
            problems.append(f"{phrase!r} ({' '.join(missing) or 'no pieces'} not in tokens)")
        spelled.append(tokens)
    if problems:
        raise ConfigError(
            "wake.phrases: the keyword model's tokens cannot spell "
            + "; ".join(problems)
            + f" ({files.tokens}). Choose a phrase in the model's language and script, or "
            'another model; backend = "phrase" hears any word the vosk model knows'
        )
    return spelled


class SherpaKwsWakeDetector:
    """Wake phrases spotted by sherpa-onnx's KeywordSpotter (see module)."""

    name = "sherpa-kws"
    rearm_s = None
    """The keyword spotter hears all of an utterance."""

    def __init__(
        self,
        files: KwsModelFiles,
        phrases: list[str],
        *,
        threads: int = 1,
        keywords_score: float = 1.0,
        keywords_threshold: float = 0.25,
        trailing_blanks: int = 1,
        max_active_paths: int = 4,
        provider: str = "cpu",
    ) -> None:
        try:
            import sherpa_onnx
        except ImportError:
            raise DependencyError(
                "the sherpa-kws wake backend needs sherpa-onnx: pip install sherpa-onnx"
            ) from None
        self.phrases = list(phrases)
        self.tokens = spell(self.phrases, files)
        self._folder = tempfile.TemporaryDirectory(prefix="sori-kws-")
        keywords = Path(self._folder.name) / "keywords.txt"
        keywords.write_text(
            "".join(f"{' '.join(t)} @w{i}\n" for i, t in enumerate(self.tokens)), encoding="utf-8"
        )
        self._spotter = sherpa_onnx.KeywordSpotter(
            tokens=files.tokens,
            encoder=files.encoder,
            decoder=files.decoder,
            joiner=files.joiner,
            keywords_file=str(keywords),
            num_threads=threads,
            max_active_paths=max_active_paths,
            keywords_score=keywords_score,
            keywords_threshold=keywords_threshold,
            num_trailing_blanks=trailing_blanks,
            provider=provider,
        )

    def open_stream(self, within: bool = False) -> SherpaKwsWakeStream:
        return SherpaKwsWakeStream(self)

    def warm_up_later(self) -> None:
        """Nothing to warm: the spotter's network is whole once loaded."""

    def heard_in(self, phrase: str, pcm: bytes, heard_score: float) -> bool:
        stream = self.open_stream()
        found = stream.feed(pcm) + stream.finish()
        return any(d.phrase == phrase for d in found)


class SherpaKwsWakeStream:
    """One utterance through the keyword spotter; at most one detection."""

    def __init__(self, detector: SherpaKwsWakeDetector) -> None:
        self._d = detector
        self._spotter = detector._spotter
        self._stream: Any = self._spotter.create_stream()
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, pcm: bytes) -> list[Detection]:
        if self._done or not pcm:
            return []
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        self._stream.accept_waveform(RATE_HZ, samples)
        return self._decode()

    def finish(self) -> list[Detection]:
        if self._done:
            return []
        self._stream.accept_waveform(RATE_HZ, np.zeros(int(TAIL_S * RATE_HZ), np.float32))
        self._stream.input_finished()
        found = self._decode()
        self._done = True
        return found

    def close(self) -> None:
        self._done = True

    def _decode(self) -> list[Detection]:
        spotter = self._spotter
        while spotter.is_ready(self._stream):
            spotter.decode_stream(self._stream)
            keyword = spotter.get_result(self._stream)
            if not keyword:
                continue
            times = list(spotter.timestamps(self._stream)) or [0.0]
            self._done = True
            index = int(keyword.removeprefix("w"))
            phrase = self._d.phrases[index]
            log.debug("wake keyword %r at %.2f-%.2f s", phrase, times[0], times[-1])
            return [Detection(phrase, round(times[0], 3), round(times[-1] + 0.04, 3), 1.0)]
        return []
