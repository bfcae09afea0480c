"""How much work one call is, for the tests that check hostile input never blows up
matching: the CPU time of this thread, with the garbage collector paused.

Wall time is no measure of that on CI's busy two cores: it counts other processes, the
suite's other threads, and a full collection of the whole suite's heap that the call
happened to trigger (a 20 ms match once took 1.2 s of wall time there)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def cpu_seconds(work: Callable[[], Any]) -> tuple[float, Any]:
    """(the seconds of CPU this thread spent in `work()`, what it returned)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.thread_time()
        result = work()
        return time.thread_time() - started, result
    finally:
        if collecting:
            gc.enable()
