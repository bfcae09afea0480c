"""Spontaneous Korean made plain for the matcher: the miss path's normaliser.

People do not speak to a device in canonical sentences. They hesitate ("음 거실 불 꺼
줘"), add adverbs that change nothing about the request ("공기청정기 이제 꺼 줘", "에어컨
좀 빨리 켜 줘"), and correct themselves ("거실 아니 안방 불 꺼 줘", "안방 말고 거실 불
꺼 줘"). Each of these is a closed class of Korean, so a small tagger over the words of
the utterance reads them without a morphological analyser (kiwipiepy costs seconds and
about 500 MB to load; these classes are a few dozen words):

- **Interjections and discourse markers** (간투사: 음, 어, 아, 그, 저기, 그러니까,
  있잖아 ...) carry no part of the request; dropped wherever they stand. A few (자, 야,
  그럼, 근데 ...) are markers only before the first word that says something.
- **Adverbs that do not change the request** (이제, 지금, 당장, 빨리, 얼른, 다시, 한번,
  좀, 그냥 ...) are dropped too; 그만 only when a verb of stopping follows (그만 꺼 = 꺼;
  "그만 틀어" is "stop playing", not "play"). 좀 before 있다/이따 ("in a while") is a time, and
  stays.
- **Negation is never dropped**: a sentence with a negator (안, 못, -지 않/말/마) gets no
  plain reading at all, so "불 안 꺼도 돼" stays what it was (refused).
- **Self-corrections** (아니, 아니다, 아니고, 말고, 아 아니 ...): what follows the marker
  replaces the word of the same kind before it (a room a room, a device a device, a verb a
  verb), and the words it replaces are gone: the last-named target wins, never both. A
  marker with nothing after it takes the request back ("불 꺼 줘 아니야"); "말고" before
  다른/나머지/다/모든 excludes ("안방 말고 다른 불 다 꺼") and is left to the language
  model.

Only whole words are dropped, and only words of these classes: the sentence's ending,
which carries its mood (question, past, reported speech, conditional), is never touched,
so the reading is refused wherever the sentence was. `Presets.match` asks for a reading
only when the utterance as heard matched nothing (the miss path).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sori.understanding.intents.korean import canonical_word, is_prohibition

# Word tags.
FILLER = "filler"
"""An interjection or discourse marker: dropped."""
ADVERB = "adverb"
"""An adverb that does not change the request: dropped."""
NEGATOR = "negator"
"""안, 못, -지 않/말/마: the sentence gets no reading."""
CORRECTION = "correction"
"""A self-correction marker: what follows replaces what came before."""
WORD = "word"
"""Anything else: kept."""

# Word kinds, for matching a correction to what it corrects; a word of another list of
# the packs (a colour, a level) is of that list's kind.
AREA = "area"
"""A room (the area list)."""
TARGET = "target"
"""A device's name or a word for a class of devices (불, 에어컨)."""
VERB = "verb"
"""A command's verb or a request ending (켜, 꺼 줘, 닫아)."""
NUMBER = "number"
"""A number (23도, 50%)."""
OTHER = "other"
"""A word the packs do not know."""

FILLERS = frozenset(
    "음 음음 으음 으 흠 엄 어 어어 아 아아 에 에에 저 저기 저기요 그 그게 그러니까 그니까 "
    "있잖아 있잖아요 있지 뭐지 뭐더라 뭐였지 뭐냐 막".split()
)
"""Interjections and hesitation words, wherever they stand."""

OPENERS = frozenset("자 야 응 그럼 그러면 근데 그런데 그래서 아무튼 암튼 그래".split())
"""Discourse markers only before the first word that says something ("자 불 꺼 줘")."""

ADVERBS = frozenset(
    "이제 이젠 지금 당장 빨리 빨리빨리 얼른 어서 바로 곧바로 즉시 다시 또 한번 좀 그냥 "
    "일단 우선 제발 혹시".split()
)
"""Adverbs of time, manner and politeness that leave the request as it is. Never: 안, 못
(negation), 더, 덜, 조금, 살짝 (amounts), 다, 모두, 전부 (quantifiers), 이따, 나중에,
내일 (a later time: the request is not for now)."""

STOP = "그만"
"""An adverb only when a verb of stopping follows (그만 꺼, 그만 티비 꺼); elsewhere a
word ("에어컨 그만 틀어": stop playing)."""
_STOPPING = ("꺼", "끄", "끌", "멈", "정지", "중지", "종료", "끝")

_LATER = ("있다", "있다가", "있으면", "이따", "이따가", "후", "후에", "뒤", "뒤에")
"""After 좀/조금: "in a while" (좀 있다 꺼 줘), a time, not a softener."""

CORRECTIONS = frozenset("아니 아니다 아니야 아니고 아니지 아니라 아니요 아니아니 말고 정정".split())
"""Self-correction markers."""

_EXCLUDES = frozenset("다른 나머지 빼고 제외하고".split())
"""After a correction marker: an exception ("안방 말고 다른 불"), not a correction."""
_ALL = frozenset("다 모든 전부 모두 전체 싹".split())
"""After 말고: "안방 말고 다 꺼" is every light but one, not a correction."""

_NEGATING = re.compile(
    r"^(안|못)(켜|켠|켰|꺼|끄|끈|껐|틀|열|닫|잠|해|하|돼|되|줘|주|맞|올|내|돌|멈|봐|보)"
    r"|않|^말아|^마요?$|^말$"
)
"""안/못 written onto a verb (안켜, 못꺼), 않 anywhere, 말아/마 (-지 마)."""

_CLOSED = FILLERS | OPENERS | ADVERBS | CORRECTIONS | {STOP, "한"}
"""Every word the tagger may drop or act on."""

