#!/usr/bin/env python3
"""Time to the first audio of the replies a newcomer meets most: a device the home lacks,
words barely heard, an open question, and a preset command beside them.

A daemon on the embedded defaults (no config file: the example home, espeak-ng, the
local language model that ships as a package, no edge) is built in this process and
answers each sentence as `POST /say` would; its audio goes to a WAV file. The figure is
the turn's `first_audio` stage: from the turn's start to the first reply audio handed to
the sink. "cold" is each sentence's first turn right after the build (the local model
still loading in the background); "warm" the median of the next --rounds turns.

    .venv/bin/python scripts/bench_replies.py [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))

SENTENCES = {
    "missing device": "세탁기 돌려 줘",
    "barely heard": "줘 꺼 주세요 꺼 줘",
    "open question": "하늘은 왜 파래?",
    "preset command": "거실 불 켜 줘",
}


async def measure(rounds: int) -> dict:
    from sori.assemble.daemon import build_daemon
    from sori.commands.options import load_home

    args = argparse.Namespace(config=None, fixtures=None)
    config, home = load_home(args)
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        daemon = build_daemon(config, home, str(Path(scratch) / "reply.wav"),
                              lambda: load_home(args))  # fmt: skip
        built_s = time.perf_counter() - started
        figures: dict = {"build_s": round(built_s, 2)}
        try:
            for name, text in SENTENCES.items():  # cold: each right after the build
                turn = await daemon.say(text)
                figures[name] = {"text": text, "tier": turn["tier"], "reply": turn["response"],
                                 "cold_ms": round(turn["stages_ms"]["first_audio"], 1)}  # fmt: skip
            for name, text in SENTENCES.items():
                warm = [(await daemon.say(text))["stages_ms"]["first_audio"] for _ in range(rounds)]
                figures[name]["warm_ms"] = round(statistics.median(warm), 1)
        finally:
            await daemon.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="warm turns per sentence")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.rounds))
    if args.json:
        print(json.dumps(figures, ensure_ascii=False))
        return 0
    print(f"daemon built in {figures.pop('build_s')} s")
    print(f"{'reply':16} {'cold ms':>9} {'warm ms':>9}  tier     reply")
    for name, f in figures.items():
        print(f"{name:16} {f['cold_ms']:9.1f} {f['warm_ms']:9.1f}  {f['tier']:8} {f['reply']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
