"""Build a real daemon for tests: a Korean home, espeak-ng voice, WAV output, real handlers."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

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


# An English home on MQTT, for English questions and commands.
ENGLISH_HOME = """
[intents]
language = "en"
home_assistant = true

[home]
area = "living_room"
areas = [{ id = "living_room", name = "living room" }, { id = "bedroom", name = "bedroom" }]

[[home.devices]]
id = "light.living_room"
name = "living room light"
area = "living_room"

[[home.devices]]
id = "climate.bedroom"
name = "bedroom thermostat"
area = "bedroom"

[[home.devices]]
id = "sensor.living_room_temperature"
name = "living room thermometer"
area = "living_room"
device_class = "temperature"

[[home.devices]]
id = "lock.front_door"
name = "front door"

[tts]
backend = "espeak"

[daemon]
log_format = "text"
thinking = false

[actions]
default_handler = "mqtt"
"""


WAKE_OFF = "\n[wake]\nenabled = false\n"
"""Every utterance is a command (the command files of these tests have no wake phrase)."""


def write_config(folder: Path, mqtt_url: str, extra: str = "", wake: str = WAKE_OFF) -> Path:
    """A config of the test home; `wake` is its [wake] section (default: off)."""
    path = folder / "sori.toml"
    body = HOME_TOML + f'\n[mqtt]\nurl = "{mqtt_url}"\n' + extra + wake
    path.write_text(body, encoding="utf-8")
    return path


def load(config_path: Path) -> tuple[Any, Any]:
    """(config, home) of the file, as `sori run --config` reads them."""
    from sori.commands.options import load_home

    return load_home(argparse.Namespace(config=str(config_path), fixtures=None))


def build(config_path: Path, output: Path, **kw):
    from sori.assemble.daemon import build_daemon

    config, home = load(config_path)
    return build_daemon(
        config, home, str(output), lambda: load(config_path), warm_presets=False, **kw
    )


API_TOKEN = "test-token-0123456789abcdef"


def serve_api(daemon: Any, scenario: Any, timeout_s: float = 60) -> Any:
    """Run `scenario(client, api)` with `daemon` behind a started HTTP API and a client
    that sends `API_TOKEN`; closes both; returns what the scenario returns."""
    import httpx

    from sori.serving.http_api import HttpApi

    async def main() -> Any:
        api = HttpApi(daemon, "127.0.0.1:0", token=API_TOKEN)
        await api.start()
        try:
            async with httpx.AsyncClient(
                base_url=api.url, timeout=20, headers={"Authorization": f"Bearer {API_TOKEN}"}
            ) as client:
                return await asyncio.wait_for(scenario(client, api), timeout_s)
        finally:
            await api.close()
            await daemon.close()

    return asyncio.run(main())


async def events_of_turn(client: Any, text: str, say_headers: dict | None = None) -> tuple:
    """(the /say response, the /events objects up to its TurnFinished): `client` (an
    httpx.AsyncClient on the API, with whatever headers /events should carry) listens to
    /events while it posts `text` to /say."""
    seen: list[dict] = []
    async with client.stream("GET", "/events") as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"] == "text/event-stream"
        lines = stream.aiter_lines()
        assert await anext(lines) == ": connected"
        say = asyncio.create_task(client.post("/say", json={"text": text}, headers=say_headers))
        async for line in lines:
            if line.startswith("data: "):
                seen.append(json.loads(line.removeprefix("data: ")))
                if seen[-1]["type"] == "TurnFinished":
                    break
        return await say, seen
