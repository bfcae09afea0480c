"""Intents the speaker answers itself: timers, alarms, the time and the date, and stopping
whatever rings ("그만" while an alarm rings silences it)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sori.acting.actions.base import Command, Result
from sori.acting.actions.clock_times import next_alarm
from sori.acting.actions.saying import say_clock, say_date, say_duration, say_time
from sori.acting.actions.timers import ALARM, TIMER, Timer, Timers
from sori.core.errors import BackendError

log = logging.getLogger(__name__)

LOCAL_INTENTS = frozenset(
    {
        "HassStartTimer",
        "HassCancelTimer",
        "HassCancelAllTimers",
        "HassTimerStatus",
        "HassGetCurrentTime",
        "HassGetCurrentDate",
        "SoriSetAlarm",
        "SoriCancelAlarm",
        "HassNevermind",
    }
)
"""Intents answered on the device, with no home device involved."""


def timer_seconds(slots: dict[str, Any], prefix: str = "") -> int:
    """Seconds from HA's timer slots (hours, minutes, seconds), numbers or numeric text."""
    total = 0
    for key, scale in (("hours", 3600), ("minutes", 60), ("seconds", 1)):
        value = slots.get(prefix + key)
        if value in (None, ""):
            continue
        try:
            total += int(float(value) * scale)
        except (TypeError, ValueError, OverflowError):  # OverflowError: "inf"
            raise BackendError(f"timer {key} {value!r} is not a number") from None
    return total


class LocalHandler:
    """Answers timer, alarm, time and date intents on the device."""

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
        """The wall-clock time now, aware of the home's time zone when one is configured."""

    def _say(self, ko: str, en: str) -> str:
        return en if self.language == "en" else ko

    async def handle(self, command: Command) -> Result:
        intent, slots = command.intent, command.slots
        if intent == "HassGetCurrentTime":
            return Result("time", say_time(self.now(), self.language))
        if intent == "HassGetCurrentDate":
            return Result("date", say_date(self.now(), self.language))
        if intent == "HassNevermind":
            stopped = self.timers.stop_ringing()
            if not stopped:  # nothing rings: the preset's own reply
                return Result("nothing rings")
            return Result(f"stopped {stopped}", self._say("알람을 껐어요.", "Stopped."))
        if intent == "HassStartTimer":
            return self._start_timer(slots)
        if intent == "SoriSetAlarm":
            at = next_alarm(slots, self.now())
            alarm = self.timers.alarm(at.timestamp(), str(slots.get("name", "")))
            when = say_clock(at, self.now(), self.language)
            return Result(
                f"alarm {alarm.id} at {at.isoformat()}",
                self._say(f"{when}에 알람을 맞췄어요.", f"Alarm set for {when}."),
            )
        if intent in ("HassCancelTimer", "HassCancelAllTimers", "SoriCancelAlarm"):
            return self._cancel(intent, slots)
        if intent == "HassTimerStatus":
            return self._status()
        raise BackendError(f"{intent} is not handled on the device")

    def _start_timer(self, slots: dict[str, Any]) -> Result:
        seconds = timer_seconds(slots)
        if seconds <= 0:
            return Result("no duration", self._say("몇 분으로 맞출까요?", "For how long?"))
        timer = self.timers.start(seconds, str(slots.get("name", "")))
        length = say_duration(seconds, self.language)
        called = f"{timer.name} {length}" if timer.name else length  # "라면 삼 분 타이머"
        return Result(
            f"timer {timer.id} {seconds} s",
            self._say(f"{called} 타이머를 시작했어요.", f"{called} timer started."),
        )

    def _cancel(self, intent: str, slots: dict[str, Any]) -> Result:
        # A ringing alarm is what "알람 꺼" means first.
        if intent != "SoriCancelAlarm" and self.timers.stop_ringing():
            return Result("stopped ringing", self._say("알람을 껐어요.", "Stopped."))
        if intent == "HassCancelAllTimers":
            n = self.timers.cancel_all()
            said = self._say("모든 타이머와 알람을 취소했어요.", "All timers and alarms cancelled.")
            return Result(f"cancelled {n}", said) if n else self._none()
        if intent == "SoriCancelAlarm":
            at = next_alarm(slots, self.now())
            if not self.timers.cancel(kind=ALARM, at_s=at.timestamp()):
                return Result(
                    "no such alarm",
                    self._say(
                        f"{say_clock(at, self.now(), self.language)} 알람은 없어요.",
                        "There is no such alarm.",
                    ),
                )
            when = say_clock(at, self.now(), self.language)
            return Result(
                "cancelled alarm", self._say(f"{when} 알람을 취소했어요.", "Alarm cancelled.")
            )
        seconds = timer_seconds(slots, "start_")
        cancelled = self._soonest(str(slots.get("name", "")), seconds)
        if cancelled is None:
            return self._none()
        return Result(
            f"cancelled {cancelled.kind} {cancelled.id}",
            self._say(
                f"{self._called(cancelled)}{'을' if cancelled.kind == ALARM else '를'} 취소했어요.",
                f"Cancelled the {cancelled.kind}.",
            ),
        )

    def _soonest(self, name: str, seconds: int) -> Timer | None:
        fits = [
            t
            for t in self.timers.active()
            if (not name or t.name == name) and (not seconds or t.seconds == seconds)
        ]
        if fits and self.timers.cancel(name, fits[0].kind, fits[0].seconds, fits[0].ends_s):
            return fits[0]
        return None

    def _called(self, timer: Timer) -> str:
        """ "오 분 타이머", "파스타 타이머", "오전 일곱 시 알람"."""
        if timer.kind == ALARM:
            at = datetime.fromtimestamp(timer.ends_s, self.now().tzinfo)
            return f"{say_clock(at, self.now(), self.language)} 알람"
        return f"{timer.name or say_duration(round(timer.seconds), self.language)} 타이머"

    def _status(self) -> Result:
        items = self.timers.active()
        if not items:
            return self._none()
        said = []
        for item in items[:3]:
            if item.kind == TIMER:
                left = say_duration(round(self.timers.remaining_s(item)), self.language)
                said.append(self._say(f"{self._called(item)} {left} 남았어요.", f"{left} left."))
            else:
                said.append(self._say(f"{self._called(item)}이 있어요.", "An alarm is set."))
        return Result(f"{len(items)} waiting", " ".join(said))

    def _none(self) -> Result:
        return Result(
            "none", self._say("맞춰 둔 타이머나 알람이 없어요.", "No timer or alarm is set.")
        )

    async def close(self) -> None:
        self.timers.close()  # what is set stays on disk for the next start
