"""The `phrase` wake backend: vosk, with a grammar of the wake phrases among fillers, and a
likelihood-ratio check of every candidate.

A wake phrase begins an utterance: it follows a pause ("소리야", "소리야 불 켜줘"), as
one calls a person by name. So only the start of each utterance is decoded (`spot_seconds`:
`LEAD_S` and the longest phrase said slowly), and only a phrase beginning within `LEAD_S`
of it is a candidate; the rest of a long utterance, a TV sentence or a conversation, costs
nothing (nor does denoising it, `wake.denoise = "auto"`). While Sori speaks, its own voice
and the user's phrase are one utterance to the voice detector: the hearing pipeline then
opens a fresh stream every `LEAD_S` (`rearm_s`), so some stream's start is near the phrase
(sori.hearing.wake_gate); each stream has a spotter of its own, from a small pool.

1. Spotting. One vosk recognizer decodes the utterance's start with a small grammar: the
   wake phrases (each listed `WEIGHT` times) among some two thousand Korean syllables the
   model knows as words (`fillers`). Any speech decodes into syllables; a wake phrase wins
   where the audio fits it better than syllables do. Syllables that sound like a phrase
   (`near`: a few jamo apart, 징 벙 셕 for 김범석) are a candidate as well. Which syllables
   the spotter hears depends on where the speech falls on its 30 ms frames: a run that
   only just misses being near a phrase (`SECOND_LOOK_SHARE`) gets a second look, the
   utterance's start spotted again half a frame later (`SECOND_LOOK_S`), for that phrase
   only. Not while Sori speaks: streams then open every `LEAD_S`, each at another
   alignment, and a second look there found 소리야 in Sori's own voice.
2. Checking. A grammar decoder turns other words into a wake word with high confidence
   ("소리를" → "소리야"), so each candidate is decoded again from the utterance's start
   (from `CHECK_LEAD_S` before the candidate, for a stream within an utterance) to the
   phrase's end: once constrained to the phrase, once free-form (the model's whole
   vocabulary and language model). The likelihood ratio, constrained minus free-form total
   path score per second, is above 0 when the phrase was said (the free decode finds the
   same words) and far below when it was not (the constrained decode forces
   wrong words onto the audio): a detection needs `score >= threshold`. The free-form
   decoder is kept and reset between checks; only candidates pay for it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from sori.core.errors import ConfigError
from sori.core.hangul import sound_cost, syllable
from sori.hearing.wake.base import BYTES_PER_S, RATE_HZ, Detection

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.0
"""Least likelihood ratio per second for a detection (calibrated on the shared read-speech
clips with scripts/bench_wake.py: said phrases score about 4 to 10, others -10 and below)."""
LEAD_S = 1.0
"""A phrase must begin within this many seconds of the utterance's first audio (the
voice detector's pre-roll included) to be a candidate."""
SYLLABLE_S = 0.35
"""The longest a wake phrase's syllable is expected to last, in seconds: a name called
slowly ("소-리-야") takes about 0.3 s a syllable, read speech 0.15."""
TAIL_S = 0.2
"""Audio the spotter hears after the longest phrase could end, for its last word to settle."""
FASTEST_SYLLABLE_S = 0.075
"""The shortest a spotted phrase's syllable may last, in seconds (13 syllables a second,
beyond the fastest speech, 8 to 10; the spotter's word times are 30 ms frames). A phrase
spotted in less is the grammar's weight pulling a fragment onto it (소리야 in 0.21 s on a
cut "사", which checked at +11): it is no candidate. The read clips' phrases are spotted
at 0.10 to 0.26 s a syllable; 지난해 sped up 1.5 times (sox tempo, 0.26 s) still wakes,
spotted as 0.36 s, and 1.8 times (0.22 s) is not spotted at all."""
WEIGHT = 10
"""How many times each wake phrase is listed in the spotting grammar: a heavier phrase is
missed less and spotted wrongly more often, which the check then rejects."""
CHECK_LEAD_S = 0.5
"""In a stream within an utterance, the check decodes from this many seconds before a
candidate's spotted start: room for a start spotted a little late, and little of what came
before (Sori's own voice, the phrase said over it). At an utterance's start it decodes from
the start, a pause: measured on bench_wake's seed 7, decoding from here there too traded
a miss for a false wake."""
ECHO_MARGIN = 0.0
"""A phrase detected while Sori speaks is Sori's own voice when what the speaker played
then checks as the phrase within this much of the threshold. The check of Sori's audio is
noisy: the window is aligned only roughly (`sori.hearing.wake_gate.ECHO_LATENCY_S`), and moving it
by 4 ms moved one window's score from -2.9 to +3.8, so a margin rejects real phrases said
over speech that sounds a little like them. Measured with bench_wake --echo (40 trials per
level): 3 found 85 / 87.5 / 82.5 % dry, 0 found 92.5 / 92.5 / 90 %, with no self wake in
either (README)."""
OWN_VOICE_GAP = 8.0
"""A phrase detected while Sori speaks is Sori's own voice only when what the speaker
played checks as the phrase at most this much below the microphone's audio did. Sori's
record of its own phrase checks a little below the room's copy (its window reaches
`ECHO_LATENCY_S` further back, which the score per second dilutes): 6.9 below in
tests/test_wake.py. A user's phrase said over Sori's words checks far better in the room
than in the record: with a test's 60 ms chunk, one scored +9.98 heard and +0.23 in Sori's
audio, which the threshold alone took for Sori's own voice. bench_wake --echo: of the
phrases said over Sori that were also found in Sori's audio, 6 of 9 lay 8.5 to 19.7
below what was heard (README)."""
WARM_UP_S = 3.0
"""Speech-like sound the check's decoders hear on a thread at start-up (`warm_up_later`):
vosk builds its decoding graph as a decoder goes, so a decoder's first checks cost most.
Measured on six read clips' 0.9 s windows (a check's free-form pass, x86): 140-1,280 ms
each after only the half second of silence `__init__` decodes, 130-250 ms after 3 s (2.6 s
of one core), about as after 6 s; 50-85 ms for a window heard before."""
PARTIAL_EVERY_S = 0.1
"""How often the spotter's partial hypothesis is read, in seconds of audio. When it shows
a phrase, the spotter's segment is closed at once, for the word times of a final result
(vosk's partial word times come seconds late)."""
NEAR_SHARE = 0.45
"""Spotted syllables whose jamo differ from a phrase's by at most this share (a third per
differing jamo, a sixth where they sound alike, summed over the syllables: `sound_cost`)
are a candidate too. Some voices fit the fillers better than the phrase: one speaker's
김범석 spots as 징 벙 셕 (0.28), in brown noise as 징 뻠 처 (0.44), and then checks at +7.
The check decides, so a loose share costs only checks."""
SECOND_LOOK_SHARE = 0.6
"""Spotted syllables this near a phrase (but not `NEAR_SHARE` near) get a second look at
another alignment. bench_wake --offsets: 김범석 spotted as 징 벙 서 (1.0 of 3 jamo apart,
a candidate) at seven offsets of 0-32 ms, as 징 벅 처 (1.5) at two."""
SECOND_LOOK_S = 0.015
"""How much later the second look starts: half the spotter's 30 ms frame, the alignment
farthest from the first."""
FILLER_FINALS = (0, 1, 4, 8, 16, 17, 21)
"""Syllable endings of the fillers: none, ㄱ, ㄴ, ㄹ, ㅁ, ㅂ, ㅇ (the commonest codas)."""
_NOT_WORD = re.compile(r"[^\w\s]")


