"""Korean as people say it to a speaker (issue 27): fillers, adverbs, self-corrections,
colloquial endings and household synonyms understood; negation, tense and mood kept, so
every look-alike non-command is still refused.

The sentences are in spontaneous_ko.tsv (sentence, intent or none, family, target word),
for the example home; `scripts/bench_intents.py` reports them by family, before and
after the normaliser, in one run.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sori.understanding.intents.korean import canonical, ending_length
from sori.understanding.intents.normalizer import (
    ADVERB,
    CORRECTION,
    FILLER,
    NEGATOR,
    WORD,
    reading,
    tag,
)
from sori.understanding.intents.splitting import continues, split_commands

HERE = Path(__file__).parent
COMMAND_FAMILIES = ("filler", "adverb", "correction", "ending", "synonym")
TARGET_SLOTS = ("name", "area", "domain", "device_class", "floor")


def rows() -> list[tuple[str, str, str, str]]:
    lines = (HERE / "spontaneous_ko.tsv").read_text(encoding="utf-8").splitlines()
    cells = [line.split("\t") for line in lines if line.strip() and not line.startswith("#")]
    return [tuple(row + [""] * (4 - len(row))) for row in cells[1:]]


def negatives() -> list[str]:
    lines = (HERE / "negatives_ko.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_set_has_100_sentences_and_every_family_both_ways():
    families = Counter(family for _, _, family, _ in rows())
    assert sum(families.values()) >= 100
    for family in COMMAND_FAMILIES:
        assert families[family] >= 10, family
    assert families["lookalike"] >= 40


@pytest.mark.parametrize(
    ("text", "intent", "target"),
    [(t, i, g) for t, i, f, g in rows() if f in COMMAND_FAMILIES],
)
def test_spontaneous_commands_are_understood(presets, text, intent, target):
    found = presets.match(text)
    assert found is not None, text
    assert found.intent == intent, f"{text!r} → {found.intent} {found.slots}"
    assert found.confidence == 1.0, text
    if target:
        assert any(target in str(v) for v in found.slots.values()), f"{text!r}: {found.slots}"


@pytest.mark.parametrize("text", [t for t, _, f, _ in rows() if f == "lookalike"])
def test_lookalike_non_commands_are_refused(presets, text):
    found = presets.match(text)
    assert found is None, f"{text!r} → {found.intent} {found.slots}"


def test_the_real_failure_is_understood(presets):
    # heard on a real recording; the example home has an air purifier (fan.air_purifier)
    assert any(d.id == "fan.air_purifier" for d in presets.home.devices)
    found = presets.match("공기청정기 이제 꺼 줘")
    assert (found.intent, found.slots["name"]) == ("HassTurnOff", "공기청정기")


# --- the tagger ------------------------------------------------------------------------


def test_the_tagger_knows_the_closed_classes():
    words = "음 거실 불 좀 빨리 안 꺼도 돼".split()
    assert tag(words) == [FILLER, WORD, WORD, ADVERB, ADVERB, NEGATOR, WORD, WORD]
    assert tag("안방 말고 거실 불 꺼 줘".split())[1] == CORRECTION
    assert tag("자 불 꺼".split())[0] == FILLER
    assert tag("불 꺼 자".split())[2] == WORD  # 자 opens a sentence, nothing else
    # 그만 is an adverb only before a verb of stopping: "그만 틀어" is "stop playing"
    assert tag("그만 티비 꺼".split())[0] == ADVERB
    assert tag("에어컨 그만 틀어".split())[1] == WORD
    # 좀 있다 is "in a while": a time, not a softener
    assert tag("좀 있다 불 꺼 줘".split())[0] == WORD
    # a syllable the recognizer split off a verb is no interjection
    assert tag(["창문", "닫", "아"], frozenset({"닫아"}))[2] == WORD


@pytest.mark.parametrize(
    "text",
    [
        "불 안 꺼도 돼",
        "이제 불 안 켜",
        "지금 못 꺼",
        "음 불 안켜",
        "이제 불 끄지 마",
        "빨리 켜지 말고",
    ],
)
def test_a_negated_sentence_gets_no_reading(text):
    assert reading(text, lambda word: "other") is None


def test_only_words_of_the_classes_are_dropped_and_the_ending_stays():
    plain = reading("음 공기청정기 이제 꺼 줘", lambda word: "other")
    assert plain is not None and plain.text == "공기청정기 꺼 줘" and not plain.corrected
    assert reading("공기청정기 꺼 줘", lambda word: "other") is None  # nothing to drop
    assert reading("이제 에어컨 껐어", lambda word: "other").text == "에어컨 껐어"


def test_the_normaliser_runs_on_the_miss_path_only(presets, monkeypatch):
    import sori.understanding.intents.presets as module

    def never(*args, **kwargs):
        raise AssertionError("normaliser called on a hit")

    monkeypatch.setattr(module, "plain_reading", never)
    assert presets.match("거실 불 꺼 줘").intent == "HassTurnOff"
    assert presets.match("불 켜줘").intent == "HassTurnOn"


def test_without_the_normaliser_nothing_of_it_is_understood(presets):
    presets.spontaneous = False
    try:
        assert presets.match("음 거실 불 꺼 줘") is None
        assert presets.match("공기청정기 이제 꺼 줘") is None
    finally:
        presets.spontaneous = True


# --- self-corrections ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name", "corrected"),
    [
        ("거실 아니 안방 불 꺼 줘", "안방 조명", "거실"),
        ("안방 말고 거실 불 꺼 줘", "거실 조명", "안방"),
        ("주방, 아니다, 거실 불 꺼 줘", "거실 조명", "주방"),
        ("거실 불 꺼 줘 아니 안방", "안방 조명", "거실"),
        ("에어컨 아니 선풍기 켜 줘", "선풍기", "에어컨"),
    ],
)
def test_the_last_named_target_wins_and_only_it(presets, text, name, corrected):
    found = presets.match(text)
    assert found.slots.get("name") == name, found.slots
    assert all(corrected not in str(v) for v in found.slots.values()), found.slots


def test_a_corrected_verb_replaces_the_verb():
    def kind(word):
        return {"거실": "area", "불": "target", "켜": "verb", "꺼": "verb", "줘": "verb"}.get(
            word, "other"
        )

    assert reading("거실 불 켜 아니 꺼 줘", kind).text == "거실 불 꺼 줘"
    assert reading("거실 불 켜 줘 아니 꺼 줘", kind).text == "거실 불 꺼 줘"


@pytest.mark.parametrize(
    "text",
    [
        "거실 불 꺼 줘 아니야",  # taken back
        "안방 말고 다른 불 다 꺼 줘",  # every light but one: an exception
        "거실 말고 다 꺼 줘",
        "거실 말고 나머지 불 꺼 줘",
        "내일 거실 아니 안방 불 켜 줘",  # a later time stays with the sentence
        "엄마가 거실 아니 안방 불 끄라고 했어",  # reported speech stays reported
        "거실 불 꺼 줘 아니 이따 꺼 줘",  # a correction to an unknown word corrects nothing
    ],
)
def test_corrections_that_are_no_command_are_refused(presets, text):
    assert presets.match(text) is None


def test_a_correction_is_one_command_not_two():
    assert len(split_commands("안방 말고 거실 불 꺼 줘")) == 1
    assert len(split_commands("안방 불 아니고 주방 불 켜 줘")) == 1
    assert continues("거실 불 꺼 줘 아니")
    assert continues("안방 말고")


def test_a_correction_inside_several_commands_acts_on_the_last_named_only(presets):
    from sori.understanding.multi_command import plan

    several = plan(presets, "안방 말고 거실 불 꺼 줘 그리고 에어컨 켜 줘")
    assert several is not None and not several.unmatched
    names = [p.match.slots.get("name") for p in several.parts]
    assert names[0] == "거실 조명" and "안방 조명" not in names


def test_fillers_inside_several_commands(presets):
    from sori.understanding.multi_command import plan

    several = plan(presets, "음 거실 불 켜고 어 에어컨 좀 꺼 줘")
    assert several is not None and not several.unmatched
    assert [p.match.intent for p in several.parts] == ["HassTurnOn", "HassTurnOff"]


# --- endings and spellings -------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "verb"),
    [
        ("꺼버려", "꺼"),
        ("꺼버려줘", "꺼"),
        ("꺼버려요", "꺼"),
        ("켜놔", "켜"),
        ("켜놔줘", "켜"),
        ("열어둬", "열어"),
        ("켜죠", "켜"),
        ("꺼조", "꺼"),
        ("켜줘봐", "켜"),
        ("꺼주시죠", "꺼"),
        ("켜주세용", "켜"),
    ],
)
def test_colloquial_endings_are_cut(said, verb):
    assert said[: len(said) - ending_length(said)] == verb


@pytest.mark.parametrize("said", ["쓰레기버려", "꺼버렸어", "켜놨어", "그렇죠", "구조", "그냥둬"])
def test_an_auxiliary_after_no_verb_or_in_the_past_is_no_request_ending(said):
    assert canonical(said).text == said


def test_every_negative_stays_refused_with_fillers_and_adverbs_added(presets):
    def fires(text: str):
        found = presets.match(text)
        return found is not None and any(k in found.slots for k in TARGET_SLOTS)

    fired = []
    lookalikes = [t for t, _, f, _ in rows() if f == "lookalike"]
    for sentence in negatives() + lookalikes:
        words = sentence.split()
        softened = " ".join([*words[:-1], "좀", words[-1]])
        for said in (f"음 {sentence}", f"이제 {sentence}", softened):
            if fires(said) and not fires(sentence):
                fired.append(f"{said} → {presets.match(said)}")
    assert not fired, "\n".join(fired)


# --- hearing: the phrase set -----------------------------------------------------------


def test_the_phrase_set_says_fillers_adverbs_and_colloquial_endings(presets):
    from sori.understanding.intents.phrases import DEFAULT_MAX_PHRASES

    chosen = presets.phrase_set(DEFAULT_MAX_PHRASES)
    assert chosen.coverage == 1.0 and len(chosen.phrases) <= DEFAULT_MAX_PHRASES
    stats = chosen.stats()
    assert min(stats["spontaneous"].values()) >= 50, stats["spontaneous"]
    assert any(p.startswith("음 ") for p in chosen.phrases)
    assert any(" 이제 " in p for p in chosen.phrases)
    assert any(p.endswith(" 버려") for p in chosen.phrases)
    for phrase in chosen.phrases:
        if phrase.split()[0] in ("음", "어", "저기", "아", "지금", "이제"):
            found = presets.match(phrase)
            assert found is not None and found.confidence == 1.0, phrase


def test_sori_phrases_stats_names_the_new_families(capsys):
    from sori.cli import main

    config = str(HERE.parents[1] / "device" / "sori.example.toml")
    assert main(["phrases", "--config", config, "--stats"]) == 0
    out = capsys.readouterr().out
    assert "spontaneous speech: fillers" in out and "adverbs" in out
    assert "colloquial endings" in out
