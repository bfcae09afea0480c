"""The router's decisions, with stand-in tiers (the real tiers are tested on their own)."""

from __future__ import annotations

import ast
import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sori.core.clock import FakeClock
from sori.core.events import (
    AnswerChunk,
    AnswerSentence,
    AnswerStarted,
    AnswerStopped,
    IntentCommitted,
    TurnRouted,
)
from sori.thinking import router as router_module
from sori.thinking.base import Ask, EdgeInterrupted, EdgeUnavailable, Judgment, Token
from sori.thinking.router import (
    CANNOT_ANSWER,
    CANNOT_REACH,
    DEVICE_NOTE,
    INTERRUPTED_NOTE,
    Router,
    RouterSettings,
)


@dataclass
class Hit:
    intent: str
    slots: dict[str, Any] = field(default_factory=dict)
    confidence: float = 1.0
    response: str = "네"


class Presets:
    def __init__(self, table: dict[str, Hit]) -> None:
        self.table = table
        self.calls: list[str] = []

    def __call__(self, text: str) -> Hit | None:
        self.calls.append(text)
        return self.table.get(text)


class FakeLocal:
    def __init__(
        self,
        judgment: Judgment | None = None,
        answer: tuple[str, ...] = ("작은 모델의 ", "답이에요. ", "끝."),
        hang: bool = False,
        clock: FakeClock | None = None,
        judge_ns: int = 0,
    ) -> None:
        self.judgment = judgment or Judgment(None, {}, False, 0.9)
        self.answer = answer
        self.hang = hang
        self.clock = clock
        self.judge_ns = judge_ns
        self.judged: list[Ask] = []
        self.streamed: list[Ask] = []

    async def judge(self, ask: Ask) -> Judgment:
        self.judged.append(ask)
        if self.clock is not None:
            self.clock.advance_ns(self.judge_ns)
        if isinstance(self.judgment, Exception):
            raise self.judgment
        return self.judgment

    async def stream(self, ask: Ask):
        self.streamed.append(ask)
        for piece in self.answer:
            yield Token(piece)
        if self.hang:
            await asyncio.sleep(3600)


class FakeEdge:
    URL = "http://edge.test/v1"

    def __init__(
        self, pieces: tuple[str, ...] = ("Edge ", "answer. ", "Two."), fail: Exception | None = None
    ) -> None:
        self.pieces = pieces
        self.fail = fail
        self.asked: list[Ask] = []

    async def stream(self, ask: Ask):
        self.asked.append(ask)
        for piece in self.pieces:
            yield Token(piece, self.URL)
        if self.fail is not None:
            raise self.fail


def run(router: Router, text: str, **kwargs) -> tuple[list, TurnRouted]:
    events: list = []

    async def go():
        return await router.ask(text, on_event=events.append, **kwargs)

    routed = asyncio.run(asyncio.wait_for(go(), timeout=20))
    return events, routed


def kinds(events: list) -> list[type]:
    return [type(e) for e in events]


def test_a_confident_preset_commits_and_nothing_else_runs():
    local, edge = FakeLocal(), FakeEdge()
    router = Router(Presets({"불 켜": Hit("HassTurnOn", {"area": "거실"})}), local, edge)
    events, routed = run(router, "불 켜")
    assert kinds(events) == [IntentCommitted, TurnRouted]
    assert (routed.tier, routed.intent, routed.slots, routed.answer) == (
        "preset",
        "HassTurnOn",
        {"area": "거실"},
        "네",
    )
    assert "preset HassTurnOn matched" in routed.reason
    assert routed.ttft_ns is not None and routed.ttft_ns <= routed.total_ns
    assert local.judged == [] and local.streamed == [] and edge.asked == []


def test_an_unsure_preset_falls_through_to_the_local_model():
    local = FakeLocal()
    router = Router(Presets({"불 켜": Hit("HassTurnOn", confidence=0.5)}), local, FakeEdge())
    _, routed = run(router, "불 켜")
    assert routed.tier == "local"
    assert "too unsure (0.50 < 0.80)" in routed.reason
    assert len(local.judged) == 1


