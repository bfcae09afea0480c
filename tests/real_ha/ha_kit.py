"""Talking to the real Home Assistant as a user's browser would (REST and websocket, with the
owner's token), and running Sori's own commands beside it as a user runs them."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from real_ha import websocket_call

REPO = Path(__file__).resolve().parents[2]
SORI = str(Path(sys.executable).with_name("sori"))
EXAMPLE = REPO / "device" / "sori.example.toml"
MARKS = re.compile(r"\[|\]|\(|\)|(?<!\S)/(?!\S)")
"""The recognizer's own marks ([2], (천), a lone /) that must never reach Home Assistant."""


class Ha:
    """The running Home Assistant of `scripts/real_ha.py`."""

    def __init__(self, started: Any) -> None:
        self.started = started
        self.url: str = started.url
        self.token: str = started.token
        self.pid: int = started.pid
        self.log: str = started.log
        self.http = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60
        )

    def get(self, path: str) -> Any:
        reply = self.http.get(path)
        reply.raise_for_status()
        return reply.json()

    def post(self, path: str, body: Any = None) -> Any:
        reply = self.http.post(path, json=body)
        reply.raise_for_status()
        return reply.json()

    def ws(self, *commands: dict[str, Any]) -> Any:
        return websocket_call(self.url, self.token, *commands)

    def state(self, entity_id: str) -> str:
        return self.get(f"/api/states/{entity_id}")["state"]

    def states(self) -> dict[str, dict[str, Any]]:
        return {s["entity_id"]: s for s in self.get("/api/states")}

    def call(self, domain: str, service: str, **data: Any) -> None:
        self.post(f"/api/services/{domain}/{service}", data)

    def add_integration(self, handler: str, data: dict[str, Any]) -> dict[str, Any]:
        """A config flow as the UI runs it: start it, submit the one form; the created entry."""
        flow = self.post("/api/config/config_entries/flow", {"handler": handler})
        assert flow["type"] == "form", flow
        done = self.post(f"/api/config/config_entries/flow/{flow['flow_id']}", data)
        assert done["type"] == "create_entry", done
        return done["result"]

    def area(self, name: str, aliases: list[str]) -> str:
        """The id of the area `name`, with `aliases` (onboarding in Korean made 거실, 주방
        and 침실 already)."""
        for area in self.ws({"type": "config/area_registry/list"}):
            if area["name"] == name:
                update = {"area_id": area["area_id"], "aliases": aliases}
                return self.ws({"type": "config/area_registry/update", **update})["area_id"]
        made = self.ws({"type": "config/area_registry/create", "name": name, "aliases": aliases})
        return made["area_id"]

    def place(self, entity_id: str, area_id: str | None, aliases: list[str]) -> None:
        self.ws(
            {
                "type": "config/entity_registry/update",
                "entity_id": entity_id,
                "area_id": area_id,
                "aliases": aliases,
            }
        )

    def expose(self, entity_ids: list[str], exposed: bool) -> None:
        """Settings > Voice assistants > Expose, for Assist."""
        self.ws(
            {
                "type": "homeassistant/expose_entity",
                "assistants": ["conversation"],
                "entity_ids": entity_ids,
                "should_expose": exposed,
            }
        )

    def log_text(self) -> str:
        return Path(self.log).with_name("home-assistant.log").read_text(errors="replace")


def wait_for(what: Callable[[], Any], timeout_s: float = 30, every_s: float = 0.2) -> Any:
    """`what()` once it is truthy; AssertionError with its last value after `timeout_s`."""
    end = time.monotonic() + timeout_s
    value = None
    while time.monotonic() < end:
        value = what()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"still {value!r} after {timeout_s} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout_s: float = 180) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(
        f"nothing on 127.0.0.1:{port} after {timeout_s} s:\n{log.read_text()[-3000:]}"
    )


def sori_config(folder: Path, extra: str = "", *, example: bool = True) -> Path:
    """A sori.toml: the example config (or nothing) with start-up warm-up and the room's
    denoiser off (a client's audio is not the room's, and replays must be repeatable),
    then `extra`; TOML keeps the last of a key only within a table, so `extra` adds
    tables the example lacks or is the whole config when `example` is False."""
    text = EXAMPLE.read_text(encoding="utf-8") if example else ""
    text = text.replace("warm_up_s = 6.0", "warm_up_s = 0.0")
    text = re.sub(r'(?m)^denoise = "auto"', 'denoise = "off"', text, count=1)
    path = folder / "sori.toml"
    path.write_text(text + "\n" + extra, encoding="utf-8")
    return path


def sori_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SORI_")}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1", **extra)
    return env


@contextmanager
def sori_process(
    args: list[str], folder: Path, port: int, env: dict[str, str]
) -> Iterator[subprocess.Popen]:
    """`sori ARGS` running until it serves on `port`; stopped by its PID at the end."""
    log = folder / f"{args[0]}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [SORI, *args], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder
        )
    try:
        wait_for_port(port, proc, log)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
