"""`sori wyoming`: Sori's speech-to-text, intents and voice for Home Assistant over the
Wyoming protocol (see `sori.serving.wyoming_server`)."""

from __future__ import annotations

import argparse

from sori.commands.options import add_home_options, load_home
from sori.core.logs import setup_logging


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "wyoming",
        help="serve speech-to-text, intents and the voice over Wyoming (Home Assistant)",
        description="Serve the Wyoming protocol so Home Assistant's voice pipeline can use "
        "Sori: transcribe (speech-to-text), recognize (intents and slots), synthesize (the "
        "voice). Announced with zeroconf so Home Assistant discovers it. `sori run` serves "
        "the same beside the assistant with [wyoming] enabled = true. SIGTERM stops it.",
    )
    add_home_options(parser)
    parser.add_argument(
        "--uri", metavar="URI", help="tcp://HOST:PORT or unix:///path (default wyoming.uri)"
    )
    parser.add_argument(
        "--zeroconf", action=argparse.BooleanOptionalAction, default=None,
        help="announce _wyoming._tcp on the network (default wyoming.zeroconf)",
    )  # fmt: skip
    return parser


def run(args: argparse.Namespace) -> int:
    from sori.serving.wyoming_server import serve  # the recognizer's libraries: not for --help

    config, home = load_home(args)
    setup_logging(config.daemon.log_format, args.verbose)
    return serve(config, home, args.uri or config.wyoming.uri, args.zeroconf)
