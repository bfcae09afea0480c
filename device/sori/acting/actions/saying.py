"""Numbers, times and dates as words, so every voice (espeak-ng too) reads them right.

Korean counts hours with native numerals (세 시) and minutes, days and years with
Sino-Korean ones (오 분, 이십구 일).
"""

from __future__ import annotations

from datetime import datetime

_SINO_DIGITS = ("", "일", "이", "삼", "사", "오", "육", "칠", "팔", "구")
_NATIVE_HOURS = (
    "열두", "한", "두", "세", "네", "다섯", "여섯", "일곱", "여덟", "아홉", "열", "열한",
)  # fmt: skip
_WEEKDAYS_KO = ("월요일", "화요일", "수요일", "목요일", "금요일", "토요일", "일요일")


def sino(n: int) -> str:
    """Sino-Korean numeral: 0 → "영", 25 → "이십오", 2026 → "이천이십육"."""
    if n == 0:
        return "영"
    if n < 0:
        return "마이너스 " + sino(-n)
    words = []
    for value, unit in ((10**8, "억"), (10**4, "만")):
        if n >= value:
            head, n = divmod(n, value)
            words.append(("" if head == 1 and unit == "만" else sino(head)) + unit)
    for value, unit in ((1000, "천"), (100, "백"), (10, "십")):
        digit, n = divmod(n, value)
        if digit:
            words.append(("" if digit == 1 else _SINO_DIGITS[digit]) + unit)
    if n:
        words.append(_SINO_DIGITS[n])
    return "".join(words)


def say_time(now: datetime, language: str = "ko") -> str:
    """ "지금은 오후 세 시 오 분이에요." / "It is 3:05 PM." """
    if language == "en":
        return f"It is {now.strftime('%-I:%M %p')}."
    half = "오전" if now.hour < 12 else "오후"
    words = f"{half} {_NATIVE_HOURS[now.hour % 12]} 시"
    if now.minute:
        words += f" {sino(now.minute)} 분"
    return f"지금은 {words}이에요."


def say_date(now: datetime, language: str = "ko") -> str:
    """ "오늘은 십일월 이십구 일 일요일이에요." / "Today is Sunday, November 29." """
    if language == "en":
        return f"Today is {now.strftime('%A, %B')} {now.day}."
    month = {6: "유월", 10: "시월"}.get(now.month, f"{sino(now.month)}월")
    return f"오늘은 {month} {sino(now.day)} 일 {_WEEKDAYS_KO[now.weekday()]}이에요."


def say_duration(seconds: int, language: str = "ko") -> str:
    """330 → "오 분 삼십 초" / "5 minutes 30 seconds"."""
    hours, rest = divmod(max(0, int(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(hours, "시간", "hour"), (minutes, "분", "minute"), (secs, "초", "second")]
    if language == "en":
        said = [f"{n} {unit}{'s' if n != 1 else ''}" for n, _, unit in parts if n]
        return " ".join(said) or "0 seconds"
    said = [f"{sino(n)} {unit}" for n, unit, _ in parts if n]
    return " ".join(said) or "영 초"


def say_clock(at: datetime, now: datetime, language: str = "ko") -> str:
    """When an alarm rings, from `now`: "내일 오전 일곱 시 삼십 분" / "tomorrow 7:30 AM"."""
    days = (at.date() - now.date()).days
    if language == "en":
        day = {0: "", 1: "tomorrow "}.get(days, f"{at.strftime('%A')} ")
        return f"{day}{at.strftime('%-I:%M %p')}"
    day = {0: "", 1: "내일 ", 2: "모레 "}.get(days, f"{_WEEKDAYS_KO[at.weekday()]} ")
    half = "오전" if at.hour < 12 else "오후"
    words = f"{day}{half} {_NATIVE_HOURS[at.hour % 12]} 시"
    if at.minute == 30:
        words += " 반"
    elif at.minute:
        words += f" {sino(at.minute)} 분"
    return words
