"""Timers and alarms that a household can trust: kept on disk, rung until stopped.

Both are kept by wall-clock time (Unix seconds), so they survive a restart: the file
(`[alarms] state_file`) is rewritten on every change, read at start-up, and what came due
while the speaker was off is returned as missed, to be announced. A due item rings through
`on_ring` every `ring_every_s` until it is stopped ("그만", "알람 꺼") or `ring_max_s` has
passed. `tick()` does all of it at one instant; `run()` calls it when the next thing is due.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sori.core.config.schema import build, ranged
from sori.core.errors import ConfigError
from sori.core.files import read_json, replace_file, set_aside

log = logging.getLogger(__name__)

TIMER = "timer"
ALARM = "alarm"
IDLE_WAKE_S = 60.0
"""The runner looks again at least this often, in seconds (a wall clock may jump)."""
MAX_FILE_BYTES = 1 << 20
"""A timers file larger than this (1 MiB, some 20,000 timers) is not one Sori wrote."""


@dataclass
class Timer:
    """One timer or alarm."""

    id: int
    """Counts items from 1 (kept across restarts)."""
    seconds: float
    """A timer's full length, in seconds; 0 for an alarm."""
    ends_s: float
    """Wall-clock time it rings at, in Unix seconds."""
    name: str = ""
    """What the user called it ("파스타"), or empty."""
    kind: str = ranged(TIMER, choices=(TIMER, ALARM))
    """ "timer" (a duration) or "alarm" (a clock time)."""
    ringing_since_s: float | None = None
    """When it began to ring, in Unix seconds; None while it waits."""
    next_ring_s: float = 0.0
    """When it rings again while ringing, in Unix seconds."""


def parse_timers(data: Any) -> list[Timer]:
    """The timers of a timers file's JSON, each field checked like a config key (every
    time a finite number, `kind` "timer" or "alarm"); ConfigError names the first wrong
    one ("timers[0].ends_s must be a number, got a string")."""
    if not isinstance(data, list):
        raise ConfigError(f"must be a list of timers, got {type(data).__name__}")
    return [build(Timer, item, f"timers[{i}]", "") for i, item in enumerate(data)]


