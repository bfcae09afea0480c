"""The console of `sori run`: one plain line per turn on stdout, and why nothing happened.

    heard "거실 불 꺼 줘" → HassTurnOff 거실 조명 (84 ms)
    no turn: 2 utterances heard, but not the wake phrase 소리야 (say it first, or run with
    --no-wake to hear every utterance)

It observes the daemon's events (`Daemon.listeners`); the JSON logs stay on stderr. An
utterance that ends with speech heard and no turn is explained when the input ends, or
once a minute of microphone has passed (`flush`), by `explain`, which `sori replay` and
`sori wake` share.
"""

from __future__ import annotations

import sys
from collections import deque
from dataclasses import dataclass, field
from typing import TextIO

from sori.core.events import (
    ActionFinished,
    Event,
    IntentCommitted,
    SpeechStarted,
    SpeechStopped,
    TurnFinished,
    UtteranceHeard,
    WakeDetected,
)

MS = 1_000_000
HEARING = (SpeechStarted, SpeechStopped, WakeDetected, UtteranceHeard)
FLUSH_NS = 60 * 1_000_000_000
"""Microphone time after which utterances that made no turn are explained."""
SETTLE_NS = 10 * 1_000_000_000
"""An utterance this old (after its end) with no turn is taken to make none."""
QUOTE_CHARS = 80
"""Longest transcript quoted in a line, in characters."""


def quoted(text: str) -> str:
    text = " ".join(text.split())
    return f'"{text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"}"'


def explain(
    unwoken: int, not_understood: list[str], empty: int, phrases: list[str], no_wake_flag: bool
) -> list[str]:
    """The `no turn:` lines for utterances that made nothing: `unwoken` without the wake
    phrase (`phrases`), the transcripts of `not_understood` ones, `empty` with no words."""
    lines = []
    if unwoken:
        said = " or ".join(phrases) or "the wake phrase"
        hint = ", or run with --no-wake to hear every utterance" if no_wake_flag else ""
        lines.append(
            f"no turn: {_count(unwoken)} heard, but not the wake phrase {said} "
            f"(say {said} first{hint})"
        )
    for text in not_understood:
        lines.append(f"no turn: heard {quoted(text)}, but it was not understood as a command")
    if empty:
        lines.append(f"no turn: {_count(empty)} heard, but no words were recognized in it")
    return lines


def _count(n: int) -> str:
    return f"{n} utterance{'s' if n != 1 else ''}"


@dataclass
class _Utterance:
    """What one utterance has made so far."""

    ended_ns: int | None = None
    """Clock time it ended (SpeechStopped), None while it goes on."""
    woken: bool = False
    text: str | None = None
    """Its transcript, None while none came (unheard: not woken)."""


