"""The hearing sections of the config: defaults, the example file, and bad values."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from sori.assemble.hearing import build_recognizer, commit_settings, endpoint_settings
from sori.core.config import Config, parse_config
from sori.core.errors import ConfigError
from sori.hearing.pipeline import CommitSettings
from sori.hearing.vad import EndpointSettings

EXAMPLE = Path(__file__).resolve().parents[1] / "device" / "sori.example.toml"
SECTIONS = ("audio", "vad", "stt", "commit")


def keys(obj, prefix=""):
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from keys(value, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}"


def test_the_example_documents_every_hearing_key_with_its_default():
    data = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    config = parse_config(data, str(EXAMPLE))
    for section in SECTIONS:
        assert getattr(config, section) == getattr(Config(), section), section
        written = set()
        for key in keys(getattr(config, section)):
            node = data[section]
            for part in key.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if node is not None:
                written.add(key)
        assert written == set(keys(getattr(config, section))), section


def test_pipeline_settings_defaults_match_the_config_defaults():
    # The pipeline takes plain settings and the config parses TOML; their defaults are twins.
    assert commit_settings(Config()) == CommitSettings()
    assert endpoint_settings(Config()) == EndpointSettings()


def test_settings_follow_the_config():
    config = parse_config(
        {"audio": {"frame_ms": 30}, "vad": {"stop_ms": 300}, "commit": {"flush_ms": 0}}
    )
    assert endpoint_settings(config).frame_ms == 30
    assert endpoint_settings(config).stop_ms == 300
    assert commit_settings(config).flush_ms == 0


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ({"vad": {"stop_ms": "long"}}, "vad.stop_ms must be an integer"),
        ({"stt": {"vosk": {"modes": "both"}}}, "unknown key stt.vosk.modes"),
        ({"stt": {"sherpa": {"threads": 1.5}}}, "stt.sherpa.threads must be an integer"),
        ({"commit": {"early": "yes"}}, "commit.early must be true or false"),
    ],
)
def test_bad_values_name_the_key(toml, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(toml, source="sori.toml")


def test_unknown_backend_and_bad_frame_length_are_refused():
    with pytest.raises(ConfigError, match="stt.backend must be one of vosk, sherpa"):
        build_recognizer(parse_config({"stt": {"backend": "whisper"}}).stt, [])
    with pytest.raises(ConfigError, match="audio.frame_ms must be 10, 20 or 30"):
        endpoint_settings(parse_config({"audio": {"frame_ms": 25}}))
