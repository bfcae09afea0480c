"""Loading packs: malformed input is refused with file, line and problem."""

from __future__ import annotations

import tracemalloc

import pytest

from sori.core.errors import PackError
from sori.understanding.intents import load_presets
from sori.understanding.intents.loader import load_fixtures


def write(tmp_path, text: str):
    path = tmp_path / "extra.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def load_extra(path):
    return load_presets("ko", extra_packs=[str(path)], include_home_assistant=False)


def test_an_extra_pack_adds_intents(tmp_path):
    path = write(
        tmp_path,
        "language: ko\nintents:\n  HassTurnOn:\n    data:\n"
        "      - sentences: ['파티 모드 (시작|켜)']\n        slots: {name: 파티 모드}\n",
    )
    found = load_extra(path).match("파티 모드 시작해 줘")
    assert found is not None and found.slots["name"] == "파티 모드"


def test_bad_yaml_names_file_and_line(tmp_path):
    path = write(tmp_path, "language: ko\nintents:\n  HassTurnOn: [\n")
    with pytest.raises(PackError, match=r"extra\.yaml: line \d+: invalid YAML"):
        load_extra(path)


def test_a_pack_of_nested_aliases_is_refused_in_bounded_memory(tmp_path):
    """A few hundred bytes of anchored aliases expand to millions of strings (billion laughs):
    a pack is read without aliases, so it is refused before anything is built."""
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    path = write(tmp_path, "language: ko\n" + "\n".join(levels) + "\nintents: {}\n")
    tracemalloc.start()
    try:
        with pytest.raises(PackError, match=r"extra\.yaml: line \d+: invalid YAML: .*alias"):
            load_extra(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000


def test_bad_template_names_file_line_and_template(tmp_path):
    path = write(
        tmp_path,
        "language: ko\nintents:\n  HassTurnOn:\n    data:\n"
        "      - sentences:\n          - '불 (켜|꺼'\n",
    )
    with pytest.raises(PackError, match=r"extra\.yaml:6: cannot parse template '불 \(켜\|꺼'"):
        load_extra(path)


def test_unknown_rule_is_named(tmp_path):
    path = write(
        tmp_path,
        "language: ko\nintents:\n  HassTurnOn:\n    data:\n      - sentences: ['<nope> 켜']\n",
    )
    with pytest.raises(PackError, match="unknown expansion rule <nope>"):
        load_extra(path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- just\n- a list\n", "expected a mapping"),
        ("intents: {}\n", "missing top-level 'language"),
        ("language: ko\nintents:\n  HassTurnOn: {}\n", "needs a 'data' list"),
        ("language: ko\nintents:\n  HassTurnOn:\n    data: [{slots: {}}]\n", "needs 'sentences'"),
        ("language: ko\nlists:\n  broken: {values_typo: []}\n", "list 'broken' needs"),
        ("language: ko\nlists:\n  r: {range: {from: 1}}\n", "needs 'from' and 'to'"),
    ],
)
def test_structural_problems_are_explained(tmp_path, text, problem):
    with pytest.raises(PackError, match=problem):
        load_extra(write(tmp_path, text))


def test_binary_pack_file_is_refused(tmp_path):
    path = tmp_path / "extra.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage\x00")
    with pytest.raises(PackError, match="cannot read as UTF-8"):
        load_extra(path)


def test_missing_pack_path_is_named(tmp_path):
    with pytest.raises(PackError, match="not found"):
        load_extra(tmp_path / "nope.yaml")


def test_fixtures_with_unknown_context_area_are_refused(tmp_path):
    path = tmp_path / "_fixtures.yaml"
    path.write_text(
        "areas: [{name: 거실, id: living_room}]\nentities: []\ncontext_area: attic\n",
        encoding="utf-8",
    )
    with pytest.raises(PackError, match="context_area 'attic'"):
        load_fixtures(path)


def test_fixtures_context_area_is_the_speakers_room(tmp_path):
    path = tmp_path / "_fixtures.yaml"
    path.write_text(
        "areas: [{name: 거실, id: living_room}, {name: 주방, id: kitchen}]\n"
        "entities: [{name: '(주방 조명|주방 불)', id: light.kitchen, area: kitchen}]\n"
        "context_area: kitchen\n",
        encoding="utf-8",
    )
    home = load_fixtures(path)
    assert home.speaker_area == "kitchen"
    assert home.devices[0].names == ("주방 조명", "주방 불")
    found = load_presets("ko", home).match("불 켜 줘")
    assert found.slots["area"] == "주방"


@pytest.mark.parametrize(
    "text",
    ["", "   ", "\x00\x01\x02", "\ufffd\ufffd", "불 켜줘" * 200, "🙂🙂", "?!.,", "a" * 10_000],
)
def test_empty_long_or_binary_text_gives_no_match(presets, text):
    assert presets.match(text) is None
