"""Leaving `sori run` on time and without a crash, whatever is still running.

Native libraries (llama.cpp, vosk, onnxruntime) compute on worker threads. If the interpreter
tears down while one of them is still inside native code, the process dies with a
segmentation fault (exit 139); and asyncio would wait without limit for executor work and
for tasks that ignore cancellation. So the daemon stops its work with a deadline, and when
something is still running at the deadline it leaves with `os._exit` after flushing the
logs: the kernel reclaims everything, no destructor runs under a computing thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NoReturn

log = logging.getLogger(__name__)

FINAL_MARGIN_S = 0.5
"""Kept from the shutdown deadline for the interpreter's own teardown after a clean stop."""


class Workers(ThreadPoolExecutor):
    """The event loop's default executor (`asyncio.to_thread`) that knows whether any of its
    work is still queued or running, so shutdown can wait for it with a bound."""

    def __init__(self, max_workers: int | None = None) -> None:
        super().__init__(max_workers, thread_name_prefix="sori-worker")
        self._busy = 0
        self._idle = threading.Condition()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        with self._idle:
            self._busy += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._done(None)
            raise
        future.add_done_callback(self._done)  # also when cancelled before it ran
        return future

    def _done(self, _future: Future | None) -> None:
        with self._idle:
            self._busy -= 1
            self._idle.notify_all()

    @property
    def busy(self) -> int:
        """Work items queued or running."""
        return self._busy

    def drop_queued(self) -> None:
        """Cancel work that has not started; running work goes on (it cannot be stopped)."""
        self.shutdown(wait=False, cancel_futures=True)


def leftover_threads() -> list[str]:
    """Names of daemon threads still running (threads the interpreter would not wait for,
    so they may be inside native code when it tears down). Threads that native code made
    (llama.cpp's log callback) are not Python's to wait for and are left out."""
    dummy = getattr(threading, "_DummyThread", ())
    return [
        t.name
        for t in threading.enumerate()
        if t.daemon and t.is_alive() and not isinstance(t, dummy)
    ]


def exit_now(code: int, why: str) -> NoReturn:
    """Leave at once with `code`: logs flushed, no interpreter teardown (see the module)."""
    log.warning("exiting without teardown (%s still running)", why)
    for flushable in [*logging.getLogger().handlers, sys.stdout, sys.stderr]:
        with contextlib.suppress(Exception):  # leaving anyway
            flushable.flush()
    os._exit(code)


def stop_quietly_until_serving() -> None:
    """Before the event loop takes over the signals, SIGTERM or SIGINT ends `sori run` with
    exit 0 (nothing native runs yet, so unwinding is safe) instead of a kill by signal."""

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def ignore_stop_signals() -> None:
    """After shutdown: a second SIGTERM or Ctrl-C must not interrupt the last teardown."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