@dataclass
class Console:
    """Prints the turns and the utterances that made none (see the module docstring)."""

    phrases: list[str]
    """The wake phrases, named in the `no turn:` line."""
    gated: bool
    """Utterances need the wake phrase."""
    out: TextIO = field(default_factory=lambda: sys.stdout)
    _utterances: dict[int, _Utterance] = field(default_factory=dict)
    _commits: dict[int, list[IntentCommitted]] = field(default_factory=dict)
    _actions: dict[int, list[ActionFinished]] = field(default_factory=dict)
    _turned: deque[int] = field(default_factory=lambda: deque(maxlen=64))
    """Utterances that made a turn: their late hearing events change nothing."""
    _flushed_ns: int | None = None

    def observe(self, event: Event) -> None:
        """One daemon event (a `Daemon.listeners` entry)."""
        uid = getattr(event, "utterance_id", None)
        if uid in self._turned and isinstance(event, HEARING):
            pass  # an utterance's UtteranceHeard comes after an early commit's turn
        elif isinstance(event, SpeechStarted):
            self._utterances[event.utterance_id] = _Utterance()
        elif isinstance(event, SpeechStopped):
            self._utterance(uid).ended_ns = event.t_ns
        elif isinstance(event, WakeDetected):
            self._utterance(uid).woken = True
        elif isinstance(event, UtteranceHeard):
            self._utterance(uid).text = event.text
        elif isinstance(event, IntentCommitted):
            self._commits.setdefault(event.utterance_id, []).append(event)
            self._turned.append(event.utterance_id)
            self._utterances.pop(event.utterance_id, None)
        elif isinstance(event, ActionFinished):
            self._actions.setdefault(event.utterance_id, []).append(event)
        elif isinstance(event, TurnFinished):
            self._turned.append(event.utterance_id)
            self._utterances.pop(event.utterance_id, None)
            self._print(self.turn_line(event))
        if self._flushed_ns is None:
            self._flushed_ns = event.t_ns
        elif event.t_ns - self._flushed_ns >= FLUSH_NS:
            self.flush(event.t_ns - SETTLE_NS)

    def turn_line(self, event: TurnFinished) -> str:
        """`heard "…" → Intent target (N ms)`, or `no turn: …` for one not understood."""
        commits = self._commits.pop(event.utterance_id, [])
        actions = self._actions.pop(event.utterance_id, [])
        source = "heard" if event.utterance_id < 1_000_000 else "said"
        said = f"{source} {quoted(event.text)}"
        if not event.intent and event.tier in ("", "none"):
            reply = f' (replied "{event.response}")' if event.response else ""
            return f"no turn: {said}, but it was not understood as a command{reply}"
        if commits:  # each command with what it named: "HassTurnOn 거실 조명 + HassTurnOff 에어컨"
            what = " + ".join(f"{c.intent} {_target(c)}".strip() for c in commits)
        elif event.intent:
            named = dict.fromkeys(a.target for a in actions if a.target)  # each once
            what = " ".join([event.intent.replace("+", " + "), *named])
        else:
            what = event.tier
        if event.response and not any(a.target for a in actions):  # an answer: say it
            what += f": {quoted(event.response)}"
        failed = [a for a in actions if not a.ok]
        if failed:
            what += " — failed: " + "; ".join(dict.fromkeys(a.detail or a.target for a in failed))
        if event.error and not failed:
            what += f" — error: {event.error}"
        return f"{said} → {what} ({_latency_ms(event.stages_ns)} ms)"

    def flush(self, before_ns: int | None = None) -> None:
        """Explain the utterances that ended (before `before_ns`, clock time; all when
        None) with speech heard and no turn."""
        done = [
            uid for uid, u in self._utterances.items()
            if u.ended_ns is not None and (before_ns is None or u.ended_ns <= before_ns)
        ]  # fmt: skip
        if before_ns is not None:
            self._flushed_ns = before_ns + SETTLE_NS
        gone = [self._utterances.pop(uid) for uid in done]
        unwoken = sum(1 for u in gone if u.text is None and self.gated)
        texts = [u.text for u in gone if u.text and u.text.strip()]
        empty = sum(1 for u in gone if u.text is not None and not u.text.strip())
        for line in explain(unwoken, texts, empty, self.phrases, True):
            self._print(line)

    def _utterance(self, uid: int | None) -> _Utterance:
        return self._utterances.setdefault(uid if uid is not None else -1, _Utterance())

    def _print(self, line: str) -> None:
        print(line, file=self.out, flush=True)


def _target(committed: IntentCommitted) -> str:
    """The device or area a command named ("거실 조명"), as said."""
    slots = committed.slots
    for key in ("name", "area", "floor"):
        value = slots.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _latency_ms(stages_ns: dict[str, int]) -> int:
    """From the end of speech (or the text's arrival) to the action done or the first
    audio of the reply, in milliseconds."""
    heard = stages_ns.get("speech_end_to_commit", 0) + stages_ns.get("understand", 0)
    after = stages_ns.get("first_audio", stages_ns.get("act", 0))
    return round((heard + after) / MS)
