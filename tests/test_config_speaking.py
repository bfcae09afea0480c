"""The [tts], [actions], [mqtt], [home_assistant], [webhook], [shell], [http] and [daemon] keys."""

from __future__ import annotations

import pytest

from sori.core.config import parse_config
from sori.core.errors import ConfigError


def lamp(**kw):
    return {"home": {"devices": [{"id": "light.lamp", "name": "조명", **kw}]}}


def test_defaults_are_safe_and_local():
    config = parse_config({})
    assert config.actions.default_handler == "dry_run"
    assert config.http.bind == "127.0.0.1:8377"
    assert config.mqtt.url == "mqtt://127.0.0.1:1883"
    assert config.tts.backend == "auto" and config.tts.cache
    assert config.daemon.barge_in


def test_sections_parse_into_typed_fields():
    config = parse_config(
        {
            "tts": {"backend": "vits", "vits": {"model_dir": "/m", "speed": 1}},
            "mqtt": {"url": "mqtts://broker", "qos": 0},
            "shell": {"allow": ["/usr/bin/true"], "commands": {"*": ["/usr/bin/true"]}},
            **lamp(handler="mqtt", topic="z2m/lamp/set"),
        }
    )
    assert config.tts.vits.speed == 1.0 and isinstance(config.tts.vits.speed, float)
    assert config.mqtt.qos == 0
    assert config.home.devices[0].topic == "z2m/lamp/set"


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"tts": {"backend": "festival"}}, "tts.backend"),
        ({"tts": {"vits": {"speed": "fast"}}}, "tts.vits.speed"),
        ({"actions": {"default_handler": "zigbee"}}, "actions.default_handler"),
        (lamp(handler="zigbee"), r"home.devices\[0\].handler"),
        ({**lamp(handler="mqtt"), "mqtt": {"url": "http://broker"}}, "mqtt.url"),
        ({"mqtt": {"qos": 3}}, "mqtt.qos"),
        (lamp(handler="home_assistant"), "home_assistant.url"),
        (lamp(handler="webhook"), "webhook.url"),
        ({"shell": {"allow": ["rm"]}}, "shell.allow"),
        ({"shell": {"commands": {"*": ["/bin/rm"]}}}, r"shell.commands.\*"),
        ({"http": {"bind": "localhost"}}, "http.bind"),
        ({"daemon": {"log_format": "xml"}}, "daemon.log_format"),
        ({"daemon": {"barge": True}}, "daemon.barge"),
    ],
)
def test_bad_values_name_their_key(data, key):
    with pytest.raises(ConfigError, match=key):
        parse_config(data, source="sori.toml")
