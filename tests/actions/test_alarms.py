"""Timers and alarms a household trusts, on a fake wall clock: kept across a restart (missed
ones reported), rung until stopped or for at most ring_max_s, listed and cancelled."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from sori.acting.actions.base import Command
from sori.acting.actions.local import LocalHandler
from sori.acting.actions.timers import Timers

SEOUL = ZoneInfo("Asia/Seoul")
START = datetime(2026, 12, 1, 22, 30, tzinfo=SEOUL)


class WallClock:
    def __init__(self) -> None:
        self.t = START.timestamp()

    def __call__(self) -> float:
        return self.t

    def datetime(self) -> datetime:
        return datetime.fromtimestamp(self.t, SEOUL)

    def advance(self, seconds: float) -> None:
        self.t += seconds


def kit(path, clock, rings=None, **kw):
    async def ring(timer):
        rings.append((timer.kind, clock()))

    timers = Timers(ring, path=path, now=clock, autorun=False, **kw)
    timers.load()
    return timers, LocalHandler(timers, "ko", clock.datetime)


def say(local, intent, **slots) -> str:
    return asyncio.run(local.handle(Command(intent, slots))).speech


def test_an_alarm_set_at_a_clock_time_survives_a_restart_and_rings_until_stopped(tmp_path):
    path, clock, rings = tmp_path / "timers.json", WallClock(), []
    _, local = kit(path, clock, rings)
    said = say(local, "SoriSetAlarm", hour=7, minute=30, day_part="am", alarm_day="tomorrow")
    assert said == "내일 오전 일곱 시 반에 알람을 맞췄어요."
    # restart: a new Timers reads the file
    timers, local = kit(path, clock, rings, ring_every_s=5, ring_max_s=60)
    assert [t.kind for t in timers.active()] == ["alarm"]
    assert say(local, "HassTimerStatus") == "내일 오전 일곱 시 반 알람이 있어요."
    clock.advance(9 * 3600 - 1)
    asyncio.run(timers.tick())
    assert rings == []
    clock.advance(1)  # 07:30 the next morning
    for _ in range(3):
        asyncio.run(timers.tick())
        clock.advance(5)
    assert len(rings) == 3  # it keeps ringing
    assert rings[0] == ("alarm", (START + timedelta(hours=9)).timestamp())
    assert say(local, "HassNevermind") == "알람을 껐어요."  # "그만"
    asyncio.run(timers.tick())
    assert len(rings) == 3 and timers.ringing() == [] and timers.active() == []


def test_a_ring_nobody_stops_ends_after_ring_max_s(tmp_path):
    clock, rings = WallClock(), []
    timers, local = kit(tmp_path / "t.json", clock, rings, ring_every_s=5, ring_max_s=20)
    say(local, "HassStartTimer", minutes=1)
    for _ in range(20):
        clock.advance(5)
        asyncio.run(timers.tick())
    assert len(rings) == 4  # at 60, 65, 70, 75 s; stopped at 80 s
    assert timers.ringing() == []


def test_what_came_due_while_off_is_missed_not_rung(tmp_path):
    path, clock, rings = tmp_path / "timers.json", WallClock(), []
    _, local = kit(path, clock, rings)
    say(local, "HassStartTimer", minutes=5)
    say(local, "HassStartTimer", hours=2)
    clock.advance(600)  # the speaker was off for ten minutes
    timers, _ = kit(path, clock, rings)
    assert [t.seconds for t in timers.missed] == [300]
    assert [t.seconds for t in timers.active()] == [7200]
    asyncio.run(timers.tick())
    assert rings == []
    again, _ = kit(path, clock, rings)  # announced once, not at every start
    assert again.missed == []


def test_list_and_cancel_by_name_length_or_time(tmp_path):
    clock = WallClock()
    timers, local = kit(tmp_path / "t.json", clock, [])
    say(local, "HassStartTimer", minutes=5)
    say(local, "HassStartTimer", minutes=10, name="파스타")
    say(local, "SoriSetAlarm", hour=7)
    clock.advance(60)
    assert say(local, "HassTimerStatus") == (
        "오 분 타이머 사 분 남았어요. 파스타 타이머 구 분 남았어요. "
        "내일 오전 일곱 시 알람이 있어요."
    )
    assert say(local, "SoriCancelAlarm", hour=8) == "내일 오전 여덟 시 알람은 없어요."
    assert say(local, "SoriCancelAlarm", hour=7) == "내일 오전 일곱 시 알람을 취소했어요."
    assert say(local, "HassCancelTimer", name="파스타") == "파스타 타이머를 취소했어요."
    assert say(local, "HassCancelTimer", start_minutes=5) == "오 분 타이머를 취소했어요."
    assert timers.active() == []
    assert say(local, "HassCancelTimer") == "맞춰 둔 타이머나 알람이 없어요."


def test_a_corrupt_file_is_set_aside_not_fatal(tmp_path):
    path = tmp_path / "timers.json"
    path.write_text("{not json")
    timers, _ = kit(path, WallClock(), [])
    assert timers.active() == [] and len(list(tmp_path.glob("timers.json.bad-*"))) == 1