# Lists whose values name a device or a class of devices.
TARGET_LISTS = ("name", "_light", "_fan", "_climate", "_tv", "cover_kind", "_<light>")


@dataclass(frozen=True, slots=True)
class Reading:
    """The utterance made plain: fillers and adverbs out, corrections applied."""

    text: str
    """The words kept, with spaces."""
    corrected: bool
    """A self-correction was applied (its reading is matched exactly, never fuzzily)."""


def tag(words: Sequence[str], verbs: frozenset[str] = frozenset()) -> list[str]:
    """The tag of each word. `verbs`: canonical command verbs, so that a syllable a
    recognizer split off a verb (닫 아) is no interjection."""
    tags: list[str] = []
    said = False  # a word that says something came before
    for i in range(len(words)):
        tags.append(_tag(words, i, said, verbs))
        said = said or tags[-1] == WORD
    return tags


def _tag(words: Sequence[str], i: int, said: bool, verbs: frozenset[str]) -> str:
    word = words[i]
    if _negates(word):
        return NEGATOR
    if word in CORRECTIONS or _glued_correction(word):
        return CORRECTION
    split_off = i > 0 and canonical_word(words[i - 1] + word) in verbs  # 닫 아
    if (word in FILLERS and not split_off) or (word in OPENERS and not said):
        return FILLER
    after = words[i + 1] if i + 1 < len(words) else ""
    if (word, after) == ("한", "번") or (words[i - 1] if i else "", word) == ("한", "번"):
        return ADVERB  # 한 번 켜 봐: 한번 said apart
    following = next((w for w in words[i + 1 :] if w not in FILLERS), "")
    if word in ("좀", "조금") and following.startswith(_LATER):
        return WORD  # 좀 있다 (in a while): a time
    stopping = word == STOP and any(w.startswith(_STOPPING) for w in words[i + 1 :])
    if word in ADVERBS or stopping:
        return ADVERB
    return WORD


def _negates(word: str) -> bool:
    return word in ("안", "못") or _NEGATING.search(word) is not None


def _glued_correction(word: str) -> bool:
    """ "안방말고": a noun with 말고 written onto it (not "켜지말고", a prohibition)."""
    return len(word) > 2 and word.endswith("말고") and not word.endswith("지말고")


def reading(
    text: str,
    kind: Callable[[str], str],
    verbs: frozenset[str] = frozenset(),
) -> Reading | None:
    """`text` (normalized spoken text, words apart) made plain, or None when nothing
    was dropped or corrected, or the sentence is negated or takes its request back.

    `kind(word)` says what a word is (AREA, TARGET, VERB, NUMBER or OTHER), for
    corrections."""
    words = text.split()
    if not any(w in _CLOSED or w.endswith("말고") for w in words):
        return None  # most misses: nothing of the classes to read
    if is_prohibition("".join(words)):
        return None
    tags = tag(words, verbs)
    if NEGATOR in tags:
        return None
    kept: list[str] = []
    for word, word_tag in zip(words, tags, strict=True):
        if word_tag == CORRECTION:
            if _glued_correction(word):
                kept.append(word[:-2])
            if not kept or kept[-1] != CORRECTION_MARK:
                kept.append(CORRECTION_MARK)
        elif word_tag == WORD:
            kept.append(word)
    if CORRECTION_MARK in kept:
        excluding = any(w.endswith("말고") for w in words)
        corrected = _correct(kept, kind, excluding)
        return None if corrected is None else Reading(" ".join(corrected), True)
    if len(kept) == len(words) or not kept:
        return None
    return Reading(" ".join(kept), False)


CORRECTION_MARK = "\x00"
"""Where a correction marker stood, in the kept words."""


def _correct(words: list[str], kind: Callable[[str], str], excluding: bool) -> list[str] | None:
    """`words` with each correction applied, last marker first; None when one cannot be.
    `excluding`: the marker 말고 was said, which before 다/모든 excludes."""
    while CORRECTION_MARK in words:
        at = len(words) - 1 - words[::-1].index(CORRECTION_MARK)
        before, after = words[:at], words[at + 1 :]
        if not after:
            return None  # "불 꺼 줘 아니야": the request is taken back
        if _EXCLUDES.intersection(after) or (excluding and _ALL.intersection(after)):
            return None  # "안방 말고 다른 불 다 꺼": an exception, not a correction
        if not before:
            words = after  # "아니, 불 꺼 줘": an opening no
            continue
        replaced = _replace(before, after, kind)
        if replaced is None:
            return None
        words = replaced
    return words


def _replace(before: list[str], after: list[str], kind: Callable[[str], str]) -> list[str] | None:
    """`before` with its last word of the kind `after` starts with replaced by `after`."""
    wanted = kind(after[0])
    if wanted == OTHER:
        return None  # a word the home does not know corrects nothing it can tell
    kinds = [kind(w) if w != CORRECTION_MARK else OTHER for w in before]
    has_verb = any(kind(w) == VERB for w in after)
    at = next((i for i in range(len(before) - 1, -1, -1) if kinds[i] == wanted), None)
    if wanted == VERB and at is not None:
        while at and kinds[at - 1] == VERB:  # the whole verb: 켜 줘
            at -= 1
    if at is None:
        # "에어컨 아니 거실 불 꺼 줘": nothing of the kind to replace; a whole command
        # after the marker stands alone when all before it was what it corrects
        if has_verb and wanted in (AREA, TARGET) and all(k in (AREA, TARGET) for k in kinds):
            return list(after)
        return None
    if has_verb:
        return before[:at] + after
    span = 0
    while at + span < len(before) and span < len(after) and kinds[at + span] != VERB:
        span += 1
    return before[:at] + after + before[at + span :]
