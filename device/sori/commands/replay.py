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

from sori.audio.format import RAW_FORMATS, check_channels, check_rate
from sori.audio.sources import FileSource, RawSource
from sori.clock import MonotonicClock
from sori.commands.hearing import build_hearing, build_recognizer, front_end
from sori.commands.options import add_home_options, add_json_option, load_understanding
from sori.errors import AudioError
from sori.events import (
    Event,
    IntentCommitted,
    IntentCorrected,
    TranscriptFinal,
    UtteranceHeard,
)
from sori.pipeline import ReplayClock, pace, replay

FIELDS = (
    "file",
    "transcript",
    "intent",
    "slots",
    "confidence",
    "speech_start_s",
    "speech_end_s",
    "final_s",
    "commit_s",
    "commit_latency_ms",
    "rtf",
    "lr_score",
)


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
        "--format", default="s16le", choices=sorted(RAW_FORMATS), help="raw stdin sample format"
    )
    parser.add_argument("--rate", type=int, default=16000, help="raw stdin sample rate, Hz")
    parser.add_argument("--channels", type=int, default=1, help="raw stdin channel count")
    return parser


def run(args: argparse.Namespace) -> int:
    if "-" in args.files:  # refused at once, before models and packs load
        try:
            check_rate(args.rate, "stdin (--rate)")
            check_channels(args.channels, "stdin (--channels)")
        except AudioError as exc:
            print(f"sori replay: {exc}", file=sys.stderr)
            return 2
    config, presets = load_understanding(args)
    frame_ms = config.audio.frame_ms
    sources: list[Any] = []
    failed = False
    for name in args.files:
        try:
            if name == "-":
                sources.append(
                    RawSource(sys.stdin.buffer, args.format, args.rate, args.channels, frame_ms)
                )
            else:
                sources.append(FileSource(name, frame_ms))
        except AudioError as exc:
            print(f"sori replay: {exc}", file=sys.stderr)
            failed = True
    if not sources:
        return 2
    phrases = presets.phrases(config.stt.phrases.max_phrases)
    recognizer = build_recognizer(config.stt, phrases, config.audio, config.vad.pre_roll_ms)
    for source in sources:
        try:
            for record in replay_source(source, config, recognizer, presets, args.realtime):
                print(format_record(record, args.json), flush=True)
        except AudioError as exc:
            print(f"sori replay: {exc}", file=sys.stderr)
            failed = True
    return 2 if failed else 0


def replay_source(
    source: Any, config: Any, recognizer: Any, understanding: Any, realtime: bool = False
) -> list[dict[str, Any]]:
    """Run one source through a fresh pipeline; one record per utterance."""
    if realtime:
        clock = MonotonicClock()
        origin = clock.now_ns()
        hearing = build_hearing(config, recognizer, understanding, clock, origin)
        events = []
        for frame in pace(front_end(config, source.frames()), clock, origin):
            events += hearing.push(frame)
        events += hearing.end()
    else:
        replay_clock = ReplayClock()
        origin = 0
        hearing = build_hearing(config, recognizer, understanding, replay_clock, origin)
        events = list(replay(front_end(config, source.frames()), hearing, replay_clock))
    return summarize(source.name, events, origin)


def summarize(name: str, events: list[Event], origin_ns: int = 0) -> list[dict[str, Any]]:
    """Per-utterance records (the `--json` fields) from a pipeline's events."""
    standing: dict[int, IntentCommitted | None] = {}
    finals: dict[int, TranscriptFinal] = {}
    records = []
    for event in events:
        if isinstance(event, IntentCommitted):
            standing[event.utterance_id] = event
        elif isinstance(event, IntentCorrected):
            standing[event.utterance_id] = event.replacement
        elif isinstance(event, TranscriptFinal):
            finals[event.utterance_id] = event
        elif isinstance(event, UtteranceHeard):
            commit = standing.get(event.utterance_id)
            busy = sum(v for k, v in event.stages_ns.items() if k != "audio")
            audio = event.stages_ns.get("audio", 0)
            records.append(
                {
                    "file": name,
                    "transcript": event.text,
                    "intent": commit.intent if commit else None,
                    "slots": commit.slots if commit else {},
                    "confidence": round(commit.confidence, 3) if commit else 0.0,
                    "speech_start_s": _s(event.speech_start_ns - origin_ns),
                    "speech_end_s": _s(event.speech_end_ns - origin_ns),
                    "final_s": _s(event.final_t_ns - origin_ns),
                    "commit_s": _s(commit.t_ns - origin_ns) if commit else None,
                    "commit_latency_ms": round((commit.t_ns - event.speech_end_ns) / 1e6, 1)
                    if commit
                    else None,
                    "rtf": round(busy / audio, 3) if audio else None,
                    "lr_score": None if event.lr_score is None else round(event.lr_score, 2),
                }
            )
    return records


def _s(ns: int) -> float:
    return round(ns / 1e9, 3)


def format_record(record: dict[str, Any], as_json: bool) -> str:
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
