"""Config limits: every number has a range and must be finite, ids are unique, the file may
start with a BOM, nesting is bounded, and nothing but a ConfigError ever comes out."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sori.core.config import Config, load_config, parse_config, parse_toml
from sori.core.config.schema import allowed, in_range
from sori.core.errors import ConfigError


def _sections(cls: type = Config, path: str = ""):
    """(dotted key, field) for every field of every section, nested ones included."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        key = f"{path}.{f.name}" if path else f.name
        inner = typing.get_args(hint)[0] if typing.get_origin(hint) is list else hint
        if dataclasses.is_dataclass(inner):
            yield from _sections(inner, key)
        else:
            yield key, f, hint


NUMBERS = [(key, f, hint) for key, f, hint in _sections() if hint in (int, float)]


def test_every_number_in_every_section_declares_its_range():
    missing = [key for key, f, _ in NUMBERS if "range" not in f.metadata]
    assert not missing, f"give these a range with schema.ranged(...): {missing}"
    for key, f, _ in NUMBERS:  # and the default lies inside it
        assert in_range(f.metadata["range"], f.default), key


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            {"intents": {"fuzzy_threshold": math.nan}},
            "intents.fuzzy_threshold must be between 0 and 1, got nan",
        ),
        (
            {"intents": {"fuzzy_threshold": -5}},
            "intents.fuzzy_threshold must be between 0 and 1, got -5.0",
        ),
        (
            {"actions": {"timeout_s": math.nan}},
            "actions.timeout_s must be above 0 and at most 3600, got nan",
        ),
        (
            {"actions": {"timeout_s": math.inf}},
            "actions.timeout_s must be above 0 and at most 3600, got inf",
        ),
        (
            {"actions": {"timeout_s": -1}},
            "actions.timeout_s must be above 0 and at most 3600, got -1.0",
        ),
        ({"actions": {"timeout_s": 0}}, "actions.timeout_s must be above 0"),
        ({"shell": {"timeout_s": -math.inf}}, "shell.timeout_s must be above 0"),
        ({"tts": {"cache_size": -1}}, "tts.cache_size must be between 0 and 100000, got -1"),
        (
            {"router": {"memory_turns": -3}},
            "router.memory_turns must be between 0 and 1000, got -3",
        ),
        (
            {"vad": {"max_utterance_s": math.inf}},
            "vad.max_utterance_s must be above 0 and at most 3600, got inf",
        ),
        ({"commit": {"flush_ms": -120}}, "commit.flush_ms must be between 0 and 10000, got -120"),
        ({"commit": {"min_confidence": 1.5}}, "commit.min_confidence must be between 0 and 1"),
        ({"mqtt": {"qos": 3}}, "mqtt.qos must be 0, 1 or 2, got 3"),
        ({"audio": {"frame_ms": 25}}, "audio.frame_ms must be 10, 20 or 30, got 25"),
        ({"llm": {"n_ctx": 10**30}}, "llm.n_ctx must be between 64 and 1048576"),
        ({"llm": {"temperature": 10**400}}, "llm.temperature must be between 0 and 10, got inf"),
        (
            {"edge": {"endpoints": [{"url": "http://e/v1", "ttfb_threshold_ms": -1}]}},
            "edge.endpoints[0].ttfb_threshold_ms must be between 1 and 3600000",
        ),
        (
            {"http": {"bind": "127.0.0.1:0"}},
            "http.bind = '127.0.0.1:0' must be HOST:PORT with a port from 1 to 65535",
        ),
        ({"http": {"bind": "127.0.0.1:70000"}}, "port from 1 to 65535"),
        ({"http": {"bind": "127.0.0.1:²"}}, "port from 1 to 65535"),
        (
            {"actions": {"default_handler": "mqtt"}, "mqtt": {"url": "mqtt://h:99999"}},
            "port 1-65535",
        ),
        ({"webhook": {"headers": {"X-Token": 5}}}, "webhook.headers.X-Token must be a string"),
    ],
)
def test_out_of_range_numbers_are_refused_naming_key_and_range(toml, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(toml, source="sori.toml")


def test_a_range_in_words():
    meta = {"low": 0, "high": 1, "above": None, "choices": ()}
    assert allowed(meta) == "between 0 and 1"
    assert not in_range(meta, math.nan)


AREAS = [{"id": "living_room", "name": "거실"}, {"id": "bedroom", "name": "안방"}]


def test_duplicate_device_ids_are_refused_naming_both_positions():
    devices = [
        {"id": "light.a", "name": "불"},
        {"id": "switch.b", "name": "스위치"},
        {"id": "light.a", "name": "다른 불"},
    ]
    with pytest.raises(
        ConfigError, match=re.escape("home.devices[2].id = 'light.a' repeats home.devices[0].id")
    ):
        parse_config({"home": {"areas": AREAS, "devices": devices}})


def test_duplicate_area_ids_are_refused_naming_both_positions():
    areas = [*AREAS, {"id": "living_room", "name": "응접실"}]
    with pytest.raises(
        ConfigError, match=re.escape("home.areas[2].id = 'living_room' repeats home.areas[0].id")
    ):
        parse_config({"home": {"areas": areas}})


def test_a_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "sori.toml"
    path.write_bytes("\ufeff[intents]\nfuzzy_threshold = 0.9\n".encode())
    assert load_config(str(path)).intents.fuzzy_threshold == 0.9


def test_a_3000_deep_array_is_a_clean_error(tmp_path):
    path = tmp_path / "sori.toml"
    path.write_text("x = " + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(str(path))
    with pytest.raises(ConfigError, match="nested more than 16 deep"):
        nested: list = [1]
        for _ in range(20):
            nested = [nested]
        parse_config({"edge": {"extra_body": {"a": nested}}})
    deep: list = []
    for _ in range(100_000):  # deeper than any recursion limit: the check walks, not recurses
        deep = [deep]
    with pytest.raises(ConfigError, match="nested more than"):
        parse_config({"x": deep})


def test_toml_errors_give_file_line_and_hint(tmp_path):
    path = tmp_path / "sori.toml"
    path.write_text('[intents]\nlanguage = "ko"\nfuzzy = yes\n')
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}:3: not valid TOML")
    assert "true/false are lower case" in message
    with pytest.raises(ConfigError, match=r"sori.toml:2: .*Invalid statement.*key = value"):
        parse_toml("[tts]\n= 5\n", "sori.toml")
    with pytest.raises(ConfigError, match=r"sori.toml:1: .*after a key.*key = value"):
        parse_toml("this is not toml\n", "sori.toml")


def test_an_empty_file_is_the_defaults(tmp_path):
    path = tmp_path / "sori.toml"
    path.write_text("")
    assert load_config(str(path)) == dataclasses.replace(Config(), source=str(path))


# -- property: whatever the document, parse_config says ConfigError or gives a Config -----

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["mqtt", "shell", "webhook", "home_assistant", "http://x:99999", "a:b"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def _section_keys(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


@st.composite
def _documents(draw):
    """Real section and key names with random values, plus some made-up keys."""
    doc: dict = {}
    hints = typing.get_type_hints(Config)
    for section in draw(st.lists(st.sampled_from(_section_keys(Config)), max_size=4, unique=True)):
        cls = hints[section]
        if not dataclasses.is_dataclass(cls):
            doc[section] = draw(_values)
            continue
        keys = _section_keys(cls)
        table = {
            k: draw(_values) for k in draw(st.lists(st.sampled_from(keys), max_size=3, unique=True))
        }
        if draw(st.booleans()):
            table[draw(st.text(max_size=5))] = draw(_values)
        doc[section] = table if draw(st.integers(0, 9)) else draw(_values)
    return doc


@settings(max_examples=300, deadline=None)
@given(_documents())
def test_parse_config_raises_only_config_error(doc):
    try:
        config = parse_config(doc, source="sori.toml")
    except ConfigError as exc:
        assert str(exc).startswith("sori.toml")
    else:
        assert isinstance(config, Config)


def test_a_text_key_with_choices_is_checked_like_a_number():
    with pytest.raises(ConfigError, match=r"mqtt.protocol must be 5 or 3.1.1, got '4'"):
        parse_config({"mqtt": {"protocol": "4"}})
    assert parse_config({"mqtt": {"protocol": "3.1.1"}}).mqtt.protocol == "3.1.1"


# -- hostile TOML text: huge numbers, nan, dates where JSON goes ---------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[llm]\nn_ctx = " + "1" * 5000 + "\n",
            "sori.toml:2: llm.n_ctx = a number of 5000 digits; no setting needs more than a few",
        ),
        (
            "[vad]\n[llm]\ntemperature = 0.5\nn_ctx = 1_" + "0" * 4400 + "\n",
            "sori.toml:4: llm.n_ctx = a number of 4401 digits",
        ),
        ("x = [1, " + "9" * 4500 + "]\n", "sori.toml:1: x = a number of 4500 digits"),
        (
            "[llm]\nn_ctx = 0x" + "f" * 4000 + "\n",  # hex is read whole, printed by its size
            "llm.n_ctx must be between 64 and 1048576, got an integer of about 4817 digits",
        ),
        (
            "[llm]\ntemperature = 0x" + "f" * 4000 + "\n",
            "llm.temperature must be between 0 and 10, got inf",
        ),
        (
            "[llm]\ntemperature = nan\n",
            "sori.toml: llm.temperature must be between 0 and 10, got nan",
        ),
        ("[vad]\nmax_utterance_s = -inf\n", "sori.toml: vad.max_utterance_s must be above 0"),
        ("[llm]\nn_ctx = 4096.0\n", "sori.toml: llm.n_ctx must be an integer, got float"),
        (
            "[llm]\ntemperature = true\n",
            "sori.toml: llm.temperature must be a number, got a boolean",
        ),
        ("[llm]\ntemperature = 1979-05-27\n", "llm.temperature must be a number, got date"),
        (
            "[edge]\nextra_body = { top_k = nan }\n",
            "sori.toml: edge.extra_body.top_k must be a finite number, got nan",
        ),
        (
            "[edge]\nextra_body = { seed = 0x" + "f" * 40 + " }\n",
            "edge.extra_body.seed must be between -9007199254740992 and 9007199254740992",
        ),
        (
            "[edge]\nextra_body = { stop = [1, { at = 07:32:00 }] }\n",
            "edge.extra_body.stop[1].at must be text, a number, true or false, a list or a "
            "table, got time",
        ),
        (
            '[[home.devices]]\nid = "light.a"\nname = "불"\npayload = { level = inf }\n',
            "sori.toml: home.devices[0].payload.level must be a finite number, got inf",
        ),
        ("[intents]\npacks = [1]\n", "sori.toml: intents.packs[0] must be a string, got int"),
        ("intents = 5\n", "sori.toml: intents must be a table, got int"),
        ("[[intents]]\n", "sori.toml: intents must be a table, got a list"),
    ],
)
def test_hostile_toml_is_a_config_error_naming_the_key(tmp_path, text, message):
    path = tmp_path / "sori.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert message in str(caught.value).replace(str(path), "sori.toml")
    assert "\n" not in str(caught.value)


