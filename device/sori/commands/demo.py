"""`sori demo`: the main job on embedded defaults, for a fresh install."""

from __future__ import annotations

import argparse

from sori.commands.intent import format_line, understand
from sori.commands.options import add_home_options, add_json_option, load_understanding

SAMPLE_COMMANDS = (
    "거실 불 켜줘",
    "안방 에어컨 이십삼 도로 맞춰 줘",
    "공기 청정기 꺼 주세요",
    "커튼 쳐 줘",
    "오 분 타이머 맞춰줘",
    "지금 몇 시야",
    "거실 불 켜지 마",
)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "demo",
        help="understand sample Korean commands on embedded defaults",
        description="Run sample Korean commands through preset understanding and print "
        "the intents and spoken responses.",
    )
    add_home_options(parser)
    add_json_option(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    _, presets = load_understanding(args)
    for text in SAMPLE_COMMANDS:
        print(format_line(understand(presets, text), args.json), flush=True)
    return 0
