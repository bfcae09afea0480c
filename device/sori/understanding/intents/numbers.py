"""Spoken numbers to digits: Sino-Korean (이십삼), native Korean (스물다섯), English words.

Only numbers followed by a unit are converted ("오 분" → "5분"), because bare numeral
syllables are everyday words ("이" is also a particle, "세" begins 세탁기).
"""

from __future__ import annotations

import re

SINO_DIGITS = {"영": 0, "공": 0, "일": 1, "이": 2, "삼": 3, "사": 4, "오": 5, "육": 6, "륙": 6,
               "칠": 7, "팔": 8, "구": 9}  # fmt: skip
SINO_UNITS = {"십": 10, "백": 100, "천": 1000}
NATIVE_TENS = {"열": 10, "스물": 20, "스무": 20, "서른": 30, "마흔": 40, "쉰": 50, "예순": 60,
               "일흔": 70, "여든": 80, "아흔": 90}  # fmt: skip
NATIVE_ONES = {"하나": 1, "한": 1, "둘": 2, "두": 2, "셋": 3, "세": 3, "석": 3, "넷": 4, "네": 4,
               "넉": 4, "다섯": 5, "여섯": 6, "일곱": 7, "여덟": 8, "아홉": 9}  # fmt: skip

# Units after which a spoken number is converted. "퍼센트"/"프로"/"%" all become "%".
# "시" (o'clock) comes after "시간" so that 세 시간 stays hours.
UNITS = ("시간", "퍼센트", "프로", "%", "도", "분", "초", "단계", "개", "시")
# Single-syllable numeral + unit written together that are ordinary words instead.
_WORDS_NOT_NUMBERS = frozenset(
    "구분 일분 이분 사분 일초 이초 이도 오도 사도 일개 이개 일시 이시 사시 오시 구시 칠시".split()
)

_SINO = "[영공일이삼사오육륙칠팔구십백천만]"
_NATIVE = "|".join(
    sorted({*NATIVE_TENS, *NATIVE_ONES, *(t + o for t in NATIVE_TENS for o in NATIVE_ONES)},
           key=len, reverse=True)
)  # fmt: skip
_UNIT = "|".join(UNITS)
_SPOKEN_NUMBER = re.compile(
    rf"(?<![가-힣0-9])(?P<num>{_SINO}+(?: {_SINO}+)*|{_NATIVE})(?P<space> ?)(?P<unit>{_UNIT})"
)
# A longer Sino-Korean number stands alone too ("볼륨 삼십으로"): two syllables or more
# with a place word (십, 백, 천), at a word start, before a particle or the word's end.
_BARE_SINO = re.compile(
    rf"(?<![가-힣0-9])(?P<num>{_SINO}*[십백천]{_SINO}*)(?=$|\s|으로|로|까지|에|이야|야)"
)
# "마이너스 5", "영하 5" (below zero): the sign stays with the number as "-5".
_NEGATIVE = re.compile(r"(?<![가-힣])(?:마이너스|영하) ?(?=\d)")
_HALF_HOUR = re.compile(r"(\d+) ?시간 ?반")
_HALF_MINUTE = re.compile(r"(\d+) ?분 ?반")
_HALF_PAST = re.compile(r"(\d+) ?시 ?반")  # 6시 반: half past six

_EN_ONES = {
    word: i
    for i, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_EN_TENS = {
    word: 10 * (i + 2)
    for i, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
_EN_WORD = "|".join(sorted([*_EN_ONES, *_EN_TENS, "hundred"], key=len, reverse=True))
_EN_NUMBER = re.compile(rf"\b(?:{_EN_WORD})(?:[ -](?:{_EN_WORD}))*\b")


def sino_value(text: str) -> int | None:
    """ "이십삼" → 23, "천이백" → 1200, "만" → 10000; None when not a Sino-Korean number."""
    text = text.replace(" ", "")
    if not text:
        return None
    total, section, digit = 0, 0, None
    for char in text:
        if char in SINO_DIGITS:
            if digit is not None:
                return None  # two digits in a row ("이삼") is not a number word
            digit = SINO_DIGITS[char]
        elif char in SINO_UNITS:
            section += (1 if digit is None else digit) * SINO_UNITS[char]
            digit = None
        elif char == "만":
            total += (section + (digit or 0) or 1) * 10000
            section, digit = 0, None
        else:
            return None
    return total + section + (digit or 0)


def native_value(text: str) -> int | None:
    """ "스물다섯" → 25, "한" → 1; None when not a native Korean number."""
    for tens_word, tens in NATIVE_TENS.items():
        if text.startswith(tens_word):
            rest = text[len(tens_word) :]
            if not rest:
                return tens
            ones = NATIVE_ONES.get(rest)
            return tens + ones if ones else None
    return NATIVE_ONES.get(text)


def _bare_sino(found: re.Match[str]) -> str:
    spoken = found.group("num")
    value = sino_value(spoken) if len(spoken) >= 2 else None
    return found.group(0) if value is None else str(value)


def sino_words(value: int) -> str:
    """23 → "이십삼", 100 → "백", 0 → "영": how a number is read aloud (Sino-Korean)."""
    if value == 0:
        return "영"
    digits = "영일이삼사오육칠팔구"
    words = []
    for place, unit in ((10000, "만"), (1000, "천"), (100, "백"), (10, "십"), (1, "")):
        count, value = divmod(value, place)
        if count:
            words.append(("" if count == 1 and unit else digits[count]) + unit)
    return "".join(words)


def english_value(text: str) -> int | None:
    """ "twenty three" → 23, "one hundred five" → 105."""
    total = 0
    for word in re.split(r"[ -]", text):
        if word == "hundred":
            total = (total or 1) * 100
        elif word in _EN_ONES:
            total += _EN_ONES[word]
        elif word in _EN_TENS:
            total += _EN_TENS[word]
        else:
            return None
    return total


def digits_for_numbers(text: str) -> str:
    """Replace spoken numbers before units with digits, and 반 (half) with its minutes."""

    def replace(found: re.Match[str]) -> str:
        spoken, unit = found.group("num"), found.group("unit")
        if not found.group("space") and (spoken + unit) in _WORDS_NOT_NUMBERS:
            return found.group(0)
        value = sino_value(spoken)
        if value is None:
            value = native_value(spoken)
        if value is None:
            return found.group(0)
        return f"{value}{unit}"

    text = _SPOKEN_NUMBER.sub(replace, text)
    text = _BARE_SINO.sub(_bare_sino, text)
    text = _HALF_HOUR.sub(r"\1시간 30분", text)
    text = _HALF_MINUTE.sub(r"\1분 30초", text)
    text = _HALF_PAST.sub(r"\1시 30분", text)
    text = _EN_NUMBER.sub(lambda m: str(english_value(m.group(0))), text)
    return _NEGATIVE.sub("-", text)
