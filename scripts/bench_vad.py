"""Benchmark the voice detectors: false utterances in noise, speech kept at low SNR, the
scorer's CPU cost and where each puts the end of speech.

    PYTHONPATH=device .venv/bin/python scripts/bench_vad.py [--shared ../shared] [--seconds 60]

Noise is generated from fixed seeds (sori.hearing.audio.augment); speech is the shared read clips.
The end-of-speech delay is each backend's end minus a reference end: webrtcvad with no
noise floor on the clean clip, whose frames are exact at the end of a clean recording.
Each detector is built by the assembly (`sori.assemble.hearing`) from the embedded default
config with only `vad.backend` changed, so the figures are those of `sori run`'s VAD.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from sori.assemble.hearing import build_scorer, endpoint_settings
from sori.core.clock import FakeClock
from sori.core.config import Config
from sori.hearing.audio.augment import NOISE_KINDS, at_dbfs, make_noise, mix_at_snr, to_pcm16
from sori.hearing.audio.sources import FileSource
from sori.hearing.vad import Endpointer
from sori.testing.fakes import to_frames

RATE = 16_000


def vad_config(backend: str, **vad) -> Config:
    """The embedded default config with `vad.backend` (and any other `[vad]` keys) set."""
    base = Config()
    return replace(base, vad=replace(base.vad, backend=backend, **vad))


BACKENDS = {name: vad_config(name) for name in ("silero", "webrtc")}
BARE = vad_config("webrtc", noise_margin_db=0.0, start_ms=60)
"""webrtcvad with no noise floor and a quick start: the reference end of speech."""


def utterances(signal: np.ndarray, config: Config) -> list[tuple[float, float]]:
    endpointer = Endpointer(build_scorer(config), endpoint_settings(config), FakeClock())
    events = [e for f in to_frames(to_pcm16(signal), 20) if (e := endpointer.push(f))]
    if (last := endpointer.end_of_stream()) is not None:
        events.append(last)
    return [
        (a.audio_start_ns / 1e9, b.audio_end_ns / 1e9)
        for a, b in zip(events[::2], events[1::2], strict=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).parents[1].parent / "shared")
    parser.add_argument("--seconds", type=float, default=60.0, help="noise per kind and level")
    parser.add_argument("--clips", type=int, default=0, help="only the first N clips (0: all)")
    args = parser.parse_args()
    folder = args.shared / "audio" / "ko-read"
    rows = list(csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t"))
    rows = rows[: args.clips] if args.clips > 0 else rows
    clips = [
        np.frombuffer(FileSource(folder / r["file"]).pcm, "<i2").astype(np.float32) for r in rows
    ]

    print(f"false utterances per minute ({args.seconds:.0f} s of each noise)")
    print("noise\tdBFS\t" + "\t".join(BACKENDS) + "\twebrtc, no noise floor")
    for kind in NOISE_KINDS:
        for dbfs in (-40, -30, -20):
            noise = at_dbfs(
                make_noise(kind, int(RATE * args.seconds), np.random.default_rng(7)), dbfs
            )
            per_min = [len(utterances(noise, c)) * 60 / args.seconds for c in BACKENDS.values()]
            bare = len(utterances(noise, BARE))
            cells = [f"{x:.0f}" for x in per_min] + [f"{bare * 60 / args.seconds:.0f}"]
            print(f"{kind}\t{dbfs}\t" + "\t".join(cells))

    print("\nspeech kept in white noise: clips with exactly one utterance / all")
    for snr in (None, 20, 10, 5):
        cells = []
        for config in BACKENDS.values():
            ok = 0
            for i, clip in enumerate(clips):
                noisy = (
                    clip
                    if snr is None
                    else mix_at_snr(
                        clip, make_noise("white", len(clip), np.random.default_rng(i)), snr
                    )
                )
                ok += len(utterances(noisy, config)) == 1
            cells.append(f"{ok}/{len(clips)}")
        print(f"{'clean' if snr is None else f'{snr} dB'}\t" + "\t".join(cells))

    print("\nscorer CPU, real-time factor (one core)")
    frames = [f.pcm for clip in clips for f in to_frames(to_pcm16(clip), 20)]
    audio_s = sum(len(c) for c in clips) / RATE
    for name, config in BACKENDS.items():
        scorer = build_scorer(config)
        t0 = time.process_time()
        for pcm in frames:
            scorer.score(pcm)
        print(f"{name}\t{(time.process_time() - t0) / audio_s:.4f}")

    print("\nend of speech minus the reference end, ms (clean clips): median, min, max")
    reference = [utterances(c, BARE)[-1][1] for c in clips]
    for name, config in BACKENDS.items():
        delays = [
            1000 * (utterances(c, config)[-1][1] - ref)
            for c, ref in zip(clips, reference, strict=True)
        ]
        print(f"{name}\t{statistics.median(delays):.0f}\t{min(delays):.0f}\t{max(delays):.0f}")


if __name__ == "__main__":
    main()
