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