def phrase_words(phrase: str) -> list[str]:
    """A phrase as the words a decoder gives: punctuation dropped, split on spaces."""
    return _NOT_WORD.sub(" ", phrase).split()


def spot_seconds(words: list[list[str]]) -> float:
    """How much of an utterance's start holds a phrase of `words` (each phrase's words):
    `LEAD_S` for it to begin, its syllables said slowly, and `TAIL_S`."""
    longest = max(len("".join(phrase)) for phrase in words)
    return round(LEAD_S + longest * SYLLABLE_S + TAIL_S, 3)


def fillers(known: Callable[[str], bool]) -> list[str]:
    """Hangul syllables (any initial and vowel, endings `FILLER_FINALS`) the model knows."""
    found = []
    for initial in range(19):
        for vowel in range(21):
            for final in FILLER_FINALS:
                candidate = syllable(initial, vowel, final)
                if known(candidate):
                    found.append(candidate)
    return found


def split_known(word: str, known: Callable[[str], bool]) -> list[str] | None:
    """`word` as the fewest known pieces, longest first piece first; None when impossible."""
    if known(word):
        return [word]
    for cut in range(len(word) - 1, 0, -1):
        if known(word[:cut]):
            rest = split_known(word[cut:], known)
            if rest is not None:
                return [word[:cut], *rest]
    return None


