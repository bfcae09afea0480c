"""Config: found in the documented places, validated with errors that name the key."""

from __future__ import annotations

import pytest

from sori.core.config import Config, find_config, load_config, parse_config
from sori.core.errors import ConfigError


def test_no_file_means_embedded_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SORI_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    if find_config() is None:  # /etc/sori/sori.toml may exist on a device
        assert load_config() == Config()


def test_lookup_order_flag_then_env_then_cwd(tmp_path, monkeypatch):
    flag, env, cwd = (tmp_path / n for n in ("flag.toml", "env.toml", "sori.toml"))
    for path in (flag, env, cwd):
        path.write_text("[intents]\nlanguage = 'ko'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SORI_CONFIG", str(env))
    assert find_config(str(flag)) == flag
    assert find_config() == env
    monkeypatch.delenv("SORI_CONFIG")
    assert find_config().resolve() == cwd


def test_the_example_config_is_valid():
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "device" / "sori.example.toml"
    config = load_config(str(example))
    assert config.home.area == "living_room"
    assert any(d.id == "light.living_room" for d in config.home.devices)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ({"intents": {"fuzzy_threshold": "high"}}, "intents.fuzzy_threshold must be a number"),
        ({"intents": {"langauge": "ko"}}, "unknown key intents.langauge"),
        ({"intents": {"packs": "x.yaml"}}, "intents.packs must be a list"),
        ({"intents": {"fuzzy": 1}}, "intents.fuzzy must be true or false"),
        ({"home": {"areas": [{"id": "a"}]}}, "missing key home.areas[0].name"),
        ({"home": {"area": "attic"}}, "home.area = 'attic' is not one of home.areas' ids"),
        (
            {"home": {"areas": [{"id": "a", "name": "A"}], "devices": [{"id": "x", "name": "X"}]}},
            "home.devices[0]: set domain",
        ),
        ({"nonsense": 1}, "unknown key nonsense"),
        (
            {"audio": {"array": {"geometry": "respeaker-4mic"}}},
            'audio.array.geometry must be "", respeaker-2mic-hat, ',  # "" is a choice too
        ),
        ({"mqtt": {"node_id": "거실 스피커"}}, "mqtt.node_id = '거실 스피커' may hold only"),
        ({"mqtt": {"node_id": "sori/kitchen"}}, "mqtt.node_id = 'sori/kitchen' may hold"),
    ],
)
def test_invalid_values_name_the_key(toml, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_config(toml, source="sori.toml")


def test_not_toml_is_refused_with_the_file_named(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[intents\nlanguage = ko")
    with pytest.raises(ConfigError, match="bad.toml:1: not valid TOML"):
        load_config(str(bad))


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(str(tmp_path / "nope.toml"))
