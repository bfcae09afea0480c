from __future__ import annotations

from datetime import datetime

from sori.acting.actions.saying import say_date, say_duration, say_time, sino


def test_sino_korean_numbers():
    assert [sino(n) for n in (0, 1, 10, 11, 23, 100, 2026, 10000, 15000)] == [
        "영", "일", "십", "십일", "이십삼", "백", "이천이십육", "만", "만오천",
    ]  # fmt: skip


def test_time_uses_native_hours_and_sino_minutes():
    assert say_time(datetime(2026, 11, 29, 15, 5)) == "지금은 오후 세 시 오 분이에요."
    assert say_time(datetime(2026, 11, 29, 0, 0)) == "지금은 오전 열두 시이에요."
    assert say_time(datetime(2026, 11, 29, 11, 30)) == "지금은 오전 열한 시 삼십 분이에요."
    assert say_time(datetime(2026, 11, 29, 15, 5), "en") == "It is 3:05 PM."


def test_date_reads_month_day_and_weekday():
    assert say_date(datetime(2026, 11, 29)) == "오늘은 십일월 이십구 일 일요일이에요."
    assert say_date(datetime(2026, 6, 1)) == "오늘은 유월 일 일 월요일이에요."
    assert say_date(datetime(2026, 11, 29), "en") == "Today is Sunday, November 29."


def test_durations():
    assert say_duration(330) == "오 분 삼십 초"
    assert say_duration(3600) == "일 시간"
    assert say_duration(61, "en") == "1 minute 1 second"