def test_the_local_model_maps_a_paraphrase_onto_an_intent():
    local = FakeLocal(Judgment("HassTurnOff", {"name": "거실 조명"}, False, 0.7))
    events, routed = run(Router(Presets({}), local, FakeEdge()), "거실 조명 좀 꺼 줄래")
    assert kinds(events) == [IntentCommitted, TurnRouted]
    assert events[0].confidence == 0.7
    assert (routed.tier, routed.intent, routed.slots) == (
        "local",
        "HassTurnOff",
        {"name": "거실 조명"},
    )
    assert local.streamed == []


def test_an_unsure_local_intent_is_answered_instead():
    local = FakeLocal(Judgment("HassTurnOff", {}, False, 0.1))
    _, routed = run(Router(Presets({}), local, FakeEdge()), "음 그거 꺼")
    assert routed.tier == "local" and routed.intent is None
    assert "too unsure (0.10 < 0.30)" in routed.reason
    assert len(local.streamed) == 1


def test_a_local_answer_streams_as_chunks_then_sentences():
    local = FakeLocal(answer=("하늘이 파란 ", "이유는 산란 때문이에요. ", "그래서 파래요."))
    events, routed = run(Router(Presets({}), local, FakeEdge()), "하늘은 왜 파래?")
    assert kinds(events) == [
        AnswerStarted,
        AnswerChunk,
        AnswerChunk,
        AnswerSentence,
        AnswerChunk,
        AnswerSentence,
        AnswerStopped,
        TurnRouted,
    ]
    sentences = [e for e in events if isinstance(e, AnswerSentence)]
    assert [(s.index, s.text) for s in sentences] == [
        (0, "하늘이 파란 이유는 산란 때문이에요."),
        (1, "그래서 파래요."),
    ]
    assert routed.tier == "local" and routed.endpoint == ""
    assert routed.answer == "하늘이 파란 이유는 산란 때문이에요. 그래서 파래요."
    assert "local model judged it can answer" in routed.reason
    assert routed.ttft_ns <= routed.first_sentence_ns <= routed.total_ns
    assert local.streamed[0].language == "ko"


def test_the_local_models_judgment_escalates_to_the_edge():
    local, edge = FakeLocal(Judgment(None, {}, True, 0.8)), FakeEdge()
    events, routed = run(Router(Presets({}), local, edge), "what should I cook tonight")
    assert routed.tier == "edge" and routed.endpoint == FakeEdge.URL
    assert routed.answer == "Edge answer. Two."
    assert "local model judged it needs reasoning" in routed.reason
    assert edge.asked[0].deep is False and edge.asked[0].language == "en"
    assert local.streamed == []
    assert {e.source for e in events if isinstance(e, AnswerChunk)} == {FakeEdge.URL}


def test_planning_words_escalate_without_asking_the_local_model_and_mark_deep():
    local, edge = FakeLocal(), FakeEdge()
    _, routed = run(Router(Presets({}), local, edge), "제주도 여행 계획 좀 세워 줘")
    assert routed.tier == "edge"
    assert "rule: asks for planning or multi-step reasoning ('계획')" in routed.reason
    assert edge.asked[0].deep is True
    assert local.judged == []


def test_no_reachable_edge_means_a_device_answer_with_a_spoken_note_first():
    local = FakeLocal(Judgment(None, {}, True, 0.8))
    edge = FakeEdge(pieces=(), fail=EdgeUnavailable("http://edge.test/v1: cannot connect"))
    events, routed = run(Router(Presets({}), local, edge), "우주는 얼마나 커?")
    sentences = [e.text for e in events if isinstance(e, AnswerSentence)]
    assert sentences[0] == DEVICE_NOTE["ko"]
    assert routed.tier == "local" and routed.endpoint == ""
    assert routed.answer.startswith(DEVICE_NOTE["ko"])
    assert "edge unavailable (http://edge.test/v1: cannot connect); answered on device" in (
        routed.reason
    )
    assert len(local.streamed) == 1


