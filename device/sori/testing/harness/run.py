"""Run a manifest: every fixture under every augmentation (the clean original first),
each run by a `Runner` (runner.py), or an `ActingRunner` (act.py) when what is heard is
acted on.

With `jobs` above 1 the runs are shared among worker processes; each loads the config,
the presets and the speech recognizer once, and takes runs until none are left. Results
come back in manifest order whatever the number of workers.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.util
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from sori.testing.harness.act import ActingRunner
from sori.testing.harness.manifest import Manifest
from sori.testing.harness.runner import Runner, Understanding, load_understanding

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""Called with (runs done, runs in all) as runs finish."""


_RUNNER: Runner | None = None


def _runner(manifest: Manifest, understanding: Understanding | None, act: bool) -> Runner:
    if act:  # the daemon's stages too: voice, handlers
        return ActingRunner(manifest, understanding)
    return Runner(manifest, understanding)


def _start_worker(manifest: Manifest, understanding: Understanding, act: bool) -> None:
    global _RUNNER
    _RUNNER = _runner(manifest, understanding, act)
    # atexit does not run in pool workers; multiprocessing's own finalizers do
    multiprocessing.util.Finalize(None, _RUNNER.close, exitpriority=10)


def _run_in_worker(case: tuple[int, int]) -> dict[str, Any]:
    assert _RUNNER is not None, "worker started without a runner"
    return _RUNNER.run(*case)


def run_manifest(
    manifest: Manifest,
    jobs: int = 1,
    progress: Progress | None = None,
    understanding: Understanding | None = None,
    act: bool = False,
) -> list[dict[str, Any]]:
    """Every fixture x augmentation of `manifest`, in manifest order. With `act`, what is
    heard goes on through the daemon, whose handlers really act (sori.testing.harness.act)."""
    cases = [
        (f, a) for f in range(len(manifest.fixtures)) for a in range(len(manifest.augmentations))
    ]
    done = 0
    if progress:
        progress(0, len(cases))
    if jobs <= 1:
        runner = _runner(manifest, understanding, act)
        results = []
        try:
            for case in cases:
                results.append(runner.run(*case))
                done += 1
                if progress:
                    progress(done, len(cases))
        finally:
            runner.close()
        return results
    # fork: workers start at once and inherit nothing heavy (models load after the fork)
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(cases)),
        mp_context=multiprocessing.get_context(method),
        initializer=_start_worker,
        initargs=(manifest, understanding or load_understanding(manifest), act),
    ) as pool:
        futures = {pool.submit(_run_in_worker, case): i for i, case in enumerate(cases)}
        results: list[dict[str, Any] | None] = [None] * len(cases)
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            done += 1
            if progress:
                progress(done, len(cases))
    return [r for r in results if r is not None]
