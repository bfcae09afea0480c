#!/usr/bin/env python3
"""Benchmark preset matching against hassil on the same sentences, in the same run.

Sentences: commands (Home Assistant's Korean intent tests, ../shared/conformance/
ha-intents-ko) and non-commands, misses included (the read-speech transcripts in
../shared/audio/ko-read and the everyday sentences of tests/intents/negatives_ko.txt).
Both matchers see the same home (the tests' fixtures). Reports, per set (commands,
non-commands, mixed = both), per-utterance matching time p50/p95/p99 and the p95 ratio
sori/hassil; start-up time (load and compile every pack); and how many sentences each
gets right (the test's intent for a command, no match for a non-command).

    .venv/bin/python scripts/bench_intents.py [--rounds 5] [--clock wall|cpu] [--json]
        [--shared DIR]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
NEGATIVES = ROOT / "tests" / "intents" / "negatives_ko.txt"


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {
        "p50_ms": round(pick(0.50), 4),
        "p95_ms": round(pick(0.95), 4),
        "p99_ms": round(pick(0.99), 4),
        "mean_ms": round(statistics.fmean(ordered), 4),
    }


def load_hassil(fixtures):
    from hassil import Intents, TextSlotList
    from home_assistant_intents import get_intents

    started = time.perf_counter()
    intents = Intents.from_dict(get_intents("ko"))
    lists = {
        "area": TextSlotList.from_tuples(
            [(name, area.name) for area in fixtures.areas for name in area.names]
        ),
        "name": TextSlotList.from_tuples(
            [(name, device.name, {"domain": device.domain}) for device in fixtures.devices
             for name in device.names]
        ),
    }  # fmt: skip
    return intents, lists, time.perf_counter() - started


def time_calls(match, sentences: list[str], rounds: int, clock=time.perf_counter_ns):
    samples, results = [], []
    for round_number in range(rounds):
        for sentence in sentences:
            started = clock()
            result = match(sentence)
            samples.append((clock() - started) / 1e6)
            if round_number == 0:
                results.append(result)
    return samples, results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="passes over the sentences")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared data folder")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time each call by the wall clock, or by this thread's CPU time (on a machine "
        "busy with other jobs, wall-clock tails are the scheduler's, not the matcher's)",
    )
    args = parser.parse_args()
    clock = time.perf_counter_ns if args.clock == "wall" else time.thread_time_ns

    from hassil import recognize_best

    from sori.conformance import load_cases
    from sori.intents import load_presets
    from sori.intents.loader import load_fixtures

    folder = args.shared / "conformance" / "ha-intents-ko"
    if not folder.is_dir():
        print(f"bench_intents: {folder} not found; pass --shared DIR", file=sys.stderr)
        return 2
    fixtures = load_fixtures(folder / "_fixtures.yaml")
    cases = load_cases(folder)
    manifest = (args.shared / "audio" / "ko-read" / "manifest.tsv").read_text(encoding="utf-8")
    negatives = [line.split("\t")[1] for line in manifest.splitlines()[1:] if "\t" in line]
    everyday = NEGATIVES.read_text(encoding="utf-8").splitlines()
    negatives += [line.strip() for line in everyday if line.strip() and line[0] != "#"]
    sentences = [case.sentence for case in cases] + negatives

    print(f"bench_intents: {len(sentences)} sentences x {args.rounds} rounds", file=sys.stderr)
    gc.collect()
    started = time.perf_counter()
    presets = load_presets("ko", fixtures)
    ours_startup = time.perf_counter() - started
    hassil_intents, hassil_lists, hassil_load = load_hassil(fixtures)

    def hassil_match(text):
        return recognize_best(text, hassil_intents, slot_lists=hassil_lists)

    # hassil compiles lazily on first use; that belongs to its start-up.
    started = time.perf_counter()
    hassil_match(sentences[0])
    hassil_startup = hassil_load + time.perf_counter() - started

    print("bench_intents: timing sori", file=sys.stderr)
    ours_ms, ours_results = time_calls(presets.match, sentences, args.rounds, clock)
    print("bench_intents: timing hassil.recognize_best", file=sys.stderr)
    hassil_ms, hassil_results = time_calls(hassil_match, sentences, args.rounds, clock)

    def correct(results, name_of) -> int:
        right = 0
        for case, result in zip(cases, results, strict=False):
            right += name_of(result) == case.intent
        for result in results[len(cases) :]:
            right += result is None
        return right

    # time_calls runs the sentences in order, round after round: sample i is sentence
    # i % len(sentences).
    commands = set(range(len(cases)))
    sets = {
        "commands": lambda i: i % len(sentences) in commands,
        "non_commands": lambda i: i % len(sentences) not in commands,
        "mixed": lambda i: True,
    }
    report = {
        "sentences": len(sentences),
        "commands": len(cases),
        "non_commands": len(negatives),
        "rounds": args.rounds,
        "clock": args.clock,
        "startup_s": {"sori": round(ours_startup, 3), "hassil": round(hassil_startup, 3)},
        "correct": {
            "sori": correct(ours_results, lambda r: r and r.intent),
            "hassil": correct(hassil_results, lambda r: r and r.intent.name),
        },
        "sets": {},
    }
    for name, member in sets.items():
        ours = percentiles([ms for i, ms in enumerate(ours_ms) if member(i)])
        theirs = percentiles([ms for i, ms in enumerate(hassil_ms) if member(i)])
        report["sets"][name] = {
            "sori": ours,
            "hassil": theirs,
            "p95_ratio": round(ours["p95_ms"] / theirs["p95_ms"], 3),
            "p50_ratio": round(ours["p50_ms"] / theirs["p50_ms"], 3),
        }
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"{len(cases)} commands, {len(negatives)} non-commands, {args.rounds} rounds, "
        f"{args.clock} clock; "
        f"start-up sori {ours_startup:.3f} s, hassil {hassil_startup:.3f} s; right: "
        f"sori {report['correct']['sori']}/{len(sentences)}, "
        f"hassil {report['correct']['hassil']}/{len(sentences)}"
    )
    print(f"{'set':13} {'matcher':8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'p95 ratio':>9}")
    for name, row in report["sets"].items():
        for matcher in ("sori", "hassil"):
            figures = row[matcher]
            ratio = f"{row['p95_ratio']:9.3f}" if matcher == "sori" else ""
            print(
                f"{name:13} {matcher:8} {figures['p50_ms']:8.3f} {figures['p95_ms']:8.3f} "
                f"{figures['p99_ms']:8.3f} {ratio}"
            )
    print(f"mixed-set p95 ratio sori/hassil: {report['sets']['mixed']['p95_ratio']} (goal <= 0.8)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
