"""`sori replay FILE ...`: audio files through the hearing pipeline, one line per utterance.

The same pipeline as the daemon's microphone: VAD and endpointing, streaming
speech-to-text, early commit against the presets. By default a replay runs as fast as the
CPU allows on a simulated clock that reports latencies as if the audio had arrived in real
time; `--realtime` paces the audio like a microphone instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sori.commands.inputs import RawInput, open_inputs, print_each
from sori.commands.options import add_home_options, add_json_option, load_understanding
from sori.core.errors import AudioError

# sori.hearing.audio.format.RAW_FORMATS' names, here so `--help` does not import numpy (the audio
# extra); tests/test_light_imports.py holds the two equal.
RAW_FORMAT_NAMES = ("f32le", "s16le", "s32le", "u8")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "replay",
        help="run audio files through the hearing pipeline",
        description="Replay WAV/FLAC files (or raw PCM on stdin as '-') through VAD, "
        "streaming speech-to-text and early commit; one line per utterance. Times are "
        "seconds from the start of the file; commit latency is measured from the end of "
        "the last voiced frame.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="audio files; '-' for stdin")
    add_home_options(parser)
    add_json_option(parser)
    parser.add_argument("--realtime", action="store_true", help="pace the audio like a microphone")
    parser.add_argument(
        "--format", default="s16le", choices=RAW_FORMAT_NAMES, help="raw stdin sample format"
    )
    parser.add_argument("--rate", type=int, default=16000, help="raw stdin sample rate, Hz")
    parser.add_argument("--channels", type=int, default=1, help="raw stdin channel count")
    parser.add_argument(
        "--no-wake", action="store_true",
        help="hear every utterance as a command, without the wake phrase ([wake] enabled)",
    )  # fmt: skip
    return parser


def run(args: argparse.Namespace) -> int:
    # Hearing needs the audio extra: imported here, so other commands run without it.
    from sori.assemble.hearing import build_array, hearing_recognizer
    from sori.assemble.wake import build_wake_detector
    from sori.hearing.audio.format import check_channels, check_rate
    from sori.testing.replaying import replay_events, summarize

    if "-" in args.files:  # refused at once, before models and packs load
        try:
            check_rate(args.rate, "stdin (--rate)")
            check_channels(args.channels, "stdin (--channels)")
        except AudioError as exc:
            print(f"sori replay: {exc}", file=sys.stderr)
            return 2
    config, presets = load_understanding(args)
    build_array(config)  # a bad [audio.array] is refused before any model loads
    raw = RawInput(args.format, args.rate, args.channels)
    sources, failed = open_inputs("replay", args.files, config.audio.frame_ms, raw)
    if not sources:
        return 2
    recognizer = hearing_recognizer(config, presets)
    wake = None
    if config.wake.enabled and not args.no_wake:
        wake = build_wake_detector(config, recognizer=recognizer)

    def records(source: Any) -> list[dict[str, Any]]:
        events, origin = replay_events(
            source, config, recognizer, presets, args.realtime, wake
        )  # fmt: skip
        found = summarize(source.name, events, origin)
        if not any(r["intent"] for r in found):  # stdout stays machine-readable
            for line in why_nothing(source.name, events, found, config.wake.phrases, wake):
                print(line, file=sys.stderr, flush=True)
        return found

    broke = print_each("replay", sources, records, lambda r: format_record(r, args.json))
    return 2 if failed or broke else 0


def why_nothing(
    name: str, events: list[Any], found: list[dict[str, Any]], phrases: list[str], wake: Any
) -> list[str]:
    """The `no turn:` lines of a file whose utterances committed nothing: not woken, not
    understood (with the transcript), no words, or no speech at all."""
    from sori.commands.console import explain
    from sori.core.events import SpeechStarted

    spoken = sum(1 for e in events if isinstance(e, SpeechStarted))
    if not spoken:
        return [f"no turn: {name}: no speech was heard in it"]
    unwoken = spoken - len(found) if wake is not None else 0
    texts = [r["transcript"] for r in found if r["transcript"].strip()]
    empty = sum(1 for r in found if not r["transcript"].strip())
    lines = explain(unwoken, texts, empty, phrases, True)
    return [line.replace("no turn: ", f"no turn: {name}: ", 1) for line in lines]


def format_record(record: dict[str, Any], as_json: bool) -> str:
    from sori.testing.replaying import FIELDS

    if as_json:
        return json.dumps({k: record[k] for k in FIELDS}, ensure_ascii=False)
    span = f"{record['speech_start_s']:.2f}-{record['speech_end_s']:.2f}s"
    if record["intent"] is None:
        meaning = "(no match)"
    else:
        slots = " ".join(f"{k}={v}" for k, v in record["slots"].items())
        meaning = f"{record['intent']} {slots}".strip()
        meaning += f"\tcommit +{record['commit_latency_ms']:.0f} ms"
    return f"{record['file']}\t{span}\t{record['transcript'] or '(nothing heard)'}\t{meaning}"
