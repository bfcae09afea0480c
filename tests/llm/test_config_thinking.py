"""The [llm], [router] and [edge] config sections."""

from __future__ import annotations

import pytest

from sori.assemble.thinking import edge_from_config, router_settings
from sori.core.config import parse_config
from sori.core.errors import ConfigError
from sori.thinking.base import Ask


def test_defaults_leave_the_edge_off():
    config = parse_config({})
    assert config.edge.endpoints == [] and config.edge.model == "local"
    assert edge_from_config(config.edge) is None
    assert config.llm.model == ""  # the embedded model


def test_an_endpoint_takes_its_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("MY_EDGE_KEY", "sk-env")
    config = parse_config(
        {
            "edge": {
                "allow_thinking": True,
                "deadline_ms": 9000,
                "endpoints": [
                    {"url": "https://edge.lan:8000/v1", "api_key_env": "MY_EDGE_KEY"},
                    {"url": "http://10.0.0.9:8000/v1", "api_key": "sk-config"},
                ],
            }
        }
    )
    client = edge_from_config(config.edge)
    first, second = client.endpoints
    assert (first.api_key, second.api_key) == ("sk-env", "sk-config")
    assert client.settings.allow_thinking is True and client.settings.deadline_ms == 9000
    assert "sk-config" not in repr(config)


def test_router_words_become_tuples():
    config = parse_config({"router": {"escalate_words": ["주식"], "first_token_budget_ms": 900}})
    settings = router_settings(config.router, "ko")
    assert settings.escalate_words == ("주식",) and settings.first_token_budget_ms == 900


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"edge": {"endpoints": [{"url": "10.0.0.9:8000"}]}}, "must start with http"),
        ({"edge": {"endpoints": [{}]}}, "missing key edge.endpoints[0].url"),
        ({"edge": {"deadline_ms": "soon"}}, "edge.deadline_ms must be an integer"),
        ({"llm": {"temperature": "hot"}}, "llm.temperature must be a number"),
        ({"router": {"budget": 1}}, "unknown key router.budget"),
    ],
)
def test_mistakes_name_the_key(data, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_config(data)


def test_the_vocabulary_comes_from_the_packs_and_the_home():
    import argparse
    from pathlib import Path

    from sori.assemble.thinking import intent_slots, vocabulary
    from sori.commands.options import load_understanding

    example = Path(__file__).resolve().parents[2] / "device" / "sori.example.toml"
    _, presets = load_understanding(argparse.Namespace(config=str(example), fixtures=None))
    slots = intent_slots(presets)
    assert {"area", "name"} <= set(slots["HassTurnOn"])
    assert {"hours", "minutes", "seconds"} <= set(slots["HassStartTimer"])
    assert not any(s.startswith("_") for names in slots.values() for s in names)
    vocab = vocabulary(presets)
    assert {i.name for i in vocab.intents} == set(presets.intent_names())
    assert "거실 조명" in vocab.devices and "거실" in vocab.areas and "light" in vocab.domains
    assert "curtain" in vocab.extra["device_class"]


@pytest.mark.parametrize(
    ("preload", "answers", "at_start"),
    [("auto", "auto", False), ("auto", "on", True), ("on", "off", True), ("off", "on", False)],
)
def test_the_local_model_loads_at_start_only_where_a_question_would_wait_for_it(
    preload, answers, at_start
):
    """The embedded model answers no open question (answer_score 0): with "auto" it loads
    at the first sentence the presets do not know, and a router turn then loads it."""
    import asyncio

    from sori.assemble.thinking import start_thinking
    from sori.assemble.understanding import presets_from_config
    from sori.core.home import Home

    config = parse_config({"llm": {"preload": preload}, "router": {"local_answers": answers}})
    router, closers, stoppers, loaders = start_thinking(
        config, presets_from_config(config.intents, Home())
    )
    try:
        for thread in loaders:
            thread.join(timeout=60)
        assert len(loaders) == at_start and (router.local._llm is not None) == at_start
        if not at_start:
            judged = asyncio.run(router.local.judge(Ask("창문 좀 열어 줄래", (), "ko")))
            assert router.local._llm is not None and judged is not None
    finally:
        for stop in stoppers:
            stop()
        for close in closers:
            asyncio.run(close())
