"""The phrase set of the constrained recognizer pass: commands as people say them,
chosen by coverage, every one understood by the presets as meant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sori.cli import main
from sori.core.config.sections import PhrasesConfig
from sori.understanding.intents.phrases import DEFAULT_MAX_PHRASES, REQUEST_WORDS, native_words

EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "device" / "sori.example.toml"


@pytest.fixture(scope="module")
def chosen(presets):
    return presets.phrase_set(DEFAULT_MAX_PHRASES)


def test_the_config_default_is_the_generators_default():
    assert PhrasesConfig().max_phrases == DEFAULT_MAX_PHRASES


def test_most_phrases_carry_a_request_ending(chosen):
    endings = [p for p in chosen.phrases if REQUEST_WORDS.intersection(p.split())]
    assert len(endings) / len(chosen.phrases) > 0.6
    for word in ("줘", "줘요", "주세요", "줄래", "좀"):
        assert any(word in p.split() for p in chosen.phrases), word
    assert "거실 조명 켜 줘" in chosen.phrases
    assert "안방 에어컨 좀 꺼 줘" in chosen.phrases


def test_every_stratum_of_the_example_home_is_covered_within_the_default_budget(chosen):
    assert len(chosen.phrases) <= DEFAULT_MAX_PHRASES
    assert chosen.coverage == 1.0
    intents = {s.intent for s in chosen.strata}
    assert {"HassTurnOn", "HassLightSet", "HassStartTimer", "HassGetWeather"} <= intents
    # every device of the home is spoken of by name, for switching it on and off
    targets = {(s.intent, s.target.ident) for s in chosen.covered}
    for device in ("light.living_room", "lock.front_door", "switch.desk_plug", "fan.air_purifier"):
        assert ("HassTurnOff", device) in targets, device


def test_one_phrase_per_stratum_before_any_gets_a_second(presets, chosen):
    first = len(chosen.strata)
    small = presets.phrase_set(first)
    assert small.coverage == 1.0
    assert len(small.phrases) == first


def test_the_budget_is_respected_and_shrinks_coverage_not_the_rules(presets):
    small = presets.phrase_set(50)
    assert len(small.phrases) == 50
    assert small.coverage < 1.0
    assert len(small.covered) == 50  # one each: no stratum got two


def test_the_set_is_deterministic(presets):
    from sori.assemble.understanding import home_from_config
    from sori.core.config import load_config
    from sori.understanding.intents import load_presets

    again = load_presets("ko", home_from_config(load_config(str(EXAMPLE_CONFIG)).home))
    assert again.phrases(300) == presets.phrases(300)


def test_every_phrase_is_understood_as_its_intent(presets, chosen):
    by_phrase = {}
    # the generator records what each phrase was meant as only through the strata; the
    # matcher must give an exact match for every phrase, and the per-intent counts must
    # add up to what the matcher says
    for phrase in chosen.phrases:
        found = presets.match(phrase)
        assert found is not None and found.confidence == 1.0, phrase
        by_phrase[phrase] = found.intent
    counted = {}
    for intent in by_phrase.values():
        counted[intent] = counted.get(intent, 0) + 1
    assert counted == dict(chosen.per_intent)


def test_numbers_are_said_as_words(chosen):
    assert native_words(23) == "스물세" and native_words(20) == "스무"
    temperature = [p for p in chosen.phrases if "도" in p.split() or " 도로" in p]
    assert any("이십삼 도" in p for p in temperature)
    assert any("스물세 도" in p for p in temperature)
    assert any("오십 프로" in p for p in chosen.phrases)
    assert not any(c.isdigit() for p in chosen.phrases for c in p)


def test_the_homes_names_and_aliases_are_said(chosen):
    words = " ".join(chosen.phrases)
    for alias in ("거실 불", "현관 도어락", "책상 콘센트", "리빙룸", "큰방", "부엌"):
        assert alias in words, alias


def test_particles_are_said(chosen):
    assert any("를 " in p or "을 " in p for p in chosen.phrases)
    assert any(p.split()[-3].endswith("도로") for p in chosen.phrases if len(p.split()) > 2)


def test_sori_phrases_stats_json(capsys):
    assert main(["phrases", "--config", str(EXAMPLE_CONFIG), "--stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["kept"] == DEFAULT_MAX_PHRASES and stats["budget"] == DEFAULT_MAX_PHRASES
    assert stats["total"] > stats["kept"]
    assert stats["strata_covered"] == stats["strata"] and stats["coverage"] == 1.0
    assert stats["request_ending_share"] > 0.6
    assert stats["per_intent"]["HassTurnOn"] > 0
    assert sum(stats["per_intent"].values()) == stats["kept"]


def test_sori_phrases_prints_one_phrase_per_line(capsys):
    assert main(["phrases", "--config", str(EXAMPLE_CONFIG), "--max-phrases", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 20 and all(line.strip() for line in lines)


def test_sori_phrases_refuses_a_budget_below_one(capsys):
    assert main(["phrases", "--max-phrases", "0"]) == 2
    assert "--max-phrases" in capsys.readouterr().err
