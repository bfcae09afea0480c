"""Korean VITS voices through sherpa-onnx `OfflineTts`.

A model folder as sherpa-onnx publishes them (for example `vits-mimic3-ko_KO-kss_low`):
one `*.onnx` network with sherpa-onnx metadata and `tokens.txt`, plus `lexicon.txt` for
lexicon-based models. Since sherpa-onnx 2.0 the library no longer phonemizes through
espeak-ng itself (`data_dir` is ignored), so for espeak-based models (KSS, piper exports)
we phonemize with piper-tts's bundled espeak-ng, in the model's voice ("ko"), and hand
sherpa-onnx the phonemes' code points.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sori.core.errors import DependencyError, ModelError
from sori.hearing.audio.format import float_to_s16
from sori.speaking.base import split_sentences

log = logging.getLogger(__name__)

MODELS_URL = "https://github.com/k2-fsa/sherpa-onnx/releases/tag/tts-models"


@dataclass(frozen=True, slots=True)
class VitsFiles:
    """The files of one sherpa-onnx VITS model."""

    model: Path
    """The ONNX network."""
    tokens: Path
    """Symbol table, one "symbol id" per line."""
    lexicon: Path | None
    """Word-to-phoneme lexicon; None for models phonemized by espeak-ng."""
    dict_dir: Path | None
    """jieba dictionary folder (Chinese models only)."""


def find_files(model_dir: str | Path) -> VitsFiles:
    """The model files in `model_dir`, or a ModelError that says which is missing."""
    if not str(model_dir):
        raise ModelError("tts.vits.model_dir is empty; set it to a sherpa-onnx VITS model folder")
    folder = Path(model_dir).expanduser()
    if not folder.is_dir():
        raise ModelError(
            f"VITS model folder {folder} does not exist; check tts.vits.model_dir "
            f"(Korean voices such as vits-mimic3-ko_KO-kss_low: {MODELS_URL})"
        )
    models = sorted(folder.glob("*.onnx"))
    if not models:
        raise ModelError(f"{folder} holds no *.onnx model; check tts.vits.model_dir")
    # Prefer the full-precision network when an int8 copy sits beside it.
    full = [m for m in models if ".int8." not in m.name]
    tokens = folder / "tokens.txt"
    if not tokens.is_file():
        raise ModelError(f"{folder} has no tokens.txt; it is not a sherpa-onnx VITS model")
    lexicon = folder / "lexicon.txt"
    dict_dir = folder / "dict"
    return VitsFiles(
        model=(full or models)[0],
        tokens=tokens,
        lexicon=lexicon if lexicon.is_file() else None,
        dict_dir=dict_dir if dict_dir.is_dir() else None,
    )


def piper_to_sherpa(model: str | Path, config: str | Path, out_dir: str | Path) -> Path:
    """Turn a piper voice into a sherpa-onnx VITS model folder (needs the `onnx` package).

    sherpa-onnx reads piper voices once their network carries its metadata and tokens.txt
    lists the phoneme ids: the recipe of sherpa-onnx's vits-piper-* releases, and the
    format of the Korean vits-mimic3-ko_KO-kss_low voice. Used by tests and benchmarks.
    """
    import json

    try:
        import onnx
    except ImportError:
        raise DependencyError(
            "converting a piper voice needs onnx; run 'pip install onnx'"
        ) from None
    settings = json.loads(Path(config).read_text(encoding="utf-8"))
    network = onnx.load(str(model))
    meta = {
        "model_type": "vits",
        "comment": "piper",
        "language": settings.get("language", {}).get("name_english", ""),
        "voice": settings["espeak"]["voice"],
        "has_espeak": 1,
        "n_speakers": settings["num_speakers"],
        "sample_rate": settings["audio"]["sample_rate"],
    }
    for key, value in meta.items():
        entry = network.metadata_props.add()
        entry.key, entry.value = key, str(value)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(network, str(out / Path(model).name))
    with open(out / "tokens.txt", "w", encoding="utf-8") as f:
        for symbol, ids in settings["phoneme_id_map"].items():
            f.write(f"{symbol} {ids[0]}\n")
    return out


class EspeakPhonemes:
    """Text to IPA phonemes per sentence with piper-tts's bundled espeak-ng."""

    def __init__(self, voice: str, data_dir: str | Path = "") -> None:
        try:
            import piper
            from piper.phonemize_espeak import EspeakPhonemizer
        except ImportError:
            raise DependencyError(
                "espeak-based VITS voices need piper-tts's phonemizer; run 'pip install piper-tts'"
            ) from None
        folder = Path(data_dir).expanduser() if str(data_dir) else None
        folder = folder or Path(piper.__file__).parent / "espeak-ng-data"
        if not (folder / "phontab").is_file():
            raise ModelError(f"{folder} is not an espeak-ng data folder; check tts.vits.data_dir")
        self.voice = voice
        self._phonemizer = EspeakPhonemizer(folder)

    def codepoints(self, text: str) -> list[list[int]]:
        """One list of phoneme code points per sentence of `text`."""
        sentences = self._phonemizer.phonemize(self.voice, text)
        return [[ord(c) for c in "".join(s)] for s in sentences if s]