def test_an_edge_that_breaks_off_midway_hands_over_to_the_device():
    local = FakeLocal(Judgment(None, {}, True, 0.8))
    edge = FakeEdge(
        pieces=("The first sentence. ", "And then"),
        fail=EdgeInterrupted("stream cut off", "The first sentence. And then", FakeEdge.URL),
    )
    events, routed = run(Router(Presets({}), local, edge), "tell me a long story about space")
    stopped = [e for e in events if isinstance(e, AnswerStopped)]
    assert stopped[0].interrupted is True and stopped[0].text == "The first sentence. And then"
    sentences = [e.text for e in events if isinstance(e, AnswerSentence)]
    assert sentences[:3] == ["The first sentence.", "And then", INTERRUPTED_NOTE["en"]]
    assert routed.tier == "local" and routed.endpoint == FakeEdge.URL
    assert "edge broke off (stream cut off)" in routed.reason
    assert stopped[-1].interrupted is False


def test_no_edge_configured_answers_on_the_device_with_the_note():
    local = FakeLocal()
    _, routed = run(Router(Presets({}), local, None), "양자역학을 설명해 줘")
    assert routed.tier == "local"
    assert "no edge configured" in routed.reason
    assert routed.answer.startswith(DEVICE_NOTE["ko"])


def test_memory_is_shared_and_presets_are_tried_on_every_follow_up():
    presets = Presets({"불 켜": Hit("HassTurnOn", response="켰어요")})
    local, edge = FakeLocal(), FakeEdge()
    router = Router(presets, local, edge, RouterSettings(memory_turns=2))
    run(router, "불 켜")
    run(router, "고마워")
    run(router, "설명해 줘")  # rule → edge
    assert presets.calls == ["불 켜", "고마워", "설명해 줘"]
    assert [t.user for t in local.streamed[0].history] == ["불 켜"]
    assert [t.assistant for t in local.streamed[0].history] == ["켰어요"]
    assert [t.user for t in edge.asked[0].history] == ["불 켜", "고마워"]
    run(router, "불 켜")
    assert [t.user for t in router.memory.turns()] == ["설명해 줘", "불 켜"]


def test_forced_tiers():
    presets = Presets({"불 켜": Hit("HassTurnOn")})
    local, edge = FakeLocal(Judgment(None, {}, True, 0.9)), FakeEdge()
    router = Router(presets, local, edge)
    _, routed = run(router, "모르는 말", force="preset")
    assert (routed.tier, routed.intent, routed.answer) == ("none", None, "")
    assert "no preset matched" in routed.reason
    _, routed = run(router, "불 켜", force="local")
    assert routed.tier == "local" and routed.intent is None  # presets skipped
    assert edge.asked == []  # the local tier never escalates when forced
    assert "needs reasoning; local tier forced" in routed.reason
    _, routed = run(router, "불 켜", force="edge")
    assert routed.tier == "edge" and "edge forced" in routed.reason


def test_a_forced_edge_that_fails_does_not_fall_back():
    local = FakeLocal()
    edge = FakeEdge(pieces=(), fail=EdgeUnavailable("down"))
    _, routed = run(Router(None, local, edge), "hi", force="edge")
    assert routed.tier == "none" and routed.answer == ""
    assert local.streamed == []


def test_a_hanging_local_answer_is_cut_at_its_deadline():
    local = FakeLocal(answer=("시작해요. ",), hang=True)
    router = Router(Presets({}), local, None, RouterSettings(local_deadline_ms=200))
    events, routed = run(router, "천천히 말해 줘")
    assert routed.answer == "시작해요."
    assert "local answer cut at its deadline" in routed.reason
    assert [e.interrupted for e in events if isinstance(e, AnswerStopped)] == [True]


