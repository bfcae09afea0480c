"""Run a manifest: every fixture under every augmentation (the clean original first)
through the same hearing pipeline as the microphone (sori.assemble builds it,
sori.replaying replays and summarizes), judged against the expectations.

With `jobs` above 1 the runs are shared among worker processes; each loads the config,
the presets and the speech recognizer once, and takes runs until none are left. Results
come back in manifest order whatever the number of workers.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.util
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np

from sori.assemble.hearing import hearing_recognizer
from sori.assemble.understanding import home_from_config, presets_from_config
from sori.audio.augment import to_pcm16
from sori.audio.format import RATE_HZ, AudioFrame
from sori.audio.ring import FrameChunker
from sori.config import Config, load_config
from sori.harness import conditions
from sori.harness.judge import judge
from sori.harness.manifest import Manifest, check_intents
from sori.home import Home
from sori.intents.loader import load_fixtures
from sori.replaying import replay_source

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""Called with (runs done, runs in all) as runs finish."""


@dataclass(frozen=True)
class Understanding:
    """What a manifest runs against: its config and the presets over its home."""

    config: Config
    presets: Any


def load_understanding(manifest: Manifest) -> Understanding:
    """The manifest's config and home, compiled into presets; expected intents checked."""
    config = load_config(str(manifest.config) if manifest.config else None)
    presets = presets_from_config(config.intents, manifest_home(manifest, config))
    known = {block.intent for block in presets.blocks}
    check_intents(manifest, known)
    return Understanding(config, presets)


def manifest_home(manifest: Manifest, config: Config) -> Home:
    """The home the manifest names (HA fixture YAML or a TOML's [home]), else the config's."""
    if manifest.home is None:
        return home_from_config(config.home)
    if manifest.home.suffix == ".toml":
        return home_from_config(load_config(str(manifest.home)).home)
    return load_fixtures(manifest.home)


class PcmSource:
    """Pipeline PCM held in memory, as an audio source for sori.replaying."""

    def __init__(self, name: str, pcm: bytes, frame_ms: int) -> None:
        self.name = name
        self.pcm = pcm
        self.frame_ms = frame_ms

    def frames(self) -> Iterator[AudioFrame]:
        chunker = FrameChunker(self.frame_ms)
        out: list[AudioFrame] = [*chunker.push(self.pcm), *chunker.flush()]
        return iter(out)

    def close(self) -> None:
        pass


class Runner:
    """Runs of one manifest in one process: models loaded once, audio cached."""

    def __init__(self, manifest: Manifest, understanding: Understanding | None = None) -> None:
        self.manifest = manifest
        self.understanding = understanding or load_understanding(manifest)
        config = self.understanding.config
        self.recognizer = hearing_recognizer(config, self.understanding.presets)
        self._audio: dict[int, np.ndarray] = {}

    def audio(self, index: int) -> np.ndarray:
        if index not in self._audio:
            self._audio[index] = conditions.fixture_audio(self.manifest.fixtures[index])
        return self._audio[index]

    def hear(self, source: PcmSource) -> list[dict[str, Any]]:
        """One record per utterance heard in `source` (sori.replaying's fields)."""
        config = self.understanding.config
        return replay_source(source, config, self.recognizer, self.understanding.presets)

    def forget(self) -> None:
        """Each run starts in a room of its own: a denoiser (audio.denoise = "auto") keeps
        its state from one utterance to the next, which would make a run's result depend
        on the runs before it in the same worker."""
        forget_room = getattr(self.recognizer, "forget_room", None)
        if forget_room is not None:
            forget_room()

    def close(self) -> None:
        pass

    def run(self, fixture_index: int, augmentation_index: int) -> dict[str, Any]:
        """One fixture under one augmentation: its replay records, judged."""
        fixture = self.manifest.fixtures[fixture_index]
        augmentation = self.manifest.augmentations[augmentation_index]
        started = time.perf_counter()
        voices = []
        if augmentation.noise == "babble":  # the other recordings talk in the background
            own = set(fixture.audio)  # never the talker's own words (they would align)
            others = [f.index for f in self.manifest.fixtures if not own & set(f.audio)]
            voices = [self.audio(i) for i in others]
        rng = np.random.default_rng(conditions.seed(fixture, augmentation))
        signal = conditions.apply(self.audio(fixture_index), augmentation, rng, voices)
        config = self.understanding.config
        source = PcmSource(fixture.name, to_pcm16(signal), config.audio.frame_ms)
        self.forget()
        records = self.hear(source)
        verdict = judge(fixture, records, self.understanding.presets)
        return {
            "manifest": str(self.manifest.path),
            "fixture": fixture.name,
            "fixture_index": fixture.index,
            "audio": [str(p) for p in fixture.audio],
            "augmentation": augmentation.name,
            "noise": augmentation.noise,
            "snr_db": augmentation.snr_db,
            "passed": verdict.passed,
            "failures": verdict.failures,
            "false_actions": verdict.false_actions,
            "cer": verdict.cer,
            "audio_s": round(len(signal) / RATE_HZ, 3),
            "wall_s": round(time.perf_counter() - started, 3),
            "utterances": records,
            "checks": verdict.checks,
        }


_RUNNER: Runner | None = None


def _runner(manifest: Manifest, understanding: Understanding | None, act: bool) -> Runner:
    if act:
        from sori.harness.act import ActingRunner  # the daemon's stages: voice, handlers

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
    heard goes on through the daemon, whose handlers really act (sori.harness.act)."""
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
