#!/usr/bin/env python3
"""Benchmark preset matching against hassil on the same sentences, in the same run.

Sentences: commands (Home Assistant's Korean intent tests, ../shared/conformance/
ha-intents-ko) and non-commands, misses included (the read-speech transcripts in
../shared/audio/ko-read and the everyday sentences of tests/intents/negatives_ko.txt).
Both matchers see the same home (the tests' fixtures). Reports, per set (commands,
non-commands, mixed = both), per-utterance matching time p50/p95/p99 and the p95 ratio
sori/hassil; start-up time (load and compile every pack); and how many sentences each
gets right (the test's intent for a command, no match for a non-command).

Spontaneous speech (issue 27): the sentences of tests/intents/spontaneous_ko.tsv, for the
example home, right by family with the miss-path normaliser and without it (the same
presets, `spontaneous` off: the before of the same run), and sori's p95 on hits and on
misses of the mixed set, with and without it.

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
SPONTANEOUS = ROOT / "tests" / "intents" / "spontaneous_ko.tsv"
EXAMPLE = ROOT / "device" / "sori.example.toml"


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


def spontaneous_rows() -> list[list[str]]:
    """(sentence, intent or "none", family, target word) rows of spontaneous_ko.tsv."""
    lines = SPONTANEOUS.read_text(encoding="utf-8").splitlines()
    rows = [line.split("\t") for line in lines if line.strip() and not line.startswith("#")]
    return [row + [""] * (4 - len(row)) for row in rows[1:]]


def right(found, intent: str, target: str) -> bool:
    """Whether a match is what a spontaneous_ko.tsv row expects."""
    if intent == "none":
        return found is None
    return (
        found is not None
        and found.intent == intent
        and (not target or any(target in str(v) for v in found.slots.values()))
    )


def spontaneous_report(rounds: int, clock) -> dict:
    """Right by family, and timings, on the spontaneous set, normaliser on and off."""
    from sori.assemble.understanding import home_from_config
    from sori.core.config import load_config
    from sori.understanding.intents import load_presets

    presets = load_presets("ko", home_from_config(load_config(str(EXAMPLE)).home))
    rows = spontaneous_rows()
    report: dict = {"sentences": len(rows), "families": {}}
    for label, on in (("before", False), ("after", True)):
        presets.spontaneous = on
        samples, results = time_calls(presets.match, [r[0] for r in rows], rounds, clock)
        report[label] = percentiles(samples)
        for (_, intent, family, target), found in zip(rows, results, strict=True):
            cell = report["families"].setdefault(family, {"n": 0, "before": 0, "after": 0})
            cell["n"] += label == "before"
            cell[label] += right(found, intent, target)
    presets.spontaneous = True
    return report


def hits_and_misses(presets, sentences: list[str], rounds: int, clock) -> dict:
    """sori's timings on the sentences it matches and on those it does not, with the
    miss-path normaliser off (before) and on (after). The two are timed in turns, each
    sentence off then on, so that a busy machine slows both alike."""
    samples: dict[bool, list[tuple[int, float]]] = {False: [], True: []}
    found: dict[bool, list] = {False: [], True: []}
    for round_number in range(rounds):
        for i, sentence in enumerate(sentences):
            for on in (False, True):
                presets.spontaneous = on
                started = clock()
                result = presets.match(sentence)
                samples[on].append((i, (clock() - started) / 1e6))
                if round_number == 0:
                    found[on].append(result)
    presets.spontaneous = True
    out = {}
    for label, on in (("before", False), ("after", True)):
        hit = {i for i, r in enumerate(found[on]) if r is not None}
        out[label] = {
            "hits": percentiles([ms for i, ms in samples[on] if i in hit]),
            "misses": percentiles([ms for i, ms in samples[on] if i not in hit]),
            "all": percentiles([ms for _, ms in samples[on]]),
            "hit_count": len(hit),
        }
    return out


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

    from sori.testing.conformance import load_cases
    from sori.understanding.intents import load_presets
    from sori.understanding.intents.loader import load_fixtures

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
    print("bench_intents: hits and misses, spontaneous speech", file=sys.stderr)
    split = hits_and_misses(presets, sentences, args.rounds, clock)
    spontaneous = spontaneous_report(args.rounds, clock)
    hassil_spontaneous, _ = time_calls(
        hassil_match, [r[0] for r in spontaneous_rows()], args.rounds, clock
    )
    spontaneous["hassil"] = percentiles(hassil_spontaneous)

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
        "hits_and_misses": split,
        "spontaneous": spontaneous,
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
    print(f"mixed-set p95 ratio sori/hassil: {report['sets']['mixed']['p95_ratio']} (goal <= 0.5)")
    for label in ("before", "after"):
        row = split[label]
        hits, misses = row["hits"]["p95_ms"], row["misses"]["p95_ms"]
        print(
            f"normaliser {'on ' if label == 'after' else 'off'}: {row['hit_count']} hits, "
            f"p95 on hits {hits:.3f} ms, on misses {misses:.3f} ms, "
            f"on all {row['all']['p95_ms']:.3f} ms"
        )
    print(f"spontaneous set ({spontaneous['sentences']} sentences, example home): right")
    print(f"  {'family':12} {'n':>4} {'before':>7} {'after':>7}")
    for family, cell in spontaneous["families"].items():
        print(f"  {family:12} {cell['n']:4d} {cell['before']:7d} {cell['after']:7d}")
    print(
        f"  p95 ms: before {spontaneous['before']['p95_ms']:.3f}, after "
        f"{spontaneous['after']['p95_ms']:.3f}, hassil {spontaneous['hassil']['p95_ms']:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
