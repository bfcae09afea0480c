"""`sori run --input none` beside the real Home Assistant, as a user runs it, with the HTTP
API on a loopback port: POST /say turns are the commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from ha_kit import free_port, sori_env, sori_process

API_TOKEN = "real-ha-api-token-0123456789abcdef"


def daemon_config(folder: Path, ha_url: str, home: str, extra: str = "") -> Path:
    """Home Assistant as the home and the actions ([home] is `home`'s TOML)."""
    path = folder / "sori.toml"
    path.write_text(
        f"""{home}

[home_assistant]
url = "{ha_url}"
conversation = true

[actions]
default_handler = "home_assistant"

[tts]
backend = "espeak"

[stt]
warm_up_s = 0.0

[wake]
enabled = false
state_file = "{folder}/state.json"

[alarms]
state_file = "{folder}/timers.json"

[daemon]
log_format = "text"
{extra}
""",
        encoding="utf-8",
    )
    return path


class Sori:
    """A running daemon's HTTP API."""

    def __init__(self, port: int, log: Path) -> None:
        self.log = log
        self.http = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {API_TOKEN}"},
            timeout=60,
        )

    def say(self, text: str) -> dict[str, Any]:
        reply = self.http.post("/say", json={"text": text})
        assert reply.status_code == 200, reply.text
        return reply.json()


@contextmanager
def running(config: Path, ha_token: str, *args: str) -> Iterator[Sori]:
    folder = config.parent
    port = free_port()
    env = sori_env(folder / "home", SORI_HA_TOKEN=ha_token, SORI_API_TOKEN=API_TOKEN)
    command = ["run", "--config", str(config), "--input", "none", "--output",
               str(folder / "out.wav"), "--http", f"127.0.0.1:{port}", *args]  # fmt: skip
    with sori_process(command, folder, port, env):
        yield Sori(port, folder / "run.log")
