"""Stages take plain settings, the config parses TOML; both must agree on defaults."""

from __future__ import annotations

import dataclasses

from sori.core.config import EdgeConfig
from sori.thinking.edge import EdgeSettings


def test_edge_settings_defaults_match_the_config_defaults():
    config = dataclasses.asdict(EdgeConfig())
    settings = dataclasses.asdict(EdgeSettings())
    shared = config.keys() & settings.keys()
    assert len(shared) >= 10
    assert {k: config[k] for k in shared} == {k: settings[k] for k in shared}
    # Every setting has a config key, so nothing is unreachable from sori.toml.
    assert settings.keys() <= config.keys()
