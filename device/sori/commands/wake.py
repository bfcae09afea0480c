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
    from sori.assemble.hearing import build_array, build_hearing, front_end, source_frames
    from sori.assemble.wake import build_wake_detector
    from sori.core.events import SpeechStarted, WakeDetected
    from sori.hearing.pacing import ReplayClock, replay
    from sori.hearing.wake_gate import NeverOpen

    config, _ = load_home(args)
    # refused before the model loads
    build_array(config)  # a bad [audio.array]
    sources, failed = open_inputs("wake", args.files, config.audio.frame_ms)
    if not sources:
        return 2
    if args.phrase:
        config = replace(config, wake=replace(config.wake, phrases=list(args.phrase)))
    detector = build_wake_detector(config)  # an unknown word: ConfigError naming it (exit 2)

    def records(source: Any) -> list[dict[str, Any]]:
        clock = ReplayClock()  # as sori.testing.replaying.wake_scan, counting utterances
        array = build_array(config)  # a microphone array's file: its channels, beamed
        heard = front_end(config, source_frames(source, config), array=array)
        hearing = build_hearing(config, None, None, clock, 0, detector, NeverOpen(), array)
        events = list(replay(heard, hearing, clock))
        found = [record(source.name, e) for e in events if isinstance(e, WakeDetected)]
        if not found:  # stdout stays machine-readable
            spoken = sum(1 for e in events if isinstance(e, SpeechStarted))
            print(why_no_phrase(source.name, spoken, config.wake.phrases), file=sys.stderr)
        return found

    broke = print_each("wake", sources, records, lambda r: format_record(r, args.json))
    return 2 if failed or broke else 0


def record(name: str, event: Any) -> dict[str, Any]:
    """One detection (a WakeDetected) as a `--json` record."""
    return {
        "file": name,
        "phrase": event.phrase,
        "start_s": round(event.start_ns / 1e9, 3),
        "end_s": round(event.end_ns / 1e9, 3),
        "score": round(event.score, 2),
    }


def why_no_phrase(name: str, utterances: int, phrases: list[str]) -> str:
    """The line for a file where no wake phrase was heard."""
    if not utterances:
        return f"no wake phrase: {name}: no speech was heard in it"
    said = " or ".join(phrases)
    count = f"{utterances} utterance{'s' if utterances != 1 else ''}"
    return (
        f"no wake phrase: {name}: {count} heard, none opening with {said} (a phrase is "
        "heard where it opens an utterance, after a pause)"
    )


def format_record(record: dict[str, Any], as_json: bool) -> str:
    if as_json:
        return json.dumps({k: record[k] for k in FIELDS}, ensure_ascii=False)
    span = f"{record['start_s']:.2f}-{record['end_s']:.2f}s"
    return f"{record['file']}\t{span}\t{record['phrase']}\tscore {record['score']:.2f}"
