"""`sori wake --phrase P FILE ...`: where in audio files a wake phrase is heard.

The daemon's own path: the voice detector finds utterances, the `[wake]` backend listens
to the start of each. One line per detection; `--json` prints
{"file", "phrase", "start_s", "end_s", "score"}.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

from sori.commands.options import add_home_options, add_json_option, load_home
from sori.errors import AudioError

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
    from sori.audio.sources import FileSource
    from sori.replaying import wake_scan

    config, _ = load_home(args)
    sources: list[Any] = []
    failed = False
    for name in args.files:  # refused before the model loads
        try:
            sources.append(FileSource(name, config.audio.frame_ms))
        except AudioError as exc:
            print(f"sori wake: {exc}", file=sys.stderr)
            failed = True
    if not sources:
        return 2
    if args.phrase:
        config = replace(config, wake=replace(config.wake, phrases=list(args.phrase)))
    detector = build_wake_detector(config)  # an unknown word: ConfigError naming it (exit 2)
    for source in sources:
        try:
            for record in wake_scan(source, config, detector):
                print(format_record(record, args.json), flush=True)
        except AudioError as exc:
            print(f"sori wake: {exc}", file=sys.stderr)
            failed = True
    return 2 if failed else 0


def format_record(record: dict[str, Any], as_json: bool) -> str:
    if as_json:
        return json.dumps({k: record[k] for k in FIELDS}, ensure_ascii=False)
    span = f"{record['start_s']:.2f}-{record['end_s']:.2f}s"
    return f"{record['file']}\t{span}\t{record['phrase']}\tscore {record['score']:.2f}"
