"""`sori intent`: understand text with the preset matcher, one utterance per line."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterable
from typing import Any

from sori.assemble.state import build_answerer
from sori.assemble.understanding import Swappable, presets_from_config
from sori.commands.options import add_home_options, add_json_option, load_home
from sori.core.config import Config
from sori.core.home import Home
from sori.serving.conversation.meaning import answered, asks, understood


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
    config, home = load_home(args)
    # as the daemon holds it: several commands apart
    understanding = Swappable(presets_from_config(config.intents, home))
    lines = args.text or (line.rstrip("\n") for line in sys.stdin)
    asyncio.run(_understand_all(config, home, understanding, lines, args.json))
    return 0


async def _understand_all(
    config: Config, home: Home, understanding: Any, lines: Iterable[str], as_json: bool
) -> None:
    """Each line understood as the daemon's turn would be; questions answered from the
    home's state, whose source connects at the first question."""
    answerer = None
    try:
        for text in lines:
            started_ns = time.perf_counter_ns()
            found = understood(understanding, text)
            if asks(found):
                answerer = answerer or build_answerer(config, home)
                found = await answered(found, answerer)
            print(format_line(_line(text, found, started_ns), as_json), flush=True)
    finally:
        if answerer is not None:
            await answerer.close()


def understand(understanding: Any, text: str) -> dict:
    """One line's answer: what the daemon's turn of `text` commits and replies without
    acting or thinking (`sori.serving.conversation.meaning.understood`)."""
    return _line(text, understood(understanding, text), time.perf_counter_ns())


def _line(text: str, found: dict, started_ns: int) -> dict:
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