def test_free_form_tables_keep_their_json_values():
    body = {"top_k": 20, "min_p": 0.05, "stop": ["\n", {"n": -(2**53)}], "echo": False}
    assert parse_config({"edge": {"extra_body": body}}).edge.extra_body == body


# -- property: whatever the TOML text, sori.toml reads into a Config or a ConfigError -----

_keys = st.sampled_from(
    [f.name for f in dataclasses.fields(Config)]
    + ["n_ctx", "temperature", "extra_body", "payload", "devices", "areas", "id", "x"]
) | st.text(max_size=6)
_literals = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats().map(repr),
    st.text(max_size=10).map(lambda s: json.dumps(s, ensure_ascii=False)),
    st.sampled_from(
        [
            "true",
            "nan",
            "-inf",
            "+inf",
            "1" * 5000,
            "0x" + "f" * 4000,
            "1e400",
            "1979-05-27",
            "07:32:00",
            "1979-05-27T07:32:00Z",
            "2024-13-45",
            "[" * 50,
            "{",
            "'''",
            "0b102",
        ]
    ),
)


def _key(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


_inline = st.recursive(
    _literals,
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda items: f"[{', '.join(items)}]")
        | st.lists(st.tuples(_keys, inner), max_size=3).map(
            lambda pairs: "{" + ", ".join(f"{_key(k)} = {v}" for k, v in pairs) + "}"
        )
    ),
    max_leaves=8,
)
_lines = st.one_of(
    st.tuples(_keys, _inline).map(lambda kv: f"{_key(kv[0])} = {kv[1]}"),
    st.lists(_keys, min_size=1, max_size=3).map(lambda ks: f"[{'.'.join(map(_key, ks))}]"),
    st.lists(_keys, min_size=1, max_size=2).map(lambda ks: f"[[{'.'.join(map(_key, ks))}]]"),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_lines, max_size=8))
def test_any_toml_text_gives_a_config_or_a_config_error(lines):
    text = "\n".join(lines) + "\n"
    try:
        config = parse_config(parse_toml(text, "sori.toml"), source="sori.toml")
    except ConfigError as exc:
        assert str(exc).startswith("sori.toml")
        assert "\n" not in str(exc)
    else:
        assert isinstance(config, Config)
