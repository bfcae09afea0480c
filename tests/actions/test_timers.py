from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from sori.acting.actions.base import Command
from sori.acting.actions.local import LocalHandler, timer_seconds
from sori.acting.actions.timers import Timers
from sori.core.errors import BackendError


def test_timer_slots_add_up_and_accept_numeric_text():
    assert timer_seconds({"minutes": 5}) == 300
    assert timer_seconds({"hours": "1", "minutes": "30", "seconds": 5}) == 5405
    with pytest.raises(BackendError, match="not a number"):
        timer_seconds({"minutes": "다섯"})
    for endless in ("inf", "-inf", "nan"):
        with pytest.raises(BackendError, match="not a number"):
            timer_seconds({"minutes": endless})


def test_a_timer_rings_through_the_callback():
    async def main():
        rung = asyncio.Event()
        seen = []

        async def ring(timer):
            seen.append(timer.name)
            rung.set()

        timers = Timers(ring)
        local = LocalHandler(timers)
        said = await local.handle(Command("HassStartTimer", {"seconds": 1, "name": "파스타"}))
        await asyncio.wait_for(rung.wait(), 5)
        return said, seen, timers.active()

    said, seen, active = asyncio.run(main())
    assert said.speech == "영 초 타이머를 시작했어요." or said.speech.endswith(
        "타이머를 시작했어요."
    )
    assert seen == ["파스타"]
    assert active == []


def test_status_and_cancel():
    async def main():
        local = LocalHandler(Timers())
        await local.handle(Command("HassStartTimer", {"minutes": 5}))
        status = await local.handle(Command("HassTimerStatus", {}))
        cancel = await local.handle(Command("HassCancelTimer", {}))
        again = await local.handle(Command("HassCancelTimer", {}))
        return status, cancel, again, local.timers.active()

    status, cancel, again, active = asyncio.run(main())
    assert status.speech in (
        "오 분 타이머 오 분 남았어요.",
        "오 분 타이머 사 분 오십구 초 남았어요.",
    )
    assert cancel.speech == "오 분 타이머를 취소했어요."
    assert again.speech == "맞춰 둔 타이머나 알람이 없어요."
    assert active == []


def test_time_and_date_come_from_the_clock():
    local = LocalHandler(Timers(), now=lambda: datetime(2026, 11, 29, 21, 40))
    time_reply = asyncio.run(local.handle(Command("HassGetCurrentTime", {})))
    date_reply = asyncio.run(local.handle(Command("HassGetCurrentDate", {})))
    assert time_reply.speech == "지금은 오후 아홉 시 사십 분이에요."
    assert date_reply.speech == "오늘은 십일월 이십구 일 일요일이에요."


def test_zero_length_timer_asks_for_a_duration():
    reply = asyncio.run(LocalHandler(Timers()).handle(Command("HassStartTimer", {})))
    assert reply.speech == "몇 분으로 맞출까요?"
