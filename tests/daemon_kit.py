"""Build a real daemon for tests: a Korean home, espeak-ng voice, WAV output, real handlers."""

from __future__ import annotations

import argparse
from pathlib import Path

HOME_TOML = """
[intents]
home_assistant = false

[home]
area = "living_room"
areas = [{ id = "living_room", name = "거실" }, { id = "bedroom", name = "안방" }]

[[home.devices]]
id = "light.living_room"
name = "거실 조명"
area = "living_room"
aliases = ["거실 불"]
handler = "mqtt"

[[home.devices]]
id = "climate.bedroom"
name = "에어컨"
area = "bedroom"
handler = "mqtt"

[tts]
backend = "espeak"

[daemon]
log_format = "text"
thinking = false
"""


def write_config(folder: Path, mqtt_url: str, extra: str = "") -> Path:
    path = folder / "sori.toml"
    path.write_text(HOME_TOML + f'\n[mqtt]\nurl = "{mqtt_url}"\n' + extra, encoding="utf-8")
    return path


def build(config_path: Path, output: Path, **kw):
    from sori.commands.options import load_home
    from sori.commands.run import build_daemon

    args = argparse.Namespace(config=str(config_path), fixtures=None, output=str(output))
    config, home = load_home(args)
    return build_daemon(args, config, home, warm_presets=False, **kw)
