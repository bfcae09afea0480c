"""Input size never breaks matching (issue 25, item 13): a name of 1,000+ characters is a
clear config error, never a RecursionError, and building or matching recurses on nothing
that grows with the input."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cpu_time import cpu_seconds
from sori.core.config import parse_config
from sori.core.errors import ConfigError, PackError
from sori.core.home import MAX_NAME_CHARS, Device, Home
from sori.understanding.intents import load_presets
from sori.understanding.intents.loader import load_fixtures
from sori.understanding.intents.slots import TextList
from sori.understanding.intents.templates import MAX_NESTING

LONG = "거실" * 600  # 1,200 characters


def home_config(**device) -> dict:
    entry = {"id": "light.living_room", "name": "거실 조명", **device}
    return {"home": {"areas": [{"id": "living_room", "name": "거실"}], "devices": [entry]}}


@pytest.mark.parametrize(
    ("data", "key"),
    [
        (home_config(name=LONG), "home.devices[0].name"),
        (home_config(aliases=["거실 불", LONG]), "home.devices[0].aliases"),
        ({"home": {"areas": [{"id": "living_room", "name": LONG}]}}, "home.areas[0].name"),
        (
            {"home": {"areas": [{"id": "living_room", "name": "거실", "aliases": [LONG]}]}},
            "home.areas[0].aliases",
        ),
    ],
)
def test_a_name_of_a_thousand_characters_is_a_config_error_naming_key_and_limit(data, key):
    with pytest.raises(ConfigError) as error:
        parse_config(data, source="sori.toml")
    message = str(error.value)
    assert message.startswith(f"sori.toml: {key} ")
    assert f"at most {MAX_NAME_CHARS} characters" in message
    assert "\n" not in message and len(message) < 200


def test_a_name_at_the_limit_is_fine():
    parse_config(home_config(name="가" * MAX_NAME_CHARS, aliases=["나" * MAX_NAME_CHARS]))


def test_sori_intent_with_a_long_name_exits_2_with_one_line(tmp_path):
    config = tmp_path / "sori.toml"
    config.write_text(f'[[home.devices]]\nid = "light.x"\nname = "{LONG}"\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "sori", "intent", "--config", str(config), "불 켜줘"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "home.devices[0].name" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_long_name_in_test_fixtures_is_a_pack_error(tmp_path):
    fixtures = tmp_path / "_fixtures.yaml"
    fixtures.write_text(
        f"language: ko\nareas:\n  - id: living_room\n    name: 거실\n"
        f"entities:\n  - name: {LONG}\n    id: light.x\n    area: living_room\n",
        encoding="utf-8",
    )
    with pytest.raises(PackError, match=f"at most {MAX_NAME_CHARS} characters"):
        load_fixtures(fixtures)


def test_a_value_of_five_thousand_characters_builds_without_recursion():
    values = TextList([("가" * 5000, "long"), ("가나", "short")])
    assert [end for end, _ in values.matches("가" * 5000, 0)][-1] == 5000


def test_a_home_built_in_code_with_long_names_still_compiles_and_matches():
    """A Home made without the config (tests, fixtures of another tool) is not checked:
    building its lists must still not recurse on name length."""
    home = Home(devices=(Device("light.x", "가" * 3000, "light", aliases=("나" * 2000,)),))
    presets = load_presets("ko", home, include_home_assistant=False)
    assert presets.match("불 켜줘") is not None


@pytest.mark.parametrize(
    "text",
    [
        "거실 불 켜줘 " * 900,
        "가" * 10_000,
        "거실이랑 " * 2000 + "불 꺼줘",
        "(" * 10_000,
        "켜도 " * 3000,
    ],
)
def test_ten_thousand_characters_are_refused_quickly(presets, text):
    seconds, found = cpu_seconds(lambda: presets.match(text))
    assert found is None and seconds < 0.5


def write_pack(folder, rules: str, sentence: str):
    path = folder / "deep.yaml"
    path.write_text(
        f"language: ko\nexpansion_rules:\n{rules}intents:\n  HassTurnOn:\n    data:\n"
        f"      - sentences:\n          - '{sentence}'\n",
        encoding="utf-8",
    )
    return str(path)


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 400, 5000])
def test_a_template_nested_too_deep_is_a_pack_error(tmp_path, depth):
    pack = write_pack(tmp_path, "", "(" * depth + "켜" + ")" * depth)
    with pytest.raises(PackError, match=f"nested more than {MAX_NESTING} brackets deep") as error:
        load_presets("ko", Home(), extra_packs=[pack], include_home_assistant=False)
    assert len(str(error.value)) < 300


def test_rules_nested_at_the_limit_through_every_rule_level_still_compile(tmp_path):
    inner = MAX_NESTING - 1  # the <rule> reference is one level more
    rules = "".join(
        f"  r{i}: '{'(' * inner}{f'<r{i + 1}>' if i < 15 else '켜'}{')' * inner}'\n"
        for i in range(16)
    )
    pack = write_pack(tmp_path, rules, "(" * inner + "<r0>" + ")" * inner)
    presets = load_presets("ko", Home(), extra_packs=[pack], include_home_assistant=False)
    assert presets.match("켜").intent == "HassTurnOn"
