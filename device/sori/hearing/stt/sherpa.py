"""sherpa-onnx backend: a streaming transducer (`OnlineRecognizer`), the production
backend on devices, e.g. sherpa-onnx-streaming-zipformer-korean-2024-06-16.

Contextual biasing: the intent phrases and the home's names become hotwords. sherpa-onnx
encodes hotwords with a `bpe.vocab` (made here from the model's `bpe.model`) and skips a
phrase it cannot encode without saying so, so `prepare_hotwords` encodes every phrase
itself first and reports the ones that would be lost.

On a bad model file sherpa-onnx ends the process instead of raising; `probe` loads a
model in a subprocess first so that a bad model becomes a ModelError.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sori.core.errors import DependencyError, ModelError
from sori.hearing.stt.base import Hypothesis, normalize_text, silence_after

log = logging.getLogger(__name__)

MODEL_HINT = (
    "download a streaming transducer such as sherpa-onnx-streaming-zipformer-korean-2024-06-16 "
    "and set stt.sherpa.model_dir (see models/README.md)"
)


@dataclass(frozen=True, slots=True)
class SherpaModelFiles:
    """The files of a streaming transducer."""

    encoder: str
    """Encoder ONNX file."""
    decoder: str
    """Decoder ONNX file."""
    joiner: str
    """Joiner ONNX file."""
    tokens: str
    """tokens.txt: one "symbol id" per line."""
    bpe_model: str = ""
    """sentencepiece bpe.model; needed for hotwords."""

    @classmethod
    def find(
        cls,
        model_dir: str | Path = "",
        *,
        encoder: str = "",
        decoder: str = "",
        joiner: str = "",
        tokens: str = "",
        bpe_model: str = "",
    ) -> SherpaModelFiles:
        """Explicit paths win; the rest is found in `model_dir` (int8 encoder and joiner
        preferred, fp32 decoder preferred). ModelError names what is missing."""
        folder = Path(model_dir).expanduser() if model_dir else None
        if folder is not None and not folder.is_dir():
            raise ModelError(f"sherpa-onnx model folder {folder} does not exist: {MODEL_HINT}")

        def pick(explicit: str, part: str, int8_first: bool) -> str:
            if explicit:
                return explicit
            if folder is None:
                raise ModelError(f"no sherpa-onnx model configured: {MODEL_HINT}")
            found = sorted(folder.glob(f"{part}*.onnx"))
            int8 = [p for p in found if ".int8." in p.name]
            full = [p for p in found if ".int8." not in p.name]
            ordered = int8 + full if int8_first else full + int8
            if not ordered:
                raise ModelError(f"{folder}: no {part}*.onnx: {MODEL_HINT}")
            return str(ordered[0])

        files = cls(
            encoder=pick(encoder, "encoder", True),
            decoder=pick(decoder, "decoder", False),
            joiner=pick(joiner, "joiner", True),
            tokens=tokens or str((folder or Path()) / "tokens.txt"),
            bpe_model=bpe_model
            or (str(folder / "bpe.model") if folder and (folder / "bpe.model").is_file() else ""),
        )
        for name in ("encoder", "decoder", "joiner", "tokens", "bpe_model"):
            path = getattr(files, name)
            if path and not Path(path).is_file():
                raise ModelError(f"sherpa-onnx {name} file {path} does not exist: {MODEL_HINT}")
        return files


@dataclass(frozen=True, slots=True)
class Hotwords:
    """Hotwords ready for sherpa-onnx."""

    text: str
    """Encodable phrases separated by "/", as `create_stream` takes them."""
    bpe_vocab: str
    """The bpe.vocab file written from bpe.model."""
    file: str
    """The same phrases one per line, as `hotwords_file` takes them: the recognizer builds
    its biasing graph once, not per stream."""
    phrases: tuple[str, ...]
    """The phrases kept."""
    skipped: tuple[str, ...]
    """Phrases that cannot be encoded with the model's tokens (sherpa would drop them)."""


def read_tokens(path: str) -> set[str]:
    symbols = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        parts = line.rsplit(maxsplit=1)
        if len(parts) == 2:
            symbols.add(parts[0])
    return symbols


def prepare_hotwords(
    phrases: Sequence[str], bpe_model: str, tokens: str, cache_dir: str
) -> Hotwords:
    """Encode `phrases` with the model's sentencepiece model; keep those whose pieces are
    all model tokens, and write the bpe.vocab that sherpa-onnx needs into `cache_dir`."""
    try:
        import sentencepiece
    except ImportError:
        raise DependencyError("hotwords need sentencepiece: pip install sentencepiece") from None
    try:
        sp = sentencepiece.SentencePieceProcessor(model_file=bpe_model)
    except (OSError, RuntimeError) as exc:
        raise ModelError(f"{bpe_model}: not a sentencepiece model ({exc})") from None
    vocab = Path(cache_dir) / "bpe.vocab"
    vocab.write_text(
        "".join(f"{sp.id_to_piece(i)}\t{sp.get_score(i)}\n" for i in range(sp.get_piece_size())),
        encoding="utf-8",
    )
    symbols = read_tokens(tokens)
    kept: dict[str, None] = {}
    skipped: dict[str, None] = {}
    for phrase in phrases:
        phrase = normalize_text(phrase.replace("/", " "))
        if not phrase:
            continue
        pieces = sp.encode(phrase, out_type=str)
        ok = pieces and all(p in symbols and sp.piece_to_id(p) != sp.unk_id() for p in pieces)
        (kept if ok else skipped)[phrase] = None
    if skipped:
        log.warning(
            "sherpa-onnx: %d hotword phrases cannot be encoded with the model's tokens and are "
            "left out: %s",
            len(skipped),
            " / ".join(list(skipped)[:10]),
        )
    listing = Path(cache_dir) / "hotwords.txt"
    listing.write_text("".join(f"{p}\n" for p in kept), encoding="utf-8")
    return Hotwords("/".join(kept), str(vocab), str(listing), tuple(kept), tuple(skipped))


