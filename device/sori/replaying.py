"""Replaying audio through the hearing pipeline: the driver behind `sori replay` (and
the benchmarks), beside the daemon, which drives the same pipeline from the microphone.

A replay runs as fast as the CPU allows on a simulated clock that reports latencies as if
the audio had arrived in real time, or paced like a microphone (`realtime`).
"""

from __future__ import annotations

from typing import Any

from sori.assemble.hearing import build_hearing, front_end
from sori.clock import MonotonicClock
from sori.config import Config
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


def replay_source(
    source: Any, config: Config, recognizer: Any, understanding: Any, realtime: bool = False
) -> list[dict[str, Any]]:
    """Run one source through a fresh pipeline; one record per utterance."""
    events, origin = replay_events(source, config, recognizer, understanding, realtime)
    return summarize(source.name, events, origin)


def replay_events(
    source: Any, config: Config, recognizer: Any, understanding: Any, realtime: bool = False
) -> tuple[list[Event], int]:
    """Run one source through a fresh pipeline; its events and the clock time it began."""
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
    return events, origin


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
