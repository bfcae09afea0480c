"""Clocks. Every event is stamped in integer nanoseconds from one injectable clock."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """A source of monotonic time in nanoseconds."""

    def now_ns(self) -> int: ...


class MonotonicClock:
    """The real clock: `time.monotonic_ns`."""

    def now_ns(self) -> int:
        return time.monotonic_ns()


class FakeClock:
    """A clock that only moves when told to; for tests and simulated replay."""

    def __init__(self, start_ns: int = 0) -> None:
        self._now_ns = start_ns

    def now_ns(self) -> int:
        return self._now_ns

    def advance_ns(self, delta_ns: int) -> None:
        if delta_ns < 0:
            raise ValueError("a clock never runs backwards")
        self._now_ns += delta_ns
