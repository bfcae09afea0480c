"""One process's runs of a manifest: every fixture under one augmentation through the same
hearing pipeline as the microphone (sori.assemble builds it, sori.testing.replaying replays and
summarizes), judged against the expectations. `run.py` shares the runs among processes;
`act.py` extends the runner so what is heard is acted on by a real daemon.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from sori.assemble.hearing import array_layout, hearing_recognizer
from sori.assemble.understanding import home_from_config, presets_from_config
from sori.core.config import Config, load_config
from sori.core.errors import AudioError
from sori.core.home import Home
from sori.hearing.audio.array import plane_wave
from sori.hearing.audio.augment import to_pcm16
from sori.hearing.audio.format import RATE_HZ, AudioFrame, ChannelFrame
from sori.hearing.audio.ring import FrameChunker
from sori.hearing.audio.sources import ChannelChunker
from sori.testing.harness import conditions
from sori.testing.harness.judge import judge
from sori.testing.harness.manifest import Manifest, ManifestError, check_intents
from sori.testing.replaying import replay_source
from sori.understanding.intents.loader import load_fixtures


@dataclass(frozen=True)
class Understanding:
    """What a manifest runs against: its config and the presets over its home."""

    config: Config
    presets: Any


def load_understanding(manifest: Manifest) -> Understanding:
    """The manifest's config and home, compiled into presets; expected intents checked."""
    config = load_config(str(manifest.config) if manifest.config else None)
    check_channels(manifest, config)
    presets = presets_from_config(config.intents, manifest_home(manifest, config))
    known = {block.intent for block in presets.blocks}
    check_intents(manifest, known)
    return Understanding(config, presets)


def check_channels(manifest: Manifest, config: Config) -> None:
    """Every simulated room has as many microphones (its `mics`) as the config's array (1
    without one); a recording with no room of its own reaches a microphone array as a
    plane wave from in front of it (see `Runner.run`). Both are laid into the channels
    the board gives (`audio.array.mic_channels`)."""
    array = array_layout(config)
    wanted = 1 if array is None else array[0].channels
    for augmentation in manifest.augmentations:
        room = augmentation.room
        if room is not None and room.mics != wanted:
            raise ManifestError(
                f"augmentation {augmentation.name!r} gives {room.mics} microphone(s) but "
                f"the config's array has {wanted}: give its room mics: {wanted}"
            )


def manifest_home(manifest: Manifest, config: Config) -> Home:
    """The home the manifest names (HA fixture YAML or a TOML's [home]), else the config's."""
    if manifest.home is None:
        return home_from_config(config.home)
    if manifest.home.suffix == ".toml":
        return home_from_config(load_config(str(manifest.home)).home)
    return load_fixtures(manifest.home)


class PcmSource:
    """Pipeline PCM held in memory (interleaved when it has several channels), as an audio
    source for sori.testing.replaying."""

    def __init__(self, name: str, pcm: bytes, frame_ms: int, channels: int = 1) -> None:
        self.name = name
        self.pcm = pcm
        self.frame_ms = frame_ms
        self.channels = channels

    def frames(self) -> Iterator[AudioFrame]:
        chunker = FrameChunker(self.frame_ms)
        out: list[AudioFrame] = [*chunker.push(self.pcm), *chunker.flush()]
        return iter(out)

    def channel_frames(self, channels: int) -> Iterator[ChannelFrame]:
        """Each microphone's samples, as a recorded array's WAV gives them."""
        if channels != self.channels:
            raise AudioError(
                f"{self.name}: {self.channels} channel(s), but audio.channels is {channels}"
            )
        samples = np.frombuffer(self.pcm, "<i2").reshape(-1, channels) / np.float32(32768)
        chunker = ChannelChunker(self.frame_ms, channels)
        return iter([*chunker.push(samples.astype(np.float32)), *chunker.flush()])

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
        """One record per utterance heard in `source` (sori.testing.replaying's fields)."""
        config = self.understanding.config
        return replay_source(source, config, self.recognizer, self.understanding.presets)

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
        channels = config.audio.channels
        if (array := array_layout(config)) is not None:
            geometry, layout = array
            if signal.ndim == 1:  # no room of its own: a talker in front
                signal = layout.as_captured(plane_wave(signal, geometry))
            elif augmentation.room is not None:  # the room's microphones
                signal = layout.as_captured(signal)
        source = PcmSource(fixture.name, to_pcm16(signal), config.audio.frame_ms, channels)
        records = self.hear(source)
        talker_from_s = conditions.talker_from_s(self.audio(fixture_index), augmentation)
        verdict = judge(fixture, records, self.understanding.presets, talker_from_s)
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
