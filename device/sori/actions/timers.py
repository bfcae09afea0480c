"""Timers, the time and the date: intents the speaker handles itself.

A timer is an asyncio task; when it ends the `on_ring` callback makes the speaker ring.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sori.actions.base import Command, Result
from sori.actions.saying import say_date, say_duration, say_time
from sori.errors import BackendError

log = logging.getLogger(__name__)

LOCAL_INTENTS = frozenset(
    {
        "HassStartTimer",
        "HassCancelTimer",
        "HassCancelAllTimers",
        "HassTimerStatus",
        "HassGetCurrentTime",
        "HassGetCurrentDate",
    }
)
"""Intents answered on the device, with no home device involved."""


@dataclass
class Timer:
    """One running timer."""

    id: int
    """Counts timers from 1."""
    seconds: float
    """Its full length, in seconds."""
    ends_s: float
    """Event-loop time it rings at, in seconds."""
    name: str = ""
    """What the user called it ("파스타"), or empty."""
    task: asyncio.Task | None = field(default=None, repr=False)


class Timers:
    """Running timers; ring through `on_ring` when they end."""

    def __init__(self, on_ring: Callable[[Timer], Awaitable[None]] | None = None) -> None:
        self.on_ring = on_ring
        self._timers: dict[int, Timer] = {}
        self._ids = itertools.count(1)

    def start(self, seconds: float, name: str = "") -> Timer:
        loop = asyncio.get_running_loop()
        timer = Timer(next(self._ids), seconds, loop.time() + seconds, name)
        timer.task = asyncio.create_task(self._run(timer), name=f"timer-{timer.id}")
        self._timers[timer.id] = timer
        return timer

    async def _run(self, timer: Timer) -> None:
        await asyncio.sleep(timer.seconds)
        self._timers.pop(timer.id, None)
        log.info("timer %d (%s) rings", timer.id, timer.name or f"{timer.seconds:g} s")
        if self.on_ring is not None:
            await self.on_ring(timer)

    def active(self) -> list[Timer]:
        return sorted(self._timers.values(), key=lambda t: t.ends_s)

    def remaining_s(self, timer: Timer) -> float:
        return max(0.0, timer.ends_s - asyncio.get_running_loop().time())

    def cancel(self, name: str = "") -> int:
        """Cancel the named timer, else the one ending soonest; returns how many stopped."""
        targets = [t for t in self.active() if not name or t.name == name][:1]
        for timer in targets:
            self._stop(timer)
        return len(targets)

    def cancel_all(self) -> int:
        timers = self.active()
        for timer in timers:
            self._stop(timer)
        return len(timers)

    def _stop(self, timer: Timer) -> None:
        self._timers.pop(timer.id, None)
        if timer.task is not None:
            timer.task.cancel()


def timer_seconds(slots: dict[str, Any]) -> int:
    """Seconds from HA's timer slots (hours, minutes, seconds), numbers or numeric text."""
    total = 0
    for key, scale in (("hours", 3600), ("minutes", 60), ("seconds", 1)):
        value = slots.get(key)
        if value in (None, ""):
            continue
        try:
            total += int(float(value) * scale)
        except (TypeError, ValueError):
            raise BackendError(f"timer {key} {value!r} is not a number") from None
    return total


NO_TIMER = ("실행 중인 타이머가 없어요.", "No timer is running.")


class LocalHandler:
    """Answers timer, time and date intents on the device."""

    name = "local"

    def __init__(
        self,
        timers: Timers,
        language: str = "ko",
        now: Callable[[], datetime] = datetime.now,
    ) -> None:
        self.timers = timers
        self.language = language
        self.now = now

    def _say(self, ko: str, en: str) -> str:
        return en if self.language == "en" else ko

    async def handle(self, command: Command) -> Result:
        intent, slots = command.intent, command.slots
        if intent == "HassGetCurrentTime":
            return Result("time", say_time(self.now(), self.language))
        if intent == "HassGetCurrentDate":
            return Result("date", say_date(self.now(), self.language))
        if intent == "HassStartTimer":
            seconds = timer_seconds(slots)
            if seconds <= 0:
                return Result("no duration", self._say("몇 분으로 맞출까요?", "For how long?"))
            timer = self.timers.start(seconds, str(slots.get("name", "")))
            length = say_duration(seconds, self.language)
            return Result(
                f"timer {timer.id} {seconds} s",
                self._say(f"{length} 타이머를 시작했어요.", f"{length} timer started."),
            )
        if intent in ("HassCancelTimer", "HassCancelAllTimers"):
            n = (
                self.timers.cancel_all()
                if intent == "HassCancelAllTimers"
                else self.timers.cancel(str(slots.get("name", "")))
            )
            if not n:
                return Result(
                    "no timer", self._say("실행 중인 타이머가 없어요.", "No timer is running.")
                )
            return Result(f"cancelled {n}", self._say("타이머를 취소했어요.", "Timer cancelled."))
        if intent == "HassTimerStatus":
            timers = self.timers.active()
            if not timers:
                return Result(
                    "no timer", self._say("실행 중인 타이머가 없어요.", "No timer is running.")
                )
            left = say_duration(round(self.timers.remaining_s(timers[0])), self.language)
            return Result(f"{len(timers)} running", self._say(f"{left} 남았어요.", f"{left} left."))
        raise BackendError(f"{intent} is not handled on the device")

    async def close(self) -> None:
        self.timers.cancel_all()
