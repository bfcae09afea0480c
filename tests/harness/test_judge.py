"""Judging replay records against expectations, the way Home Assistant's intent tests
compare slots; the presets are real (Korean packs over the shared fixture home)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sori.testing.harness.judge import judge
from sori.testing.harness.manifest import Expectation, Fixture
from sori.understanding.intents import load_presets
from sori.understanding.intents.loader import load_fixtures


@pytest.fixture(scope="module")
def presets(shared_dir):
    home = load_fixtures(shared_dir / "conformance" / "ha-intents-ko" / "_fixtures.yaml")
    return load_presets("ko", home)


def record(text: str, intent: str | None = None, latency: float | None = None, **slots):
    return {"transcript": text, "intent": intent, "slots": slots, "commit_latency_ms": latency}


def fixture(*expect: Expectation, per_utterance: bool = False) -> Fixture:
    return Fixture(0, "f", (Path("f.wav"),), expect, per_utterance)


def test_slots_agree_like_home_assistant_aliases_and_extra_slots(presets):
    # the area was spoken by an alias; we report the canonical name, plus a domain slot
    heard = record("현관문 조명 켜", "HassTurnOn", 80.0, area="현관", domain="light")
    want = Expectation(intent="HassTurnOn", slots={"area": "현관문"})
    assert judge(fixture(want), [heard], presets).passed
    wrong = Expectation(intent="HassTurnOn", slots={"area": "거실"})
    verdict = judge(fixture(wrong), [heard], presets)
    assert verdict.failures == [
        "expected HassTurnOn {area: 거실}, got HassTurnOn {area: 현관, domain: light} "
        "(heard '현관문 조명 켜')"
    ]


def test_no_action_fails_on_a_command_and_counts_a_false_action(presets):
    calm = Expectation(transcript="거실 조명 켜", no_action=True)
    fired = judge(fixture(calm), [record("거실 조명 켜", "HassTurnOn", 50.0, area="거실")], presets)
    assert not fired.passed and fired.false_actions == 1
    assert fired.failures[0].startswith("no action expected, but committed HassTurnOn")
    asked = judge(fixture(calm), [record("거실 조명 켜", "HassGetState", 50.0)], presets)
    assert asked.passed and asked.false_actions == 0  # a query changes nothing


def test_what_the_interferer_says_alone_first_is_held_to_nothing_but_acting(presets):
    """A room's television plays alone for a while before the talker (`lead_s`): its
    utterances are no part of the talker's, but one that acted is a false action."""
    tv = {**record("오늘 날씨 맑음"), "speech_end_s": 1.4}
    tv_acting = {**record("불 꺼", "HassTurnOff", 40.0, area="거실"), "speech_end_s": 1.4}
    talker = {**record("거실 조명 켜", "HassTurnOn", 60.0, area="거실"), "speech_end_s": 3.0}
    want = fixture(Expectation(intent="HassTurnOn", transcript="거실 조명 켜"), per_utterance=True)
    quiet_tv = judge(want, [tv, talker], presets, talker_from_s=1.5)
    assert quiet_tv.passed and quiet_tv.cer == 0.0 and quiet_tv.false_actions == 0
    assert not judge(want, [tv, talker], presets).passed  # held to it, two utterances for one
    loud_tv = judge(want, [tv_acting, talker], presets, talker_from_s=1.5)
    assert loud_tv.false_actions == 1 and not loud_tv.passed
    assert loud_tv.failures == [
        "before the talker spoke, the interferer alone committed HassTurnOff {area: 거실} "
        "(heard '불 꺼')"
    ]


def test_transcript_cer_latency_and_tier_limits(presets):
    want = Expectation(
        intent="HassTurnOn",
        transcript="거실 조명 켜 줘",
        max_cer=0.2,
        max_commit_ms=100,
        tier="preset",
    )
    ok = judge(fixture(want), [record("거실조명 켜줘", "HassTurnOn", 90.0)], presets)
    assert ok.passed and ok.cer == 0.0  # spacing is not an error
    slow = judge(fixture(want), [record("거실 주명 켜 줘", "HassTurnOn", 130.0)], presets)
    assert [f.split(" ")[0] for f in slow.failures] == ["commit"]
    assert slow.cer == pytest.approx(1 / 6, abs=1e-3)
    deaf = judge(fixture(want), [record("가실 주명 커 줘")], presets)
    assert [f.split(" ")[0] for f in deaf.failures] == ["transcript", "expected", "answered"]


def test_one_expectation_per_utterance_in_order(presets):
    both = fixture(
        Expectation(intent="HassTurnOn"), Expectation(intent="HassTurnOff"), per_utterance=True
    )
    on, off = record("켜", "HassTurnOn"), record("꺼", "HassTurnOff")
    assert judge(both, [on, off], presets).passed
    swapped = judge(both, [off, on], presets)
    assert [f[:12] for f in swapped.failures] == ["utterance 1:", "utterance 2:"]
    short = judge(both, [on], presets)
    assert short.failures[0].startswith("heard 1 utterance(s), expected 2")
    assert short.failures[1].startswith("utterance 2: expected HassTurnOff, got no intent")
