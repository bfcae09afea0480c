"""Replaying audio through the hearing pipeline: the driver behind `sori replay` (and
the benchmarks), beside the daemon, which drives the same pipeline from the microphone.

A replay runs as fast as the CPU allows on a simulated clock that reports latencies as if
the audio had arrived in real time, or paced like a microphone (`realtime`). With a
microphone array (`audio.channels` > 1) a file is heard as the array recorded it, one
channel per microphone, through the array's front end.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sori.assemble.hearing import build_array, build_hearing, front_end, source_frames
from sori.assemble.wake import build_conversation
from sori.core.clock import MonotonicClock
from sori.core.config import Config
from sori.core.events import (
    Event,
    IntentCommitted,
    IntentCorrected,
    TranscriptFinal,
    UtteranceHeard,
    WakeDetected,
)
from sori.hearing.audio.denoise_decision import POOL as DENOISERS
from sori.hearing.pacing import ReplayClock, pace, replay
from sori.hearing.wake_gate import NeverOpen

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
    "constrained",
    "doa_deg",
)


def replay_source(
    source: Any,
    config: Config,
    recognizer: Any,
    understanding: Any,
    realtime: bool = False,
    wake: Any = None,
) -> list[dict[str, Any]]:
    """Run one source through a fresh pipeline; one record per utterance heard as a
    command. With a `wake` detector, as the daemon hears a file: an utterance is a command
    when it opens with a wake phrase or begins in a listening or follow-up window."""
    events, origin = replay_events(source, config, recognizer, understanding, realtime, wake)
    return summarize(source.name, events, origin)


def replay_events(
    source: Any,
    config: Config,
    recognizer: Any,
    understanding: Any,
    realtime: bool = False,
    wake: Any = None,
) -> tuple[list[Event], int]:
    """Run one source through a fresh pipeline; its events and the clock time it began.
    Each source is heard in a room of its own: what the denoisers learned of the last
    one's room is dropped, so a file is heard as it would be alone."""
    DENOISERS.forget()
    conversation = (
        build_conversation(config, source.name, keep_state=False) if wake is not None else None
    )
    array = build_array(config)
    heard = front_end(config, source_frames(source, config), array=array)
    if realtime:
        clock: Any = MonotonicClock()
        origin = clock.now_ns()
        hearing = build_hearing(
            config, recognizer, understanding, clock, origin, wake, conversation, array
        )
        frames = pace(heard, clock, origin)
        stream = (e for frame in frames for e in hearing.push(frame))
        events = list(_follow(stream, conversation)) + list(_follow(hearing.end(), conversation))
    else:
        clock = ReplayClock()
        origin = 0
        hearing = build_hearing(
            config, recognizer, understanding, clock, origin, wake, conversation, array
        )
        events = list(_follow(replay(heard, hearing, clock), conversation))
    return events, origin


def _follow(events: Iterable[Event], conversation: Any) -> Iterator[Event]:
    """`events` as they come, telling `conversation` (when there is one) what the daemon
    would: a wake phrase opens the listening window, a command the follow-up window."""
    for event in events:
        if conversation is not None:
            if isinstance(event, WakeDetected):
                conversation.woke(event.end_ns)
            elif isinstance(event, UtteranceHeard) and event.text.strip():
                conversation.heard(event.speech_end_ns)
        yield event


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
                    "constrained": event.constrained,
                    "doa_deg": event.doa_deg,
                }
            )
    return records


def _s(ns: int) -> float:
    return round(ns / 1e9, 3)


def wake_scan(source: Any, config: Config, detector: Any) -> list[dict[str, Any]]:
    """The wake phrases `detector` hears in one source, through the voice detector as the
    daemon hears them (`sori wake`): one record per detection, times in seconds from the
    start of the source."""
    clock = ReplayClock()
    hearing = build_hearing(config, None, None, clock, 0, detector, NeverOpen())
    return [
        {
            "file": source.name,
            "phrase": event.phrase,
            "start_s": _s(event.start_ns),
            "end_s": _s(event.end_ns),
            "score": round(event.score, 2),
        }
        for event in replay(front_end(config, source.frames()), hearing, clock)
        if isinstance(event, WakeDetected)
    ]
