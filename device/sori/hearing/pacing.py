"""Where the hearing pipeline's frames come from and how time passes for it.

`Hearing` (sori.hearing.pipeline) is synchronous: push a frame, get its events. These drivers
feed it:

- `replay(frames, hearing, clock)`: as fast as the CPU allows, on a `ReplayClock`, which
  reports times as if the audio had arrived in real time (waiting for audio is simulated,
  processing time is real), so latencies read like a live microphone's (`sori replay`,
  the benchmarks).
- `pace(frames, clock, origin_ns)`: real-time pacing, like a microphone (`--realtime`).
- `hear(frames, hearing)`: the async driver for the daemon; blocking work runs on a
  worker thread, so the event loop stays free for actions and speech.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

from sori.core.clock import Clock
from sori.core.events import Event
from sori.hearing.audio.format import AudioFrame
from sori.hearing.pipeline import Hearing


class ReplayClock:
    """Simulated real time for replays.

    `arrive(t_ns)` says a frame became available at stream time `t_ns`: if the pipeline
    was idle, time jumps forward to it (waiting is simulated); if it was still busy, time
    stays where processing left it (the backlog is real). Between arrivals the clock runs
    at the speed of the real monotonic clock.
    """

    def __init__(self) -> None:
        self._base_ns = 0
        self._mark_ns = time.perf_counter_ns()

    def now_ns(self) -> int:
        return self._base_ns + (time.perf_counter_ns() - self._mark_ns)

    def arrive(self, t_ns: int) -> None:
        self._base_ns = max(self.now_ns(), t_ns)
        self._mark_ns = time.perf_counter_ns()


def replay(frames: Iterable[AudioFrame], hearing: Hearing, clock: ReplayClock) -> Iterator[Event]:
    """Run `frames` through `hearing` as fast as possible, in simulated real time: each
    frame becomes available when its last sample would have arrived."""
    for frame in frames:
        clock.arrive(hearing.origin_ns + frame.end_ns)
        yield from hearing.push(frame)
    yield from hearing.end()


def pace(frames: Iterable[AudioFrame], clock: Clock, origin_ns: int) -> Iterator[AudioFrame]:
    """Yield each frame no earlier than it would arrive from a microphone started at clock
    time `origin_ns`."""
    for frame in frames:
        wait_ns = origin_ns + frame.end_ns - clock.now_ns()
        if wait_ns > 0:
            time.sleep(wait_ns / 1e9)
        yield frame


async def frames_async(frames: Iterable[AudioFrame]) -> AsyncIterator[AudioFrame]:
    """A blocking frame iterator (a microphone) read on a worker thread."""
    iterator = iter(frames)
    done = object()
    while True:
        frame = await asyncio.to_thread(next, iterator, done)
        if frame is done:
            return
        yield frame  # type: ignore[misc]


async def hear(
    frames: AsyncIterable[AudioFrame] | Iterable[AudioFrame], hearing: Hearing
) -> AsyncIterator[Event]:
    """The async driver: events of `hearing` as frames arrive; recognition runs on a worker
    thread. The daemon consumes this and acts on `IntentCommitted` as soon as it comes."""
    source = frames if isinstance(frames, AsyncIterable) else frames_async(frames)
    async for frame in source:
        for event in await asyncio.to_thread(hearing.push, frame):
            yield event
    for event in await asyncio.to_thread(hearing.end):
        yield event
