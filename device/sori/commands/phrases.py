"""`sori phrases`: the phrases the constrained recognizer pass listens for, or their stats."""

from __future__ import annotations

import argparse
import json
import sys

from sori.commands.options import add_home_options, add_json_option, load_understanding


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "phrases",
        help="print the phrases speech recognition is biased towards",
        description=(
            "Print the commands as people say them that the constrained recognizer pass "
            "(vosk grammar, sherpa-onnx hotwords) listens for, one per line; with --stats, "
            "their count, their coverage of intent x target x ending family, and how many say "
            "spontaneous speech (fillers, adverbs, colloquial endings)."
        ),
    )
    add_home_options(parser)
    parser.add_argument(
        "--stats", action="store_true", help="counts and coverage instead of the phrases"
    )
    parser.add_argument(
        "--max-phrases",
        type=int,
        metavar="N",
        help="budget (default stt.phrases.max_phrases)",
    )
    add_json_option(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    if args.max_phrases is not None and args.max_phrases < 1:
        print("sori phrases: --max-phrases must be 1 or more", file=sys.stderr)
        return 2
    config, presets = load_understanding(args)
    budget = args.max_phrases or config.stt.phrases.max_phrases
    chosen = presets.phrase_set(budget)
    if args.stats:
        stats = chosen.stats()
        print(json.dumps(stats, ensure_ascii=False) if args.json else format_stats(stats))
        return 0
    for phrase in chosen.phrases:
        print(json.dumps({"phrase": phrase}, ensure_ascii=False) if args.json else phrase)
    return 0


def format_stats(stats: dict) -> str:
    lines = [
        f"phrases: {stats['kept']} kept of {stats['total']} candidates "
        f"(budget {stats['budget']}, {stats['rejected']} not understood as meant, left out)",
        f"coverage: {stats['strata_covered']}/{stats['strata']} strata "
        f"(intent x target x ending), {stats['coverage']:.1%}",
        f"request endings: {stats['with_request_ending']} phrases "
        f"({stats['request_ending_share']:.1%})",
        "spontaneous speech: "
        + ", ".join(f"{label} {count}" for label, count in stats["spontaneous"].items()),
        "per family: " + ", ".join(f"{f} {n}" for f, n in stats["per_family"].items()),
        "per intent:",
    ]
    lines += [f"  {intent}\t{count}" for intent, count in stats["per_intent"].items()]
    return "\n".join(lines)
