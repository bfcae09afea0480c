"""`sori intent`: understand text with the preset matcher, one utterance per line."""

from __future__ import annotations

import argparse
import json
import sys
import time

from sori.commands.options import add_home_options, add_json_option, load_understanding
from sori.understanding.intents import Presets


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "intent",
        help="match text against the preset intents",
        description="Match each TEXT (or each line of stdin) against the preset intents.",
    )
    parser.add_argument("text", nargs="*", metavar="TEXT", help="utterances; stdin if none")
    add_home_options(parser)
    add_json_option(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    _, presets = load_understanding(args)
    lines = args.text or (line.rstrip("\n") for line in sys.stdin)
    for text in lines:
        print(format_line(understand(presets, text), args.json), flush=True)
    return 0


def understand(presets: Presets, text: str) -> dict:
    started_ns = time.perf_counter_ns()
    found = presets.match(text)
    elapsed_ms = (time.perf_counter_ns() - started_ns) / 1e6
    return {
        "text": text,
        "intent": found.intent if found else None,
        "slots": found.slots if found else {},
        "confidence": round(found.confidence, 3) if found else 0.0,
        "response": found.response if found else "",
        "elapsed_ms": round(elapsed_ms, 3),
    }


def format_line(answer: dict, as_json: bool) -> str:
    if as_json:
        return json.dumps(answer, ensure_ascii=False)
    if answer["intent"] is None:
        return f"{answer['text']}\t(no match)"
    slots = " ".join(f"{k}={v}" for k, v in answer["slots"].items())
    return f"{answer['text']}\t{answer['intent']} {slots}\t{answer['response']}"
