"""A hostile or broken Home Assistant against `sori home import` and `[home] source =
"home_assistant"` (issue 25, items 2, 3, 14, 15, 20): names that try to become config, a
redirect that fishes for the token, an HA that chatters instead of answering, JSON in
shapes no HA sends, and a write that fails half-way. All against the loopback HA of
tests/ha_server.py, through the real CLI or the real `load_home` (what start-up and
SIGHUP call)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ha_server import AREAS, ENTITIES, FLOORS, TOKEN, HaServer, Raw
from sori.acting.ha_rest import rest_client
from sori.cli import main
from sori.commands.options import load_home
from sori.core.config import parse_config
from sori.core.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]

INJECTION = '1층\n[actions]\ndefault_handler = "shell"\n[shell]\nallow = ["/bin/sh"]'
"""A floor name that, written raw into a comment, would become tables of its own."""


def sori(*args: str, limit_file_bytes: int = 0) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "device"), "SORI_HA_TOKEN": TOKEN}

    def limit() -> None:  # a file may grow only this far: writes past it fail (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))

    return subprocess.run(
        [sys.executable, "-m", "sori", *args], env=env, text=True, capture_output=True,
        timeout=60, preexec_fn=limit if limit_file_bytes else None,
    )  # fmt: skip


@dataclass
class Done:
    returncode: int
    stderr: str


@pytest.fixture
def import_from(monkeypatch, capsys):
    """`sori home import --ha-url HA -o OUT ...` through the CLI's own entry, in this
    process (the same code as `python -m sori`, without a second of start-up a case)."""
    monkeypatch.setenv("SORI_HA_TOKEN", TOKEN)

    def run(ha: HaServer, out: Path, *extra: str) -> Done:
        code = within(30, main, ["home", "import", "--ha-url", ha.url, "-o", str(out), *extra])
        return Done(code, capsys.readouterr().err)

    return run


def within(limit_s: float, call: Callable[..., Any], *args: Any) -> Any:
    """`call(*args)`, failing the test (instead of hanging it) when it runs past `limit_s`."""
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(call(*args)), daemon=True)
    worker.start()
    worker.join(limit_s)
    assert done, f"still running after {limit_s} s (or failed: see the thread's error)"
    return done[0]


def config_of(folder: Path, url: str, extra: str = "") -> argparse.Namespace:
    """A config reading its home from HA at `url`, with one area and device of its own."""
    path = folder / "sori.toml"
    path.write_text(
        f'[home]\nsource = "home_assistant"\nsource_timeout_s = 1\n{extra}\n'
        '[[home.areas]]\nid = "study"\nname = "서재"\n\n'
        '[[home.devices]]\nid = "light.study"\nname = "서재 조명"\narea = "study"\n\n'
        f'[home_assistant]\nurl = "{url}"\n',
        encoding="utf-8",
    )
    return argparse.Namespace(config=str(path), fixtures=None)


@pytest.fixture
def token_set(monkeypatch):
    monkeypatch.setenv("SORI_HA_TOKEN", TOKEN)


def ids(home) -> set[str]:
    return {d.id for d in home.devices}


# Item 2: names from HA never become config.


@pytest.mark.parametrize(
    "table, index, key, value",
    [
        ("config/floor_registry/list", 0, "name", INJECTION),
        ("config/area_registry/list", 0, "name", "거실\x00"),
        ("config/area_registry/list", 1, "aliases", ["침실\x1b[31m"]),
        ("config/entity_registry/list", 1, "name", "안방\u202e등"),
        ("config/area_registry/list", 0, "area_id", "living\nroom"),
    ],
)
def test_control_characters_from_ha_are_refused_and_nothing_written(
    import_from, tmp_path, table, index, key, value
):
    out = tmp_path / "home.toml"
    source = {"config/floor_registry/list": FLOORS, "config/area_registry/list": AREAS,
              "config/entity_registry/list": ENTITIES}[table]  # fmt: skip
    rows = [dict(row) for row in source]
    rows[index][key] = value
    with HaServer() as ha:
        ha.results[table] = rows
        done = import_from(ha, out)
    assert done.returncode == 2, done.stdout
    assert "rename it in Home Assistant" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    "section, bad, key",
    [
        ("devices", {"id": "light.x", "name": "거실\n[shell]"}, "home.devices[0].name"),
        ("devices", {"id": "light.x", "name": "x", "aliases": ["a\u202eb"]},
         "home.devices[0].aliases"),
        ("areas", {"id": "living\x1b", "name": "거실"}, "home.areas[0].id"),
    ],
)  # fmt: skip
def test_control_characters_in_the_config_home_name_the_key(section, bad, key):
    with pytest.raises(ConfigError, match=r"holds U\+[0-9A-F]{4}[ ,]") as raised:
        parse_config({"home": {section: [bad]}}, source="sori.toml")
    assert str(raised.value).startswith(f"sori.toml: {key} = ")


def test_control_characters_at_start_keep_the_config_home(tmp_path, token_set, caplog):
    with HaServer() as ha:
        ha.results["config/floor_registry/list"] = [{**FLOORS[0], "name": INJECTION}]
        with caplog.at_level(logging.WARNING, logger="sori"):
            config, home = load_home(config_of(tmp_path, ha.url))
    assert ids(home) == {"light.study"} and config.actions.default_handler != "shell"
    assert len([r for r in caplog.records if "Home Assistant" in r.getMessage()]) == 1


# Item 3: the token never follows a redirect.


def test_import_never_sends_the_token_where_ha_redirects(import_from, tmp_path):
    out = tmp_path / "home.toml"
    with HaServer() as elsewhere, HaServer(redirect_to=elsewhere.url) as ha:
        done = import_from(ha, out)
    assert done.returncode == 2
    assert "redirect" in done.stderr and elsewhere.url in done.stderr
    assert "Traceback" not in done.stderr
    assert elsewhere.credentials == [] and not out.exists()


def test_start_never_sends_the_token_where_ha_redirects(tmp_path, token_set):
    with HaServer() as elsewhere, HaServer(redirect_to=elsewhere.url) as ha:
        _, home = load_home(config_of(tmp_path, ha.url))
    assert elsewhere.credentials == []
    assert ids(home) == {"light.study"}


def test_rest_calls_never_send_the_token_where_ha_redirects(token_set):
    async def get_states(url: str) -> int:
        _, client = rest_client(url, "SORI_HA_TOKEN", 5.0)
        async with client:
            return (await client.get("/api/states")).status_code

    with HaServer() as elsewhere, HaServer(redirect_to=elsewhere.url) as ha:
        status = asyncio.run(get_states(ha.url))
    assert status == 302  # answered as it is: never followed
    assert ha.credentials == [f"Bearer {TOKEN}"] and elsewhere.credentials == []


# Item 14: every step has a total deadline.


def test_import_stops_at_its_timeout_when_ha_chatters(import_from, tmp_path):
    out = tmp_path / "home.toml"
    with HaServer(chatter_s=0.2) as ha:
        started = time.monotonic()
        done = import_from(ha, out, "--timeout-s", "1")
        took_s = time.monotonic() - started
    assert done.returncode == 2 and took_s < 10
    assert "did not answer within 1 s" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


@pytest.mark.parametrize("timeout", ["nan", "0"])
def test_a_timeout_that_is_no_deadline_is_refused(import_from, tmp_path, timeout):
    with HaServer(chatter_s=0.2) as ha:
        done = import_from(ha, tmp_path / "home.toml", "--timeout-s", timeout)
    assert done.returncode == 2 and "--timeout-s must be above 0" in done.stderr


def test_start_and_reload_stop_at_the_deadline_and_keep_the_last_good_home(
    tmp_path, token_set, caplog
):
    with HaServer() as ha:
        args = config_of(tmp_path, ha.url)
        _, good = load_home(args)  # start-up: HA answers
        assert "light.hue_lamp" in ids(good)
        ha.chatter_s = 0.2  # then HA only chatters: what SIGHUP reads
        caplog.clear()  # start-up's own lines, which another test's logging may let in
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="sori"):
            _, again = within(30, load_home, args)
        took_s = time.monotonic() - started
    assert took_s < 10
    assert ids(again) == ids(good)
    lines = [r.getMessage() for r in caplog.records if "Home Assistant" in r.getMessage()]
    assert len(lines) == 1 and "last good home" in lines[0]


# Item 15: hostile JSON is a clear error, never a traceback.

AREAS_ = "config/area_registry/list"
ENTITIES_ = "config/entity_registry/list"
NOT_AN_ID = 'light."x"\n[shell]'
HOSTILE = {  # what each case changes in the answers of HA
    "nesting 100,000 deep": {AREAS_: Raw("[" * 100_000 + "]" * 100_000)},
    "a lone surrogate": {
        AREAS_: Raw('[{"area_id": "x", "name": "\\ud800", "aliases": [], "floor_id": null}]')
    },
    "entity_id a list": {
        ENTITIES_: [{**ENTITIES[0], "entity_id": ["light.hue_lamp"]}, *ENTITIES[1:]]
    },
    "an exposed entity id that is no entity id": {
        ENTITIES_: [{**ENTITIES[0], "entity_id": NOT_AN_ID}],
        "homeassistant/expose_entity/list": {
            "exposed_entities": {NOT_AN_ID: {"conversation": True}}
        },
    },
    "area name a number": {AREAS_: [{**AREAS[0], "name": 5}, *AREAS[1:]]},
    "aliases a string": {AREAS_: [{**AREAS[0], "aliases": "거실"}]},
    "an area a list": {AREAS_: [["living_room"]]},
    "floor_id a list": {AREAS_: [{**AREAS[0], "floor_id": ["first"]}]},
    "exposed_entities a list": {"homeassistant/expose_entity/list": {"exposed_entities": []}},
    "friendly_name a table": {
        "get_states": [
            {"entity_id": "climate.bedroom_ac", "attributes": {"friendly_name": {"ko": "x"}}}
        ]
    },
    "states not a list": {"get_states": {"entity_id": "x"}},
    "a device's area a list": {
        "config/device_registry/list": [
            {"id": "dev-hue-1", "name": "Hue", "name_by_user": None, "area_id": ["x"]}
        ]
    },
}


@pytest.mark.parametrize("answers", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_json_is_a_clear_error_and_nothing_written(import_from, tmp_path, answers):
    out = tmp_path / "home.toml"
    with HaServer() as ha:
        ha.results.update(answers)
        done = import_from(ha, out)
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Home Assistant" in done.stderr
    assert not out.exists()


def test_hostile_json_at_start_keeps_the_config_home(tmp_path, token_set, caplog):
    with HaServer() as ha:
        ha.results["config/entity_registry/list"] = [{**ENTITIES[0], "entity_id": ["x"]}]
        with caplog.at_level(logging.WARNING, logger="sori"):
            _, home = load_home(config_of(tmp_path, ha.url))
    assert ids(home) == {"light.study"}
    assert len([r for r in caplog.records if "Home Assistant" in r.getMessage()]) == 1


def test_sori_run_starts_with_a_hostile_ha(tmp_path):
    """The daemon itself: `sori run` reaches "ready" (with the file's own home) instead of
    dying at start-up."""
    with HaServer() as ha:
        ha.results["config/area_registry/list"] = Raw("[" * 100_000 + "]" * 100_000)
        args = config_of(tmp_path, ha.url, '\n[tts]\nbackend = "espeak"\n')
        env = {**os.environ, "PYTHONPATH": str(REPO / "device"), "SORI_HA_TOKEN": TOKEN}
        proc = subprocess.Popen(
            [sys.executable, "-m", "sori", "run", "--config", args.config, "--input", "none",
             "--http", "off", "--output", str(tmp_path / "out.wav")],
            env=env, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            lines = []
            for line in proc.stderr:
                lines.append(line)
                if "ready" in line or "Traceback" in line:
                    break
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    text = "".join(lines)
    assert "ready" in text and "Traceback" not in text, text
    assert sum("Home Assistant" in line for line in lines) == 1, text


# Item 20: --force replaces the file whole or not at all.


def test_a_failed_forced_write_leaves_the_old_file_whole(tmp_path):
    out = tmp_path / "home.toml"
    old = "# my own home, by hand\n" + "[home]\n" + "# " + "x" * 600 + "\n"
    out.write_text(old, encoding="utf-8")
    with HaServer() as ha:  # the import is over 1 KB; files may grow to 700 bytes only
        done = sori("home", "import", "--ha-url", ha.url, "-o", str(out), "--force",
                    limit_file_bytes=700)  # fmt: skip
    assert done.returncode == 2 and f"cannot write {out}" in done.stderr
    assert out.read_text(encoding="utf-8") == old
    assert [p.name for p in tmp_path.iterdir()] == ["home.toml"]  # no temp file left
