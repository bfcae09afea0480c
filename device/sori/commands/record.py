"""`sori record --manifest M --label L ...`: record a fixture from the microphone and
append it with its expectation to a `sori test` manifest. The work is
sori.testing.harness.record's; this module parses and prints."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sori.core.config import load_config


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "record",
        help="record a test fixture from the microphone into a manifest",
        description="Record SECONDS of audio from the microphone (audio.device of the config) "
        "or take them from --input, write clips/LABEL.wav beside the manifest and append the "
        "fixture with its expectation (the manifest is created if missing; its comments "
        "are not kept).",
    )
    parser.add_argument("--manifest", required=True, metavar="M", help="manifest YAML")
    parser.add_argument("--label", required=True, help="fixture name and WAV file name")
    parser.add_argument("--intent", help="the intent the recording must commit")
    parser.add_argument(
        "--slot", action="append", default=[], metavar="NAME=VALUE", help="an expected slot"
    )
    parser.add_argument("--transcript", help="the words spoken (checked within max_cer)")
    parser.add_argument("--no-action", action="store_true", help="no command may be committed")
    parser.add_argument("--seconds", type=float, default=5.0, help="how long to record")
    parser.add_argument("--config", metavar="F", help="config file (its audio.device)")
    parser.add_argument(
        "--input", metavar="FILE", help="take the audio from a WAV/FLAC file instead of the mic"
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from sori.testing.harness.record import (  # the audio extra: not for --help
        append_fixture,
        capture,
        check_new_fixture,
    )

    expect: dict[str, Any] = {}
    if args.intent:
        expect["intent"] = args.intent
    slots = {}
    for item in args.slot:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print(f"sori record: --slot {item!r}: write NAME=VALUE", file=sys.stderr)
            return 2
        slots[name] = value
    if slots:
        expect["slots"] = slots
    if args.transcript:
        expect["transcript"] = args.transcript
    if args.no_action:
        expect["no_action"] = True
    if not 0 < args.seconds <= 120:
        print("sori record: --seconds must be above 0 and at most 120", file=sys.stderr)
        return 2
    check_new_fixture(Path(args.manifest), args.label, expect)  # before anyone speaks
    config = load_config(args.config)
    channels = config.audio.channels  # an array's fixture keeps every channel captured
    if args.input:
        from sori.hearing.audio.sources import FileSource

        source = FileSource(args.input, config.audio.frame_ms)
    else:
        from sori.assemble.hearing import build_array, check_capture
        from sori.hearing.audio.sources import MicSource

        array = build_array(config)  # the board's layout checked before the device opens
        source = MicSource(config.audio.device, config.audio.frame_ms, channels=channels).open()
        if array is not None:
            check_capture(array, config.audio.array.geometry, source)
        print(f"recording {args.seconds:g} s: speak now", file=sys.stderr)
    pcm = capture(source, args.seconds, channels)
    wav = append_fixture(Path(args.manifest), args.label, pcm, expect, channels=channels)
    seconds = len(pcm) / (32000 * channels)  # 16 kHz s16le
    print(f"{wav}\t{seconds:.2f} s\tappended to {args.manifest}")
    return 0