class SherpaVitsVoice:
    """Speaks through a sherpa-onnx VITS model (Korean KSS voices, piper exports, ...)."""

    def __init__(
        self,
        model_dir: str | Path,
        voice: str = "",
        data_dir: str | Path = "",
        speaker: int = 0,
        speed: float = 1.0,
        threads: int = 1,
    ) -> None:
        files = find_files(model_dir)
        try:
            import sherpa_onnx
        except ImportError:
            raise DependencyError(
                "sherpa-onnx is not installed; run 'pip install sherpa-onnx'"
            ) from None
        self._sherpa = sherpa_onnx
        vits = sherpa_onnx.OfflineTtsVitsModelConfig(
            model=str(files.model),
            lexicon=str(files.lexicon or ""),
            tokens=str(files.tokens),
            dict_dir=str(files.dict_dir or ""),
        )
        config = sherpa_onnx.OfflineTtsConfig(
            model=sherpa_onnx.OfflineTtsModelConfig(vits=vits, num_threads=threads),
            max_num_sentences=1,
        )
        if not config.validate():
            raise ModelError(f"sherpa-onnx rejected the VITS model in {files.model.parent}")
        try:
            self._tts = sherpa_onnx.OfflineTts(config)
        except Exception as exc:  # the C++ side raises RuntimeError and friends
            raise ModelError(f"cannot load VITS model {files.model}: {exc}") from exc
        if not 0 <= speaker < max(self._tts.num_speakers, 1):
            raise ModelError(
                f"tts.vits.speaker = {speaker}, but {files.model.name} has "
                f"{self._tts.num_speakers} speaker(s)"
            )
        espeak_voice = voice or self._tts.lang
        if files.lexicon is None and not espeak_voice:
            raise ModelError(
                f"{files.model.name} has no lexicon.txt and names no espeak-ng voice; "
                'set tts.vits.voice ("ko" for Korean)'
            )
        self._phonemes = EspeakPhonemes(espeak_voice, data_dir) if files.lexicon is None else None
        self.files = files
        self.speaker = speaker
        self.speed = speed
        self.rate_hz = int(self._tts.sample_rate)
        log.info("sherpa-onnx VITS voice %s at %d Hz", files.model.name, self.rate_hz)

    def synthesize(self, text: str) -> Iterator[bytes]:
        for sentence in split_sentences(text):
            audio = self._tts.generate(sentence, self._generation(sentence))
            if len(audio.samples):
                yield float_to_s16(audio.samples)

    def _generation(self, sentence: str):  # noqa: ANN202 - sherpa_onnx.GenerationConfig
        gen = self._sherpa.GenerationConfig()
        gen.sid = self.speaker
        gen.speed = self.speed
        if self._phonemes is not None:
            gen.phoneme_codepoints = self._phonemes.codepoints(sentence)
        return gen