def check_phrases(phrases: list[str], known: Callable[[str], bool]) -> list[list[str]]:
    """Each phrase as its words; ConfigError naming every word the model does not know,
    with a spelling it does know where there is one."""
    if not phrases:
        raise ConfigError('wake.phrases is empty; add at least one, e.g. phrases = ["소리야"]')
    result, problems = [], []
    for phrase in phrases:
        words = phrase_words(phrase)
        if not words:
            problems.append(f"{phrase!r} has no words")
        for word in words:
            if not known(word):
                pieces = split_known(word, known)
                hint = f' (write it as "{" ".join(pieces)}")' if pieces else ""
                problems.append(f"{word!r} in {phrase!r} is not in the model's vocabulary{hint}")
        result.append(words)
    if problems:
        raise ConfigError(
            "wake.phrases: " + "; ".join(problems) + ". The phrase backend hears only words "
            "the vosk model knows: split a word into known pieces as suggested, or choose "
            "another phrase"
        )
    return result


class PhraseWakeDetector:
    """Wake phrases spotted among fillers and checked by likelihood ratio (see module)."""

    name = "phrase"
    rearm_s = LEAD_S
    """A stream hears only a phrase that begins within `LEAD_S` of its start."""

    def __init__(
        self, model: Any, phrases: list[str], threshold: float = DEFAULT_THRESHOLD
    ) -> None:
        def known(word: str) -> bool:
            return model.vosk_model_find_word(word) >= 0

        self.model = model
        self.phrases = list(phrases)
        self.threshold = threshold
        self.words = check_phrases(self.phrases, known)
        self.spot_s = spot_seconds(self.words)
        """Audio of each utterance the spotter decodes, in seconds; what follows is not."""
        self._spoken = [" ".join(w) for w in self.words]
        self.targets = ["".join(w) for w in self.words]
        """Each phrase's syllables, as spotted runs are compared with it (`near`)."""
        self._grammar = json.dumps([*self._spoken * WEIGHT, *fillers(known)], ensure_ascii=False)
        self._idle: list[Spotter] = [self._new_spotter()]
        """Spotters no stream is using; streams open at once (Sori speaking) add more."""
        self._free = self._scorer(None)
        self._constrained = {text: self._scorer([text]) for text in set(self._spoken)}
        self._decode(self._free, bytes(BYTES_PER_S // 2))  # a free decoder's first run is slow
        self._checking = threading.Lock()
        """Held while the check's decoders decode: a check, or a piece of the warm-up."""
        self._warming = False
        """A warm-up runs; a check clears it, which stops the warm-up."""
        self._half_warmed = False
        """The warm-up stopped within a decode: the check resets the decoders first."""
        self._beside = ThreadPoolExecutor(1, thread_name_prefix="sori-wake-check")
        """Decodes a check's constrained pass beside its free-form one."""

    def _scorer(self, grammar: list[str] | None) -> Any:
        import vosk

        if grammar is None:
            rec = vosk.KaldiRecognizer(self.model, RATE_HZ)
        else:
            rec = vosk.KaldiRecognizer(self.model, RATE_HZ, json.dumps(grammar, ensure_ascii=False))
        rec.SetMaxAlternatives(1)  # results then carry the best path's total score
        return rec

    def _decode(self, rec: Any, pcm: bytes) -> float:
        """Total path score of `pcm` decoded by `rec` on its own; `rec` is reset after."""
        score = sum(map(_score, _results(rec, pcm)))
        rec.Reset()
        return score

    def score(self, spoken: str, window: bytes) -> float:
        """Likelihood ratio per second of `window` for the phrase `spoken` (its words)."""
        seconds = max(len(window) / BYTES_PER_S, 1e-3)
        self._warming = False
        with self._checking:
            if self._half_warmed:
                for rec in self._checkers():
                    _final_result(rec)  # Reset alone keeps the features' adaptation
                    rec.Reset()
                self._half_warmed = False
            beside = self._beside.submit(self._decode, self._constrained[spoken], window)
            free = self._decode(self._free, window)
            constrained = beside.result()
        return (constrained - free) / seconds

    def warm_up_later(self, seconds: float = WARM_UP_S) -> None:
        """Decode `seconds` of speech-like sound with the check's decoders on a thread, a
        fifth of a second at a time (see `WARM_UP_S`); the first check stops it."""
        self._warming = True
        threading.Thread(
            target=self._warm_up, args=(seconds,), name="sori-wake-warm", daemon=True
        ).start()

    def _warm_up(self, seconds: float) -> None:
        from sori.hearing.audio.augment import to_pcm16
        from sori.hearing.audio.synthetic import speech_like

        started = time.perf_counter()
        pcm = to_pcm16(speech_like(seconds, np.random.default_rng(0)))
        step = BYTES_PER_S // 5
        for rec in self._checkers():
            for i in range(0, len(pcm) + step, step):
                with self._checking:
                    if not self._warming:
                        log.info("wake: warm-up stopped by a check")
                        return
                    self._half_warmed = i < len(pcm)
                    if self._half_warmed:
                        rec.AcceptWaveform(pcm[i : i + step])
                    else:
                        _final_result(rec)
                        rec.Reset()
        self._warming = False
        log.info("wake: the check warmed up on %.1f s of speech-like sound in %.2f s",
                 seconds, time.perf_counter() - started)  # fmt: skip

    def _checkers(self) -> list[Any]:
        return [self._free, *self._constrained.values()]

    def heard_in(self, phrase: str, pcm: bytes, heard_score: float) -> bool:
        """Whether `pcm` alone checks as `phrase` within `ECHO_MARGIN` of the threshold
        and within `OWN_VOICE_GAP` of `heard_score`."""
        spoken = self._spoken[self.phrases.index(phrase)]
        score = self.score(spoken, pcm)
        log.debug("wake phrase %r in Sori's own audio: score %.2f (heard: %.2f)",
                  phrase, score, heard_score)  # fmt: skip
        return score >= self.threshold - ECHO_MARGIN and score >= heard_score - OWN_VOICE_GAP

    def open_stream(self, within: bool = False) -> PhraseWakeStream:
        """A stream at an utterance's start, or `within` one (checked from just before
        each candidate, not from the stream's start)."""
        return PhraseWakeStream(self, self.take_spotter(), CHECK_LEAD_S if within else None)

    def take_spotter(self) -> Spotter:
        """A spotter no stream is using, reset; `give_back` returns it."""
        spotter = self._idle.pop() if self._idle else self._new_spotter()
        spotter.rec.Reset()
        return spotter

    def _new_spotter(self) -> Spotter:
        import vosk

        rec = vosk.KaldiRecognizer(self.model, RATE_HZ, self._grammar)
        rec.SetWords(True)
        return Spotter(rec)

    def give_back(self, spotter: Spotter) -> None:
        """A stream is done with `spotter`."""
        self._idle.append(spotter)


@dataclass(slots=True)
class Spotter:
    """One spotting recognizer and how much audio it has decoded since it was made
    (vosk's word times run on across resets, so each stream subtracts where it began)."""

    rec: Any
    decoded_bytes: int = 0


class PhraseWakeStream:
    """The start of one utterance through the spotter; candidates are checked as they
    settle, and at most one detection is made (the phrase that opens the utterance)."""

    def __init__(
        self, detector: PhraseWakeDetector, spotter: Spotter, check_lead_s: float | None
    ) -> None:
        self._d = detector
        self._spotter = spotter
        self._check_lead_s = check_lead_s
        """How long before a candidate its check begins; None: at the stream's start."""
        self._origin_s = spotter.decoded_bytes / BYTES_PER_S
        self._audio = bytearray()
        self._done: list[dict] = []
        """Words of the spotter's final results so far (with start/end seconds)."""
        self._checked: set[tuple[int, float, float]] = set()
        """(phrase index, start, end) of every candidate checked, so each is checked once
        (a run near a phrase that failed does not hide the phrase spotted over it later)."""
        self._since_partial = 0
        self._finished = False
        self._near_misses: set[int] = set()
        """Phrases some spotted run only just missed being near (`SECOND_LOOK_SHARE`)."""

    @property
    def done(self) -> bool:
        return self._finished

    def feed(self, pcm: bytes) -> list[Detection]:
        if self._finished:
            return []
        room = int(self._d.spot_s * BYTES_PER_S) - len(self._audio)
        if room <= len(pcm):
            self._spot(pcm[: max(room, 0)])
            return self.finish()  # the start of the utterance is over
        return self._spot(pcm)

    def _spot(self, pcm: bytes) -> list[Detection]:
        self._audio += pcm
        self._spotter.decoded_bytes += len(pcm)
        rec = self._spotter.rec
        if rec.AcceptWaveform(pcm):
            self._done += json.loads(rec.Result()).get("result", [])
            return self._candidates()
        self._since_partial += len(pcm)
        if self._since_partial < PARTIAL_EVERY_S * BYTES_PER_S:
            return []
        self._since_partial = 0
        partial = json.loads(rec.PartialResult()).get("partial", "").split()
        if not any(_contains(partial, wanted) for wanted in self._d.words):
            return []
        return self.finish()  # a phrase: its times now, from a final result

    def finish(self) -> list[Detection]:
        if self._finished:
            return []
        self._finished = True
        self._done += json.loads(_final_result(self._spotter.rec)).get("result", [])
        self._d.give_back(self._spotter)
        found = self._candidates()
        if found or not self._near_misses or self._check_lead_s is not None:
            return found  # within an utterance, streams open every LEAD_S: looks enough
        return self._second_look()

    def _second_look(self) -> list[Detection]:
        """The utterance's start spotted again, `SECOND_LOOK_S` later (see the module),
        and its candidates for the phrases the first look only just missed checked: the
        question is whether that near miss was the phrase, not what else may be there."""
        spotter = self._d.take_spotter()
        origin_s = spotter.decoded_bytes / BYTES_PER_S - SECOND_LOOK_S
        pcm = bytes(self._audio[int(SECOND_LOOK_S * RATE_HZ) * 2 :])
        words = [w for r in _results(spotter.rec, pcm) for w in json.loads(r).get("result", [])]
        spotter.decoded_bytes += len(pcm)
        self._d.give_back(spotter)
        return self._candidates(words, origin_s, self._near_misses)

    def _candidates(
        self,
        words: list[dict] | None = None,
        origin_s: float | None = None,
        phrases: set[int] | None = None,
    ) -> list[Detection]:
        """Runs of spotted `words` (the spotter's so far, by default; their times counted
        from `origin_s`) that open the utterance and sound like a phrase (`near`; one of
        `phrases`, by index, when given), earliest first, each checked once; the first
        that passes is the detection."""
        if words is None:
            words, origin_s = self._done, self._origin_s
        assert origin_s is not None
        for i, first in enumerate(words):
            start = float(first["start"]) - origin_s
            if start > LEAD_S:
                break  # not at the start of the utterance: speech that contains it
            for index, target in enumerate(self._d.targets):
                if phrases is not None and index not in phrases:
                    continue
                run = _run(words, i, len(target))
                if run is None:
                    continue
                if not near(run[0], target):
                    if near(run[0], target, SECOND_LOOK_SHARE):
                        self._near_misses.add(index)
                    continue
                end = float(words[run[1]]["end"]) - origin_s
                if end - start < FASTEST_SYLLABLE_S * len(target):
                    continue  # faster than anyone speaks
                if (index, start, end) in self._checked:
                    continue
                self._checked.add((index, start, end))
                detection = self._check(index, start, end)
                if detection is not None:
                    self.close()  # the utterance has made its one detection
                    return [detection]
        return []

    def close(self) -> None:
        if not self._finished:
            self._finished = True
            _final_result(self._spotter.rec)
            self._d.give_back(self._spotter)

    def _check(self, index: int, start: float, end: float) -> Detection | None:
        lead = self._check_lead_s
        first = 0 if lead is None else max(0, int((start - lead) * RATE_HZ)) * 2
        window = bytes(self._audio[first : min(len(self._audio), int(end * RATE_HZ) * 2)])
        score = self._d.score(self._d._spoken[index], window)
        phrase = self._d.phrases[index]
        log.debug("wake candidate %r at %.2f-%.2f s: score %.2f", phrase, start, end, score)
        if score < self._d.threshold:
            return None
        return Detection(phrase, round(start, 3), round(end, 3), round(score, 3))


def near(spotted: str, phrase: str, share: float = NEAR_SHARE) -> bool:
    """Whether spotted syllables sound enough like a phrase's (as many syllables, differing
    in at most `share` of their jamo, sound-alike jamo counting half: `sound_cost`) to be
    checked."""
    if len(spotted) != len(phrase):
        return False
    return sum(map(sound_cost, spotted, phrase)) <= share * len(phrase)


def _results(rec: Any, pcm: bytes) -> list[str]:
    """The results (JSON) vosk's `rec` gives for `pcm`, fed a fifth of a second at a time:
    one at each pause it ends, the final one last."""
    results = []
    step = BYTES_PER_S // 5
    for i in range(0, len(pcm), step):
        if rec.AcceptWaveform(pcm[i : i + step]):
            results.append(rec.Result())
    results.append(_final_result(rec))
    return results


def _final_result(rec: Any) -> str:
    """vosk's final result, which ends the utterance and drops its features. Right after
    vosk's own endpoint the final result is empty and keeps them, for the next utterance
    to decode first (sori.hearing.stt.vosk); fed nothing, vosk runs again, and its final
    result then ends the utterance."""
    rec.AcceptWaveform(b"")
    return rec.FinalResult()


def _run(words: list[dict], first: int, syllables: int) -> tuple[str, int] | None:
    """The words from `first` on that together have exactly `syllables` characters, as
    (their text, the index of the last); None when no run does."""
    text = ""
    for last in range(first, len(words)):
        text += str(words[last].get("word", ""))
        if len(text) >= syllables:
            return (text, last) if len(text) == syllables else None
    return None


def _contains(words: list[str], wanted: list[str]) -> bool:
    n = len(wanted)
    return any(words[i : i + n] == wanted for i in range(len(words) - n + 1))


def _score(raw: str) -> float:
    best = (json.loads(raw).get("alternatives") or [{}])[0]
    return float(best.get("confidence", 0.0))
