"""Home Assistant's conversation agent as a tier between the local model and the edge: the
real client (`sori.thinking.home_assistant`) against a loopback server answering in HA's
documented shapes (tests/ha_server.py), inside the real router."""

from __future__ import annotations

import asyncio
import logging

from test_router import FakeEdge, FakeLocal, Presets

from broker import free_port
from ha_server import TOKEN, HaServer
from sori.assemble.thinking import conversation_from_config
from sori.core.config import parse_config
from sori.core.events import AnswerSentence
from sori.thinking.base import Judgment
from sori.thinking.home_assistant import HaConversation
from sori.thinking.router import Router


def turn(router: Router, text: str):
    events: list = []

    async def go():
        try:
            return await router.ask(text, on_event=events.append)
        finally:
            await router.home.aclose()

    routed = asyncio.run(asyncio.wait_for(go(), 20))
    return [e.text for e in events if isinstance(e, AnswerSentence)], routed


def test_ha_carries_out_what_it_understands_and_sori_speaks_its_answer(caplog):
    caplog.set_level(logging.INFO, "sori.thinking.home_assistant")
    local, edge = FakeLocal(Judgment(None, {}, True, 0.9)), FakeEdge()
    with HaServer() as ha:
        home = HaConversation(ha.url, TOKEN, agent_id="conversation.home_assistant")
        router = Router(Presets({}), local, edge, home=home)
        said, routed = turn(router, "차고 문 좀 열어줄래")
        assert ha.conversation == [
            {"text": "차고 문 좀 열어줄래", "language": "ko",
             "agent_id": "conversation.home_assistant"}
        ]  # fmt: skip
    assert said == ["차고 문을 열었어요"]
    assert routed.tier == "home_assistant" and routed.answer == "차고 문을 열었어요"
    assert "acted on: cover.garage_door" in routed.reason
    assert edge.asked == [] and local.streamed == []  # nothing after HA
    assert "cover.garage_door" in caplog.text  # the action HA performed is logged


def test_what_ha_does_not_understand_goes_on_to_the_edge():
    local, edge = FakeLocal(Judgment(None, {}, True, 0.9)), FakeEdge()
    with HaServer() as ha:
        ha.conversation_answer = {
            "conversation_id": "x",
            "response": {
                "response_type": "error",
                "language": "ko",
                "data": {"code": "no_intent_match"},
                "speech": {"plain": {"speech": "죄송해요, 이해하지 못했어요"}},
            },
        }
        router = Router(Presets({}), local, edge, home=HaConversation(ha.url, TOKEN))
        said, routed = turn(router, "양자역학이 뭐야")
    assert routed.tier == "edge" and "Home Assistant did not understand" in routed.reason
    assert "죄송해요" not in " ".join(said)


def test_ha_down_or_a_bad_token_falls_through_to_the_local_answer():
    for url, token in ((f"http://127.0.0.1:{free_port()}", TOKEN), (None, "wrong")):
        local = FakeLocal(Judgment(None, {}, False, 0.9))
        with HaServer() as ha:
            router = Router(Presets({}), local, None, home=HaConversation(url or ha.url, token))
            _, routed = turn(router, "안녕")
        assert routed.tier == "local", routed.reason
        assert "Home Assistant did not understand" in routed.reason


def test_the_config_turns_it_on_with_its_agent_and_language(monkeypatch):
    config = parse_config(
        {"home_assistant": {"url": "http://ha.test:8123", "conversation": True,
                            "agent_id": "conversation.chatgpt"}}
    )  # fmt: skip
    monkeypatch.setenv("SORI_HA_TOKEN", TOKEN)
    tier = conversation_from_config(config)
    assert tier.endpoint == "http://ha.test:8123/api/conversation/process"
    assert (tier.agent_id, tier.language) == ("conversation.chatgpt", "ko")
    monkeypatch.delenv("SORI_HA_TOKEN")
    assert conversation_from_config(config) is None  # no token: off, with a warning
    assert conversation_from_config(parse_config({})) is None


def test_conversation_without_a_url_is_refused_naming_the_key():
    import pytest

    from sori.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"home_assistant\.url must be set"):
        parse_config({"home_assistant": {"conversation": True}})
