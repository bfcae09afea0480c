"""Benchmark hearing in noise: CER and command decisions on the shared read clips, clean and
mixed with white, pink and babble noise at 20, 10 and 5 dB SNR; first-utterance latency
after start-up; CPU real-time factor of the whole hearing pipeline.

    .venv/bin/python scripts/bench_noise.py                        # everything (slow)
    .venv/bin/python scripts/bench_noise.py --clips 4 --modes both --json out.json
    .venv/bin/python scripts/bench_noise.py --clips 4 --denoise deepfilter   # the front-end
    .venv/bin/python scripts/bench_noise.py --clips 4 --denoise auto   # when it helps
    .venv/bin/python scripts/bench_noise.py --clips 4 --denoise rnnoise   # or webrtc: lighter

Every clip goes through the whole pipeline as `sori replay` runs it (VAD, streaming
speech-to-text, early commit against the presets of the example home in
device/sori.example.toml), on a recognizer built by `build_recognizer`, so it is warmed
up as at start-up (`--warm-up-s`, default the config's `stt.warm_up_s`).

- CER: the transcripts of a clip's utterances joined, against the manifest's, spaces
  ignored; summed over the clips.
- Commands: the clips are read news and novel sentences, none a command: every
  IntentCommitted for a device intent (sori.acting.actions.registry.DEVICE_INTENTS) is a false
  action.
- First utterance: the first clean clip replayed right after the recognizer was built,
  against the median of the other clean clips: commit latency when there was a commit,
  otherwise final latency (final result minus end of speech), and the clip's RTF.
- CPU RTF: process CPU time (all threads) of replaying a clip over its duration.
- Denoised (`--denoise auto`, with `--engine`): how many utterances were heard denoised,
  of all; the JSON has each one's SNR estimate (`snr_db`; sori.hearing.audio.denoise_decision).

Noise is mixed deterministically (seed per clip and condition) with sori.hearing.audio.augment;
babble for a clip is made of the other clips. Nothing is stored.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))

import numpy as np  # noqa: E402

from sori.acting.actions.registry import DEVICE_INTENTS  # noqa: E402
from sori.assemble import hearing as assemble_hearing  # noqa: E402
from sori.assemble.hearing import build_recognizer  # noqa: E402
from sori.assemble.understanding import home_from_config, presets_from_config  # noqa: E402
from sori.core.config import load_config  # noqa: E402
from sori.hearing.audio.augment import babble, make_noise, mix_at_snr, to_pcm16  # noqa: E402
from sori.hearing.audio.denoise_decision import POOL  # noqa: E402
from sori.hearing.audio.ring import FrameChunker  # noqa: E402
from sori.hearing.audio.sources import read_file  # noqa: E402
from sori.testing.fakes import character_errors  # noqa: E402
from sori.testing.replaying import replay_source  # noqa: E402

NOISES = ("white", "pink", "babble")
SNRS_DB = (20, 10, 5)


class PcmSource:
    """Pipeline PCM held in memory, as a replay source."""

    def __init__(self, name: str, pcm: bytes, frame_ms: int) -> None:
        self.name, self.pcm, self.frame_ms = name, pcm, frame_ms

    def frames(self):  # noqa: ANN201
        chunker = FrameChunker(self.frame_ms)
        yield from chunker.push(self.pcm)
        yield from chunker.flush()


def clips(folder: Path) -> list[tuple[str, str, np.ndarray]]:
    """(name, transcript, int16-scale float signal) of each clip in the manifest."""
    rows = csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t")
    out = []
    for row in rows:
        pcm = read_file(folder / row["file"])
        out.append((row["file"], row["transcript"], np.frombuffer(pcm, "<i2").astype(np.float32)))
    return out


def noisy(data, index: int, noise: str, snr_db: float) -> bytes:
    """Clip `index` mixed with `noise` at `snr_db`, the same every run."""
    _, _, speech = data[index]
    rng = np.random.default_rng([index, NOISES.index(noise), int(snr_db)])
    if noise == "babble":
        voices = [signal for i, (_, _, signal) in enumerate(data) if i != index]
        sound = babble(voices, len(speech), rng)
    else:
        sound = make_noise(noise, len(speech), rng)
    return to_pcm16(mix_at_snr(speech, sound, snr_db))


def replay_clip(name: str, pcm: bytes, config, recognizer, presets) -> dict:
    cpu = time.process_time()
    source = PcmSource(name, pcm, config.audio.frame_ms)
    records = replay_source(source, config, recognizer, presets)
    cpu = time.process_time() - cpu
    text = " ".join(r["transcript"] for r in records if r["transcript"])
    commits = [r for r in records if r["intent"] is not None]
    first = records[0] if records else None
    latency = None
    if first is not None and first["commit_latency_ms"] is not None:
        latency = first["commit_latency_ms"]
    elif first is not None:
        latency = round((first["final_s"] - first["speech_end_s"]) * 1000, 1)
    return {
        "text": text,
        "utterances": len(records),
        "intents": [r["intent"] for r in commits],
        "device_actions": sum(r["intent"] in DEVICE_INTENTS for r in commits),
        "latency_ms": latency,
        "cpu_rtf": cpu / (len(pcm) / 2 / 16000),
    }


DECISIONS: list = []
"""Every utterance's "auto" decision in this run, in order (`recorded_auto_denoise`)."""


def recorded_auto_denoise(config):  # noqa: ANN001, ANN201
    """sori.assemble.hearing.auto_denoise, each pipeline's decisions also kept in
    DECISIONS (a replay builds its pipeline inside replay_source)."""
    decision = AUTO_DENOISE(config)
    if decision is not None:
        decision.decisions = _Shared()
    return decision


