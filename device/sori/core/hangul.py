"""Hangul syllables as jamo, and a jamo-level distance between syllables.

Speech recognizers confuse syllables that share most of their jamo (안방 → 암방,
켜 → 켜, 꺼 → 거). Comparing jamo instead of whole syllables makes such near-misses
cheap and unrelated syllables expensive.
"""

from __future__ import annotations

from functools import lru_cache

_BASE = 0xAC00
_LAST = 0xD7A3
_JUNG_COUNT = 21
_JONG_COUNT = 28


def is_hangul(char: str) -> bool:
    return _BASE <= ord(char) <= _LAST


def syllable(initial: int, vowel: int, final: int = 0) -> str:
    """The Hangul syllable of jamo indices (initial, medial, final); final 0 means none."""
    return chr(_BASE + (initial * _JUNG_COUNT + vowel) * _JONG_COUNT + final)


def split_syllable(char: str) -> tuple[int, int, int]:
    """(initial, medial, final) jamo indices of a Hangul syllable; final 0 means none."""
    offset = ord(char) - _BASE
    return (
        offset // (_JUNG_COUNT * _JONG_COUNT),
        (offset // _JONG_COUNT) % _JUNG_COUNT,
        offset % _JONG_COUNT,
    )


def has_final(char: str) -> bool:
    """True when the syllable ends in a consonant (batchim)."""
    return is_hangul(char) and split_syllable(char)[2] != 0


def final_is_rieul(char: str) -> bool:
    """True when the batchim is ㄹ (which takes 로, not 으로)."""
    return is_hangul(char) and split_syllable(char)[2] == 8


@lru_cache(maxsize=16384)
def neighbour_keys(char: str) -> tuple[int, int, int]:
    """Three keys of a Hangul syllable, one per jamo left out: two syllables share a key
    exactly when they differ in at most one jamo (syllable_cost ≤ 1/3), so an index by
    these keys finds a syllable's near neighbours without comparing every pair."""
    initial, vowel, final = split_syllable(char)
    return (
        1 << 20 | vowel << 5 | final,
        2 << 20 | initial << 5 | final,
        3 << 20 | initial << 5 | vowel,
    )


def neighbour_index(chars) -> dict[int, tuple[int, ...]]:
    """For the Hangul characters of `chars` (a sequence), neighbour key → the positions of
    the characters with that key, in order (see neighbour_keys)."""
    index: dict[int, list[int]] = {}
    for position, char in enumerate(chars):
        if is_hangul(char):
            for key in neighbour_keys(char):
                index.setdefault(key, []).append(position)
    return {key: tuple(positions) for key, positions in index.items()}


def near_positions(index: dict[int, tuple[int, ...]], keys: tuple[int, int, int]) -> list[int]:
    """Positions (ascending) of the indexed characters within one jamo of the syllable
    whose neighbour_keys are `keys`, itself included."""
    a, b, c = index.get(keys[0], ()), index.get(keys[1], ()), index.get(keys[2], ())
    if not b and not c:
        return list(a)
    return sorted({*a, *b, *c})


# Medial vowels by index: ㅏ ㅐ ㅑ ㅒ ㅓ ㅔ ㅕ ㅖ ㅗ ㅘ ㅙ ㅚ ㅛ ㅜ ㅝ ㅞ ㅟ ㅠ ㅡ ㅢ ㅣ
MEDIALS = "ㅏㅐㅑㅒㅓㅔㅕㅖㅗㅘㅙㅚㅛㅜㅝㅞㅟㅠㅡㅢㅣ"


def medial(char: str) -> str:
    return MEDIALS[split_syllable(char)[1]] if is_hangul(char) else ""


@lru_cache(maxsize=65536)
def syllable_cost(a: str, b: str) -> float:
    """Substitution cost of `a` for `b` in syllables: 0 same, 1/3 per differing jamo.

    Non-Hangul characters cost 0 when equal and 1 otherwise.
    """
    if a == b:
        return 0.0
    if not (is_hangul(a) and is_hangul(b)):
        return 1.0
    ja, jb = split_syllable(a), split_syllable(b)
    return sum(x != y for x, y in zip(ja, jb, strict=True)) / 3.0


# Jamo a recognizer hears for one another because they sound alike: initials of one
# place of articulation (plain, tense, aspirated), vowels that merge in speech, and
# finals that sound the same before a pause (coda neutralization) or are nasals.
_INITIAL_CLASSES = ("ㄱㄲㅋ", "ㄷㄸㅌ", "ㅂㅃㅍ", "ㅈㅉㅊ", "ㅅㅆ", "ㄴㄹ")
_INITIALS = "ㄱㄲㄴㄷㄸㄹㅁㅂㅃㅅㅆㅇㅈㅉㅊㅋㅌㅍㅎ"
_MEDIAL_CLASSES = ("ㅐㅔ", "ㅓㅕㅗ", "ㅕㅝ", "ㅙㅞㅚ", "ㅡㅜ", "ㅒㅖ")
_FINALS = " ㄱㄲㄳㄴㄵㄶㄷㄹㄺㄻㄼㄽㄾㄿㅀㅁㅂㅄㅅㅆㅇㅈㅊㅋㅌㅍㅎ"
_FINAL_CLASSES = ("ㄱㄲㅋ", "ㄷㅅㅆㅈㅊㅌㅎ", "ㅂㅍ", "ㄴㅁㅇ")


def _alike(classes: tuple[str, ...], a: str, b: str) -> bool:
    return any(a in group and b in group for group in classes)


def _differing(a: str, b: str) -> tuple[bool, ...]:
    """For each jamo in which Hangul syllables `a` and `b` differ (initial, medial, final
    in order): whether the two sound alike."""
    (i1, m1, f1), (i2, m2, f2) = split_syllable(a), split_syllable(b)
    found = []
    if i1 != i2:
        found.append(_alike(_INITIAL_CLASSES, _INITIALS[i1], _INITIALS[i2]))
    if m1 != m2:
        found.append(_alike(_MEDIAL_CLASSES, MEDIALS[m1], MEDIALS[m2]))
    if f1 != f2:
        found.append(_alike(_FINAL_CLASSES, _FINALS[f1], _FINALS[f2]))
    return tuple(found)


@lru_cache(maxsize=65536)
def sound_cost(a: str, b: str) -> float:
    """How differently Hangul syllables `a` and `b` sound: 1/3 per differing jamo, as
    syllable_cost, but 1/6 where the two jamo sound alike (ㅂ/ㅃ, ㅓ/ㅕ, ㅁ/ㅇ as finals).
    A recognizer hearing a word it was not told to expect (a name among syllables) swaps
    such jamo first. Non-Hangul characters cost 0 when equal and 1 otherwise."""
    if a == b:
        return 0.0
    if not (is_hangul(a) and is_hangul(b)):
        return 1.0
    return sum(1 / 6 if alike else 1 / 3 for alike in _differing(a, b))


@lru_cache(maxsize=65536)
def sounds_alike(a: str, b: str) -> bool:
    """True when Hangul syllables `a` and `b` differ in one jamo that sounds like the other
    (거/꺼, 켜/커, 쳐/춰, 안/암), not merely in any one jamo (닦/닫 is another verb)."""
    if not (is_hangul(a) and is_hangul(b)) or a == b:
        return False
    return _differing(a, b) == (True,)
