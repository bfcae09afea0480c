"""`sori intent`: understand text with the preset matcher, one utterance per line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from sori.assemble.understanding import Swappable
from sori.commands.options import add_home_options, add_json_option, load_understanding
from sori.serving.conversation.meaning import understood


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
    understanding = Swappable(presets)  # as the daemon holds it: several commands apart
    lines = args.text or (line.rstrip("\n") for line in sys.stdin)
    for text in lines:
        print(format_line(understand(understanding, text), args.json), flush=True)
    return 0


def understand(understanding: Any, text: str) -> dict:
    """One line's answer: what the daemon's turn of `text` commits and replies without
    acting or thinking (`sori.serving.conversation.turns.understood`)."""
    started_ns = time.perf_counter_ns()
    found = understood(understanding, text)
    elapsed_ms = (time.perf_counter_ns() - started_ns) / 1e6
    return {
        "text": text,
        "intent": found["intent"],
        "slots": found["slots"],
        "confidence": round(found["confidence"], 3),
        "response": found["response"],
        "elapsed_ms": round(elapsed_ms, 3),
    }


def format_line(answer: dict, as_json: bool) -> str:
    if as_json:
        return json.dumps(answer, ensure_ascii=False)
    if answer["intent"] is None:
        said = f"\t{answer['response']}" if answer["response"] else ""  # said without a model
        return f"{answer['text']}\t(no match){said}"
    parts = answer["slots"].get("parts")
    if parts:  # several commands: each with its slots
        meaning = " + ".join(f"{p['intent']} {_slots(p['slots'])}".strip() for p in parts)
    else:
        meaning = f"{answer['intent']} {_slots(answer['slots'])}"
    return f"{answer['text']}\t{meaning}\t{answer['response']}"


def _slots(slots: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in slots.items())