class _Shared(list):
    """A pipeline's decision list that also appends to DECISIONS."""

    def append(self, item) -> None:  # noqa: ANN001
        super().append(item)
        DECISIONS.append(item)


AUTO_DENOISE = assemble_hearing.auto_denoise
assemble_hearing.auto_denoise = recorded_auto_denoise


def bench_mode(mode: str, data, config, presets, conditions, warm_up_s: float) -> dict:
    stt = dataclasses.replace(
        config.stt,
        warm_up_s=warm_up_s,
        vosk=dataclasses.replace(config.stt.vosk, mode=mode),
    )
    config = dataclasses.replace(config, stt=stt)
    started = time.perf_counter()
    recognizer = build_recognizer(config.stt, presets.phrases())
    if config.audio.denoise == "auto":
        POOL.warm(config.audio.denoise_engine)  # loaded before the first clip, as at start-up
    built_s = time.perf_counter() - started
    rows = []
    clean_runs = []
    for label, noise, snr in conditions:
        errors = chars = actions = 0
        intents: list[str] = []
        cpu = []
        decided = len(DECISIONS)
        for i, (name, transcript, speech) in enumerate(data):
            pcm = to_pcm16(speech) if noise is None else noisy(data, i, noise, snr)
            run = replay_clip(name, pcm, config, recognizer, presets)
            wrong, length = character_errors(transcript, run["text"])
            errors, chars = errors + wrong, chars + length
            actions += run["device_actions"]
            intents += run["intents"]
            cpu.append(run["cpu_rtf"])
            if noise is None:
                clean_runs.append(run)
        rows.append(
            {
                "condition": label,
                "cer": round(errors / chars, 3),
                "device_actions": actions,
                "intents": intents,
                "cpu_rtf": round(statistics.fmean(cpu), 3),
            }
        )
        # audio.denoise = "auto": the decision on each utterance of this condition
        decisions = DECISIONS[decided:]
        denoised = f"{sum(d.denoised for d in decisions)}/{len(decisions)}" if decisions else "-"
        rows[-1]["denoised"] = denoised
        rows[-1]["snr_db"] = [round(d.estimate.snr_db, 1) for d in decisions if d.estimate]
        print(
            f"| {mode} | {label} | {rows[-1]['cer']:.3f} | {actions} | {len(intents)} "
            f"| {rows[-1]['cpu_rtf']:.2f} | {denoised} |",
            flush=True,
        )
    first = others = None
    if len(clean_runs) > 1:
        first = {k: clean_runs[0][k] for k in ("latency_ms", "cpu_rtf")}
        others = {
            k: statistics.median(r[k] for r in clean_runs[1:] if r[k] is not None)
            for k in ("latency_ms", "cpu_rtf")
        }
    return {
        "mode": mode,
        "warm_up_s": warm_up_s,
        "build_s": round(built_s, 2),
        "conditions": rows,
        "first_utterance": first,
        "other_utterances_median": others,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--clips-dir", default=str(REPO.parent / "shared" / "audio" / "ko-read"), type=Path
    )
    parser.add_argument("--clips", type=int, default=0, help="only the first N clips (0: all)")
    parser.add_argument("--modes", default="free,both", help="stt.vosk.mode values, a,b")
    parser.add_argument("--noises", default=",".join(NOISES), help="of white, pink, babble")
    parser.add_argument("--snrs", default=",".join(map(str, SNRS_DB)), help="SNRs in dB")
    parser.add_argument("--warm-up-s", type=float, help="default: the config's stt.warm_up_s")
    parser.add_argument(
        "--denoise",
        default="off",
        choices=("off", "deepfilter", "rnnoise", "webrtc", "auto"),
        help='audio.denoise: "off", a denoiser for everything, or "auto" (when it helps)',
    )
    parser.add_argument(
        "--engine",
        default="deepfilter",
        choices=("deepfilter", "rnnoise", "webrtc"),
        help='audio.denoise_engine: the denoiser "auto" runs',
    )
    parser.add_argument("--json", metavar="F", help="also write the figures here")
    args = parser.parse_args()
    config = load_config(str(REPO / "device" / "sori.example.toml"))
    config = dataclasses.replace(
        config,
        audio=dataclasses.replace(config.audio, denoise=args.denoise, denoise_engine=args.engine),
    )
    presets = presets_from_config(config.intents, home_from_config(config.home))
    data = clips(args.clips_dir)[: args.clips or None]
    conditions = [("clean", None, None)]
    for noise in filter(None, args.noises.split(",")):
        if noise not in NOISES:
            parser.error(f"--noises: {noise!r} is not one of {', '.join(NOISES)}")
        conditions += [(f"{noise} {s} dB", noise, float(s)) for s in args.snrs.split(",")]
    warm = config.stt.warm_up_s if args.warm_up_s is None else args.warm_up_s
    print(f"{len(data)} clips, warm-up {warm:.1f} s, denoise {args.denoise} ({args.engine})")
    print("| mode | condition | CER | device actions | intents | CPU RTF | denoised |")
    print("|---|---|---|---|---|---|---|")
    results = {"clips": len(data), "modes": []}
    for mode in args.modes.split(","):
        results["modes"].append(bench_mode(mode, data, config, presets, conditions, warm))
    for m in results["modes"]:
        first, rest = m["first_utterance"], m["other_utterances_median"]
        if first:
            print(
                f"{m['mode']}: built and warmed up in {m['build_s']:.1f} s; first utterance "
                f"latency {first['latency_ms']} ms, CPU RTF {first['cpu_rtf']:.2f}; others "
                f"(median) {rest['latency_ms']} ms, CPU RTF {rest['cpu_rtf']:.2f}"
            )
    results["load_average"] = os.getloadavg()
    print("load average (1, 5, 15 min):", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
