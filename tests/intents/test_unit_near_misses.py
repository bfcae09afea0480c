"""Alarm sentences are alarms, never timers (the near-miss of issue 12)."""

from __future__ import annotations

from sori.understanding.intents.compile import load_presets


def test_alarm_sentences_are_alarms_not_timers():
    presets = load_presets("ko", None, include_home_assistant=False)
    for text in ("알람 7시에 맞춰줘", "7시에 깨워줘", "알람 일곱 시에 맞춰 줘"):
        assert presets.match(text).intent == "SoriSetAlarm", text
    assert presets.match("7시간 타이머").intent == "HassStartTimer"