def probe(files: SherpaModelFiles, model_type: str, timeout_s: float = 60.0) -> None:
    """Load the model in a subprocess; a ModelError with its last words if that dies."""
    code = (
        "import json, sys; from sori.hearing.stt.sherpa import SherpaModelFiles, _load;"
        "_load(SherpaModelFiles(**json.loads(sys.argv[1])), sys.argv[2], 1, 'cpu', None)"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, json.dumps(asdict(files)), model_type],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    except subprocess.TimeoutExpired:
        raise ModelError(f"loading {files.encoder} took over {timeout_s:.0f} s") from None
    if done.returncode != 0:
        tail = " ".join((done.stderr or "").strip().splitlines()[-3:])[-400:]
        raise ModelError(
            f"sherpa-onnx cannot load the model {files.encoder} "
            f"(exit {done.returncode}: {tail or 'no message'}): {MODEL_HINT}"
        )


def _load(
    files: SherpaModelFiles,
    model_type: str,
    threads: int,
    provider: str,
    hotwords: Hotwords | None,
    hotwords_score: float = 1.5,
    max_active_paths: int = 4,
) -> Any:
    try:
        import sherpa_onnx
    except ImportError:
        raise DependencyError(
            "the sherpa backend needs sherpa-onnx: pip install sherpa-onnx"
        ) from None
    extra: dict[str, Any] = {}
    if hotwords is not None:
        extra = dict(
            decoding_method="modified_beam_search",
            modeling_unit="bpe",
            bpe_vocab=hotwords.bpe_vocab,
            hotwords_file=hotwords.file,
            hotwords_score=hotwords_score,
            max_active_paths=max_active_paths,
        )
    try:
        return sherpa_onnx.OnlineRecognizer.from_transducer(
            tokens=files.tokens,
            encoder=files.encoder,
            decoder=files.decoder,
            joiner=files.joiner,
            num_threads=threads,
            sample_rate=16000,
            feature_dim=80,
            model_type=model_type,
            provider=provider,
            **extra,
        )
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"sherpa-onnx rejected the model: {exc}: {MODEL_HINT}") from None


class SherpaRecognizer:
    """Streaming recognition with a sherpa-onnx transducer, hotwords included."""

    name = "sherpa"

    def __init__(
        self,
        files: SherpaModelFiles,
        *,
        model_type: str = "zipformer",
        threads: int = 2,
        provider: str = "cpu",
        phrases: Sequence[str] = (),
        hotwords_score: float = 1.5,
        max_active_paths: int = 4,
        check_in_subprocess: bool = True,
    ) -> None:
        self.files = files
        self.hotwords: Hotwords | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="sori-sherpa-")
        if phrases:
            if files.bpe_model:
                self.hotwords = prepare_hotwords(
                    phrases, files.bpe_model, files.tokens, self._tmp.name
                )
            else:
                log.warning("sherpa-onnx: no bpe.model next to the model; hotwords are off")
        if check_in_subprocess:
            probe(files, model_type)
        use = self.hotwords if self.hotwords and self.hotwords.text else None
        self._rec = _load(
            files, model_type, threads, provider, use, hotwords_score, max_active_paths
        )

    def open_stream(self, snr_db: float | None = None) -> SherpaStream:
        """A stream for one utterance; the SNR changes nothing (sherpa-onnx gives no
        whole-path score for a likelihood-ratio test to ask more of)."""
        return SherpaStream(self._rec, self._rec.create_stream())


class SherpaStream:
    """One utterance through an `OnlineRecognizer` stream."""

    def __init__(self, rec: Any, stream: Any) -> None:
        self._rec = rec
        self._stream = stream
        self._last = ""

    def _decode(self) -> str:
        while self._rec.is_ready(self._stream):
            self._rec.decode_stream(self._stream)
        # Join the tokens ourselves: sentencepiece's word marker becomes a space in them,
        # while the result's text drops the spaces.
        return normalize_text("".join(self._rec.get_result_all(self._stream).tokens))

    def feed(self, pcm: bytes) -> Hypothesis | None:
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        self._stream.accept_waveform(16000, samples)
        text = self._decode()
        if text == self._last:
            return None
        self._last = text
        return Hypothesis(text)

    def flush(self, silence_ms: int, after: bytes = b"") -> Hypothesis | None:
        """Silence ahead of time, so the encoder's last chunk covers the end of speech."""
        return self.feed(silence_after(after, silence_ms))

    def finalize(self) -> Hypothesis:
        # Pad with silence so the last chunk reaches the encoder, then close the stream.
        self._stream.accept_waveform(16000, np.zeros(8000, dtype=np.float32))
        self._stream.input_finished()
        return Hypothesis(self._decode())
