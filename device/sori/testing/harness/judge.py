"""Whether what the pipeline heard meets a fixture's expectations.

A pure step: replay records in (sori.testing.replaying's per-utterance dicts), failures out, each
a line a tester can act on. Slots compare the way Home Assistant's intent tests compare
them (sori.testing.conformance.slots_agree): every expected slot present with an equal value,
extra slots allowed, a name or area agreeing when it names the same entity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sori.core.intent_kinds import is_command
from sori.testing.conformance import slots_agree
from sori.testing.fakes import character_errors
from sori.testing.harness.manifest import Expectation, Fixture


@dataclass
class Verdict:
    """How one run of a fixture went."""

    failures: list[str] = field(default_factory=list)
    """One line per unmet expectation; empty: passed."""
    false_actions: int = 0
    """Command intents committed that no expectation asked for."""
    cer: float | None = None
    """Character error rate over the transcripts checked (edits / reference characters)."""
    checks: list[dict[str, Any]] = field(default_factory=list)
    """Per expectation: which utterances it was held against and its own failures."""

    @property
    def passed(self) -> bool:
        return not self.failures


def judge(
    fixture: Fixture, records: list[dict[str, Any]], presets: Any, talker_from_s: float = 0.0
) -> Verdict:
    """Hold `records` (one per utterance heard) against the fixture's expectations.

    The fixture's talker begins `talker_from_s` into the audio (a room's interferer plays
    alone first, `conditions.talker_from_s`): utterances over by then are the
    interferer's, held to no expectation; one that acted is a false action and a
    failure."""
    verdict = Verdict()
    before: list[dict[str, Any]] = []
    if talker_from_s:
        before = [r for r in records if r["speech_end_s"] <= talker_from_s]
        records = [r for r in records if r["speech_end_s"] > talker_from_s]
    for record in before:
        if _acted(record):
            verdict.false_actions += 1
            verdict.failures.append(
                f"before the talker spoke, the interferer alone committed "
                f"{_meaning(record['intent'], record['slots'])} (heard {record['transcript']!r})"
            )
    edits = chars = 0
    if fixture.per_utterance:
        if len(records) != len(fixture.expect):
            verdict.failures.append(
                f"heard {len(records)} utterance(s), expected {len(fixture.expect)}: "
                + " | ".join(repr(r["transcript"]) for r in records)
            )
        groups = [[r] for r in records[: len(fixture.expect)]]
        groups += [[] for _ in range(len(fixture.expect) - len(groups))]
        pairs = list(zip(fixture.expect, groups, strict=True))
    else:
        pairs = [(fixture.expect[0], records)]
    expected_commands = []
    for j, (expect, group) in enumerate(pairs):
        label = f"utterance {j + 1}: " if fixture.per_utterance else ""
        failures, counts = _check(expect, group, presets)
        edits, chars = edits + counts[0], chars + counts[1]
        verdict.failures += [label + f for f in failures]
        held = ([j] if group else []) if fixture.per_utterance else list(range(len(records)))
        verdict.checks.append({"utterances": held, "failures": failures})
        if expect.intent is not None:
            expected_commands.append(expect.intent)
    for record in records:
        intent = record["intent"]
        if _acted(record):
            if intent in expected_commands:
                expected_commands.remove(intent)
            else:
                verdict.false_actions += 1
    if chars:
        verdict.cer = round(edits / chars, 4)
    return verdict


def _check(
    expect: Expectation, group: list[dict[str, Any]], presets: Any
) -> tuple[list[str], tuple[int, int]]:
    failures: list[str] = []
    counts = (0, 0)
    heard = " ".join(r["transcript"] for r in group if r["transcript"])
    if expect.transcript is not None:
        counts = character_errors(expect.transcript, heard)
        cer = counts[0] / counts[1] if counts[1] else float(bool(heard.strip()))
        if cer > expect.max_cer:
            failures.append(
                f"transcript CER {cer:.2f} > {expect.max_cer:.2f}: heard {heard!r}, "
                f"expected {expect.transcript!r}"
            )
    committed = [r for r in group if r["intent"]]
    match = None
    if expect.intent is not None:
        match = next(
            (
                r
                for r in committed
                if r["intent"] == expect.intent and slots_agree(expect.slots, r["slots"], presets)
            ),
            None,
        )
        if match is None:
            wanted = _meaning(expect.intent, expect.slots)
            got = ", ".join(_meaning(r["intent"], r["slots"]) for r in committed) or "no intent"
            failures.append(f"expected {wanted}, got {got} (heard {heard!r})")
    if expect.no_action:
        acted = [r for r in group if _acted(r)]
        if acted:
            failures.append(
                "no action expected, but committed "
                + ", ".join(_meaning(r["intent"], r["slots"]) for r in acted)
                + f" (heard {heard!r})"
            )
    if expect.max_commit_ms is not None:
        for r in [match] if match else committed:
            latency = r["commit_latency_ms"]
            if latency is not None and latency > expect.max_commit_ms:
                failures.append(
                    f"commit {latency:.0f} ms after speech > {expect.max_commit_ms:.0f} ms "
                    f"({r['intent']})"
                )
    if expect.tier is not None:
        tier = _tier(group)
        if tier != expect.tier:
            failures.append(f"answered by tier {tier!r}, expected {expect.tier!r}")
    return failures, counts


def _acted(record: dict[str, Any]) -> bool:
    """Whether the utterance changed the world: with --act, the daemon's handlers did
    something; without, a command intent was committed (it would have)."""
    if "actions" in record:
        return any(a["handler"] != "local" or a["target"] for a in record["actions"])
    return bool(record["intent"]) and is_command(record["intent"])


def _tier(group: list[dict[str, Any]]) -> str:
    """Who answered: the daemon's tier with --act; else "preset" when one committed."""
    if any("tier" in r for r in group):
        return next((r["tier"] for r in group if r.get("tier", "none") != "none"), "none")
    return "preset" if any(r["intent"] for r in group) else "none"


def _meaning(intent: str, slots: dict[str, Any]) -> str:
    inner = ", ".join(f"{k}: {v}" for k, v in slots.items())
    return f"{intent} {{{inner}}}" if inner else intent