def test_the_edge_gets_what_is_left_of_the_first_token_budget():
    clock = FakeClock()
    local = FakeLocal(Judgment(None, {}, True, 0.9), clock=clock, judge_ns=1_200_000_000)
    edge = FakeEdge()
    settings = RouterSettings(first_token_budget_ms=3000)
    run(Router(Presets({}), local, edge, settings, clock=clock), "뭘 입을지 골라 줘")
    assert edge.asked[0].first_token_timeout_s == pytest.approx(1.8)
    clock2 = FakeClock()
    slow = FakeLocal(Judgment(None, {}, True, 0.9), clock=clock2, judge_ns=5_000_000_000)
    edge2 = FakeEdge()
    run(Router(Presets({}), slow, edge2, settings, clock=clock2), "뭘 입을지 골라 줘")
    assert edge2.asked[0].first_token_timeout_s == router_module.MIN_EDGE_S


def test_a_broken_local_judge_does_not_end_the_turn():
    local = FakeLocal(RuntimeError("llama exploded"))
    _, routed = run(Router(Presets({}), local, FakeEdge()), "안녕")
    assert routed.tier == "local" and "llama exploded" in routed.reason
    assert routed.answer


def test_the_router_imports_no_backend():
    tree = ast.parse(Path(router_module.__file__).read_text(encoding="utf-8"))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sori")
    }
    assert imported <= {
        "sori.thinking.base",
        "sori.thinking.rules",
        "sori.thinking.sentences",
        "sori.thinking.leaks",
        "sori.core.events",
        "sori.core.clock",
    }


def test_an_answer_never_recites_the_prompt_or_an_earlier_users_words():
    """A weak model parrots what its prompt holds: the instruction and, through the memory,
    what an earlier user said. Those sentences are never spoken; the rest is."""
    router = Router(None, FakeLocal(answer=("우리 집 비밀번호는 일이삼사라고 했어요. ",)),
                    None, RouterSettings(memory_turns=4))  # fmt: skip
    router.memory.add("우리 집 비밀번호는 일이삼사야 기억해 줘", "알겠어요.")
    events, routed = run(router, "하늘은 왜 파래")
    assert not [e for e in events if isinstance(e, AnswerSentence)]
    assert routed.answer == "" and "withheld" in routed.reason

    recital = "(Answer in Korean (한국어), in one or two short spoken sentences.) "
    router = Router(None, FakeLocal(answer=(recital, "빛이 흩어져서 그래요.")), None)
    events, routed = run(router, "하늘은 왜 파래")
    spoken = [e.text for e in events if isinstance(e, AnswerSentence)]
    assert spoken == ["빛이 흩어져서 그래요."]
    assert routed.answer == "빛이 흩어져서 그래요."


def test_an_answer_may_echo_the_users_own_question():
    router = Router(None, FakeLocal(answer=("하늘이 파란 이유는 빛이 흩어져서예요.",)), None)
    router.memory.add("하늘이 파란 이유는 뭐야", "잘 모르겠어요.")  # asked again, now
    events, routed = run(router, "하늘이 파란 이유는 뭐야")
    assert routed.answer == "하늘이 파란 이유는 빛이 흩어져서예요."


def test_a_local_model_that_does_not_answer_says_so_at_once():
    local = FakeLocal()
    router = Router(None, local, None, RouterSettings(local_answers=False))
    events, routed = run(router, "하늘은 왜 파래")
    assert [e.text for e in events if isinstance(e, AnswerSentence)] == [CANNOT_ANSWER["ko"]]
    assert local.streamed == [] and "router.local_answers" in routed.reason
    _, forced = run(router, "하늘은 왜 파래", force="local")  # forcing it still asks
    assert forced.answer == "작은 모델의 답이에요. 끝." and len(local.streamed) == 1


def test_with_no_edge_answering_a_local_model_that_does_not_answer_says_why():
    local = FakeLocal()
    edge = FakeEdge(pieces=(), fail=EdgeUnavailable("down"))
    router = Router(None, local, edge, RouterSettings(local_answers=False))
    _, routed = run(router, "이 문제를 단계별로 설명해 줘")
    assert routed.answer == CANNOT_REACH["ko"] and local.streamed == []