class Timers:
    """Timers and alarms; ring through `on_ring` until stopped."""

    def __init__(
        self,
        on_ring: Callable[[Timer], Awaitable[None]] | None = None,
        *,
        path: str | Path | None = None,
        now: Callable[[], float] = time.time,
        ring_max_s: float = 60.0,
        ring_every_s: float = 5.0,
        autorun: bool = True,
    ) -> None:
        self.on_ring = on_ring
        self.path = Path(path) if path else None
        self.now = now
        self.ring_max_s = ring_max_s
        self.ring_every_s = ring_every_s
        self.autorun = autorun
        """Start the background runner on the first timer (tests drive `tick()` instead)."""
        self._timers: dict[int, Timer] = {}
        self._ids = itertools.count(1)
        self._wake: asyncio.Event | None = None
        self._runner: asyncio.Task | None = None
        self.missed: list[Timer] = []
        """Items that came due while the speaker was off (filled by `load`)."""

    # -- disk --------------------------------------------------------------------------------

    def load(self) -> list[Timer]:
        """Read the file: waiting items are kept, those already due (or ringing when the
        speaker stopped) are returned as missed and dropped. A missing file is no items; a
        damaged one (not JSON, a wrong shape, a time that is no finite number) is set aside
        and logged, never fatal."""
        if self.path is None or not self.path.exists():
            return []
        try:
            items = parse_timers(read_json(self.path, MAX_FILE_BYTES))
        except (OSError, ValueError, ConfigError) as exc:
            set_aside(self.path, str(exc), "starting with no timers or alarms")
            return []
        now = self.now()
        self.missed = [t for t in items if t.ringing_since_s is not None or t.ends_s <= now]
        self._timers = {t.id: t for t in items if t not in self.missed}
        self._ids = itertools.count(max((t.id for t in items), default=0) + 1)
        if self.missed:
            log.warning("%d timer(s)/alarm(s) came due while stopped", len(self.missed))
            self._save()
        return self.missed

    def _save(self) -> None:
        if self.path is None:
            return
        data = [asdict(t) for t in self._timers.values()]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(self.path, json.dumps(data))  # never a half-written file
        except OSError as exc:
            log.error("cannot keep timers in %s: %s; check [alarms] state_file", self.path, exc)

    # -- setting and stopping ----------------------------------------------------------------

    def start(self, seconds: float, name: str = "") -> Timer:
        """A timer ringing `seconds` from now."""
        return self._add(Timer(next(self._ids), seconds, self.now() + seconds, name, TIMER))

    def alarm(self, at_s: float, name: str = "") -> Timer:
        """An alarm ringing at `at_s` (Unix seconds)."""
        return self._add(Timer(next(self._ids), 0.0, at_s, name, ALARM))

    def _add(self, timer: Timer) -> Timer:
        self._timers[timer.id] = timer
        self._save()
        self._poke()
        return timer

    def active(self) -> list[Timer]:
        """Waiting items, soonest first (ringing ones excluded)."""
        waiting = [t for t in self._timers.values() if t.ringing_since_s is None]
        return sorted(waiting, key=lambda t: t.ends_s)

    def ringing(self) -> list[Timer]:
        return [t for t in self._timers.values() if t.ringing_since_s is not None]

    def remaining_s(self, timer: Timer) -> float:
        return max(0.0, timer.ends_s - self.now())

    def stop_ringing(self) -> int:
        """Silence every ringing item; returns how many."""
        ringing = self.ringing()
        for timer in ringing:
            self._timers.pop(timer.id, None)
        if ringing:
            self._save()
        return len(ringing)

    def cancel(self, name: str = "", kind: str = "", seconds: float = 0, at_s: float = 0) -> int:
        """Cancel the one item that fits (its name, kind, length or ring time), else the
        soonest; returns how many stopped (0 or 1)."""
        fits = [
            t
            for t in self.active()
            if (not name or t.name == name)
            and (not kind or t.kind == kind)
            and (not seconds or t.seconds == seconds)
            and (not at_s or abs(t.ends_s - at_s) < 60)
        ]
        for timer in fits[:1]:
            self._timers.pop(timer.id, None)
        if fits:
            self._save()
        return len(fits[:1])

    def cancel_all(self) -> int:
        count = len(self._timers)
        self._timers.clear()
        self._save()
        return count

    # -- ringing -----------------------------------------------------------------------------

    async def tick(self) -> None:
        """Ring what is due now; stop what has rung `ring_max_s`."""
        now = self.now()
        due: list[Timer] = []
        for timer in list(self._timers.values()):
            if timer.ringing_since_s is None and timer.ends_s <= now:
                timer.ringing_since_s = now
                timer.next_ring_s = now
                log.info("%s %d (%s) rings", timer.kind, timer.id, timer.name or timer.ends_s)
                self._save()
            if timer.ringing_since_s is None:
                continue
            if now - timer.ringing_since_s >= self.ring_max_s:
                log.info("%s %d rang %g s unanswered; stopped", timer.kind, timer.id, now)
                self._timers.pop(timer.id, None)
                self._save()
            elif timer.next_ring_s <= now:
                timer.next_ring_s = now + self.ring_every_s
                due.append(timer)
        for timer in due:
            if self.on_ring is not None and timer.id in self._timers:
                await self.on_ring(timer)

    def next_event_s(self) -> float | None:
        """When `tick` next has something to do, in Unix seconds; None when nothing waits."""
        times = [
            t.ends_s if t.ringing_since_s is None else t.next_ring_s for t in self._timers.values()
        ]
        return min(times, default=None)

    async def run(self) -> None:
        """Tick whenever something is due, until cancelled."""
        self._wake = asyncio.Event()
        while True:
            try:
                await self.tick()
            except Exception as exc:  # a failing ring must not end the timers
                log.error("ringing failed: %s", exc)
            upcoming = self.next_event_s()
            wait_s = IDLE_WAKE_S if upcoming is None else upcoming - self.now()
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, min(wait_s, IDLE_WAKE_S)))

    def ensure_running(self) -> None:
        """Start the runner (from a running event loop) unless it runs already."""
        if self._runner is None or self._runner.done():
            self._runner = asyncio.get_running_loop().create_task(self.run(), name="timers")

    def _poke(self) -> None:
        if not self.autorun:
            return
        with contextlib.suppress(RuntimeError):  # no loop yet: `ensure_running` at start
            self.ensure_running()
        if self._wake is not None:
            self._wake.set()

    def close(self) -> None:
        """Stop the runner; items stay on disk for the next start."""
        if self._runner is not None:
            self._runner.cancel()
