"""`sori wake --phrase P FILE ...`: where in audio files a wake phrase is heard.

The daemon's own path: the voice detector finds utterances, the `[wake]` backend listens
to the start of each. One line per detection; `--json` prints
{"file", "phrase", "start_s", "end_s", "score"}.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

from sori.commands.inputs import open_inputs, print_each
from sori.commands.options import add_home_options, add_json_option, load_home

FIELDS = ("file", "phrase", "start_s", "end_s", "score")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "wake",
        help="find wake phrases in audio files",
        description="Run WAV/FLAC files through the voice detector and the wake-phrase "
        "detector ([wake]); one line per phrase heard, times in seconds from the start of "
        "the file. A phrase is heard where it opens an utterance (after a pause).",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="audio files")
    parser.add_argument(
        "--phrase", action="append", metavar="P",
        help="a wake phrase (repeat for several); default: [wake] phrases",
    )  # fmt: skip
    add_home_options(parser)
    add_json_option(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    # Hearing needs the audio extra: imported here, so `sori --help` runs without it.
    from sori.assemble.wake import build_wake_detector
    from sori.testing.replaying import wake_scan

    config, _ = load_home(args)
    # refused before the model loads
    sources, failed = open_inputs("wake", args.files, config.audio.frame_ms)
    if not sources:
        return 2
    if args.phrase:
        config = replace(config, wake=replace(config.wake, phrases=list(args.phrase)))
    detector = build_wake_detector(config)  # an unknown word: ConfigError naming it (exit 2)

    def records(source: Any) -> list[dict[str, Any]]:
        return wake_scan(source, config, detector)

    broke = print_each("wake", sources, records, lambda r: format_record(r, args.json))
    return 2 if failed or broke else 0


def format_record(record: dict[str, Any], as_json: bool) -> str:
    if as_json:
        return json.dumps({k: record[k] for k in FIELDS}, ensure_ascii=False)
    span = f"{record['start_s']:.2f}-{record['end_s']:.2f}s"
    return f"{record['file']}\t{span}\t{record['phrase']}\tscore {record['score']:.2f}"
