"""Turns no preset understands: the daemon speaks the router's sentences and acts on the
intents it maps. The router is the real one; its local tier is scripted here, because the
real model's answers are not fixed (tests/llm covers the model itself)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from daemon_kit import build, write_config
from sori.thinking.base import Ask, Judgment, Token
from sori.thinking.router import Router, RouterSettings


class ScriptedLocal:
    def __init__(self, judgment: Judgment, answer: list[str] | Exception) -> None:
        self.judgment = judgment
        self.answer = answer

    async def judge(self, ask: Ask) -> Judgment:
        return self.judgment

    async def stream(self, ask: Ask) -> AsyncIterator[Token]:
        if isinstance(self.answer, Exception):
            raise self.answer
        for piece in self.answer:
            yield Token(piece)


def run_turn(tmp_path, mosquitto, local, text):
    daemon = build(write_config(tmp_path, mosquitto), tmp_path / "reply.wav")
    daemon.thinker = Router(None, local, None, RouterSettings(language="ko"))

    async def main():
        try:
            return await asyncio.wait_for(daemon.say(text), 30)
        finally:
            await daemon.close()

    return daemon, asyncio.run(main())


def test_answer_sentences_are_spoken_in_order(tmp_path, mosquitto):
    local = ScriptedLocal(Judgment(None), ["오늘은 ", "맑아요. 좋은 ", "하루 보내세요."])
    daemon, turn = run_turn(tmp_path, mosquitto, local, "오늘 기분 어때")
    assert turn["tier"] == "local"
    assert turn["response"] == "오늘은 맑아요. 좋은 하루 보내세요."
    assert "first_audio" in turn["stages_ms"]
    assert daemon.metrics.turns == {"local": 1}


def test_an_intent_the_model_maps_is_acted_on(tmp_path, mosquitto, subscriber):
    judged = Judgment("HassTurnOff", {"name": "거실 조명", "domain": "light"}, confidence=0.9)
    _, turn = run_turn(
        tmp_path, mosquitto, ScriptedLocal(judged, []), "거실 분위기 좀 차분하게 만들어 줄래"
    )
    assert subscriber.next() == ("sori/light/living_room/set", "OFF")
    assert (turn["intent"], turn["tier"]) == ("HassTurnOff", "local")
    assert turn["actions"][0]["ok"]
    assert turn["response"] == "알겠어요."


def test_a_failing_tier_still_gets_a_reply(tmp_path, mosquitto):
    local = ScriptedLocal(Judgment(None), RuntimeError("model crashed"))
    _, turn = run_turn(tmp_path, mosquitto, local, "오늘 기분 어때")
    assert turn["response"] == "죄송해요, 잘 모르겠어요."


class SlowLocal(ScriptedLocal):
    """Answers after `delay_s`, as a small board's model takes its time."""

    def __init__(self, delay_s: float, answer: list[str]) -> None:
        super().__init__(Judgment(None), answer)
        self.delay_s = delay_s

    async def stream(self, ask: Ask) -> AsyncIterator[Token]:
        await asyncio.sleep(self.delay_s)
        async for token in super().stream(ask):
            yield token


def run_held_turn(tmp_path, mosquitto, local, hold_after_ms):
    daemon = build(write_config(tmp_path, mosquitto), tmp_path / "reply.wav")
    daemon.thinker = Router(None, local, None, RouterSettings(language="ko"))
    daemon.turns.hold_after_ms = hold_after_ms

    async def main():
        try:
            return await asyncio.wait_for(daemon.say("하늘은 왜 파래"), 30)
        finally:
            await daemon.close()

    return asyncio.run(main())


def test_a_slow_answer_is_preceded_by_the_holding_line_said_at_once(tmp_path, mosquitto):
    turn = run_held_turn(tmp_path, mosquitto, SlowLocal(1.5, ["빛이 흩어져서 그래요."]), 300)
    assert turn["response"] == "잠깐만요. 빛이 흩어져서 그래요."
    assert turn["stages_ms"]["first_audio"] < 1000  # the answer itself comes after 1.5 s


def test_a_quick_answer_gets_no_holding_line(tmp_path, mosquitto):
    turn = run_held_turn(tmp_path, mosquitto, SlowLocal(0.0, ["빛이 흩어져서 그래요."]), 800)
    assert turn["response"] == "빛이 흩어져서 그래요."
