"""`sori ask TEXT`: run the whole understanding stack (preset → local → edge) on text."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from sori.assemble.state import build_answerer
from sori.assemble.thinking import build_router
from sori.assemble.understanding import Swappable, presets_from_config
from sori.commands.options import add_home_options, add_json_option, load_home
from sori.commands.shutdown import exit_now
from sori.core.config import Config
from sori.core.events import AnswerSentence, Event, TurnRouted
from sori.core.home import Home
from sori.serving.conversation.meaning import answered, asks, understood
from sori.thinking.local import LocalLLM
from sori.understanding.intents import Presets

TIERS = ("auto", "preset", "local", "edge")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "ask",
        help="understand or answer text with presets, the local model and the edge server",
        description="Try the preset intents, then the local model, then the edge server "
        "(per [router] in the config) and print the committed intent or the answer, "
        "sentence by sentence as it streams. --tier forces one tier. Exit 1 when no tier "
        "understood or answered.",
    )
    parser.add_argument("text", nargs="+", metavar="TEXT", help="what the user said")
    add_home_options(parser)
    add_json_option(parser)
    parser.add_argument(
        "--tier", choices=TIERS, default="auto", help="force one tier (default: auto)"
    )
    return parser


def run(args: argparse.Namespace) -> int:
    config, home = load_home(args)
    presets = presets_from_config(config.intents, home)
    text = " ".join(args.text)
    routed, local = asyncio.run(_ask(config, home, presets, text, args.tier, not args.json))
    if args.json:
        print(json.dumps(as_record(routed), ensure_ascii=False), flush=True)
    else:
        if routed.intent is not None:
            slots = " ".join(f"{k}={v}" for k, v in routed.slots.items())
            print(f"{routed.intent} {slots}\t{routed.answer}".rstrip(), flush=True)
        print(f"({routed.tier}: {routed.reason})", file=sys.stderr)
    if local is not None and local.load_ms:  # this process loaded it: a daemon keeps it
        print(f"(local model loaded in {local.load_ms / 1000:.1f} s; `sori run` loads it "
              "once and answers without this wait)", file=sys.stderr)  # fmt: skip
    code = 0 if routed.intent is not None or routed.answer else 1
    if local is not None and local.busy:  # tearing down under a computing llama.cpp crashes
        exit_now(code, "the local model's generation")
    return code


async def _ask(
    config: Config, home: Home, presets: Presets, text: str, tier: str, print_sentences: bool
) -> tuple[TurnRouted, LocalLLM | None]:
    """The routed turn, and the local model when one was built (a generation cut at its
    deadline may still be computing on its thread)."""
    if tier in ("auto", "preset"):  # what every front door settles without a model
        settled = await _settled(config, home, presets, text)
        if settled is not None:
            if print_sentences and settled.intent is None:
                print(settled.answer, flush=True)
            return settled, None
    router, local, edge = build_router(config, presets)

    def show(event: Event) -> None:
        if print_sentences and isinstance(event, AnswerSentence):
            print(event.text, flush=True)

    try:
        routed = await router.ask(text, force=tier, on_event=show)
    finally:
        if edge is not None:
            await edge.aclose()
        if router.home is not None:
            await router.home.aclose()
        await local.close()
    return routed, local


async def _settled(config: Config, home: Home, presets: Presets, text: str) -> TurnRouted | None:
    """The turn `sori intent`, `/say` and Wyoming settle without a model (several
    commands, a question answered from the home's state, a device the home lacks, words
    barely heard), or None: the router's."""
    found = understood(Swappable(presets), text)
    if asks(found):
        answerer = build_answerer(config, home)
        try:
            found = await answered(found, answerer)
        finally:
            await answerer.close()
        reason = "answered from the home's state"
    elif found["intent"] is not None and "parts" in found["slots"]:
        reason = "several commands matched part by part"
    elif found["intent"] is None and found["response"]:
        reason = "answered without a model"
    else:
        return None
    return TurnRouted(
        t_ns=0, utterance_id=0, text=text, tier="none" if found["intent"] is None else "preset",
        reason=reason, intent=found["intent"], slots=found["slots"],
        answer=found["response"], endpoint="", ttft_ns=None, first_sentence_ns=None,
        total_ns=0,
    )  # fmt: skip


def as_record(routed: TurnRouted) -> dict:
    """The `--json` object: exactly the fields the README documents."""
    return {
        "text": routed.text,
        "tier": routed.tier,
        "intent": routed.intent,
        "slots": routed.slots,
        "answer": routed.answer,
        "reason": routed.reason,
        "endpoint": routed.endpoint or None,
        "ttft_ms": _ms(routed.ttft_ns),
        "total_ms": _ms(routed.total_ns),
    }


def _ms(ns: int | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 1)
