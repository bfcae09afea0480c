"""`sori home import` and `[home] source = "home_assistant"`, against a loopback server that
speaks Home Assistant's websocket API in its documented shapes (tests/ha_server.py; a
real Home Assistant does not install and start here within the test budget)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from broker import free_port
from ha_server import TOKEN, HaServer
from sori.commands.options import load_home, load_understanding
from sori.core.config import parse_config

REPO = Path(__file__).resolve().parents[1]


def sori(*args: str, env_token: str | None = TOKEN, cwd: Path | None = None):
    env = {**os.environ, "PYTHONPATH": str(REPO / "device")}
    env.pop("SORI_HA_TOKEN", None)
    if env_token is not None:
        env["SORI_HA_TOKEN"] = env_token
    return subprocess.run(
        [sys.executable, "-m", "sori", *args], env=env, cwd=cwd, text=True,
        capture_output=True, timeout=60,
    )  # fmt: skip


@pytest.fixture(scope="module")
def ha():
    with HaServer() as server:
        yield server


def test_import_writes_the_exposed_home_in_korean(ha, tmp_path):
    out = tmp_path / "home.toml"
    done = sori("home", "import", "--ha-url", ha.url, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "4 devices" in done.stderr
    data = tomllib.loads(out.read_text(encoding="utf-8"))
    parse_config(data)  # it loads as sori.toml
    areas = {a["id"]: a for a in data["home"]["areas"]}
    assert areas["living_room"] == {"id": "living_room", "name": "거실", "aliases": ["리빙룸"]}
    assert areas["bedroom"]["aliases"] == ["침실", "큰방"]
    assert '# floor: "2층"' in out.read_text(encoding="utf-8")
    devices = {d["id"]: d for d in data["home"]["devices"]}
    assert "switch.secret_relay" not in devices  # not exposed to Assist
    assert devices["light.hue_lamp"] == {
        "id": "light.hue_lamp",
        "name": "거실 스탠드",
        "domain": "light",
        "area": "living_room",
        "aliases": ["거실 불", "스탠드"],
    }  # fmt: skip  (area through its device, name_by_user, aliases from get_entries)
    assert devices["light.bedroom_ceiling"]["name"] == "안방 천장등"
    assert devices["climate.bedroom_ac"]["area"] == "bedroom"
    assert devices["cover.garage_door"]["device_class"] == "garage"


def test_the_imported_home_is_understood(ha, tmp_path):
    config = tmp_path / "sori.toml"
    config.write_text(
        f'[home]\nsource = "home_assistant"\narea = "living_room"\n\n'
        f'[home_assistant]\nurl = "{ha.url}"\n',
        encoding="utf-8",
    )
    os.environ["SORI_HA_TOKEN"] = TOKEN
    try:
        _, presets = load_understanding(argparse.Namespace(config=str(config), fixtures=None))
    finally:
        del os.environ["SORI_HA_TOKEN"]
    lamp = presets.match("스탠드 켜줘")
    assert lamp.intent == "HassTurnOn" and lamp.slots["name"] == "거실 스탠드"
    assert presets.match("안방 불 꺼줘").slots["name"] == "안방 천장등"


def test_file_devices_win_over_imported_ones_and_a_reload_reads_ha_again(tmp_path):
    config = tmp_path / "sori.toml"
    with HaServer() as ha:
        config.write_text(
            f'[home]\nsource = "home_assistant"\n\n[[home.devices]]\nid = "light.hue_lamp"\n'
            f'name = "내 스탠드"\nhandler = "mqtt"\n\n[home_assistant]\nurl = "{ha.url}"\n',
            encoding="utf-8",
        )
        args = argparse.Namespace(config=str(config), fixtures=None)
        os.environ["SORI_HA_TOKEN"] = TOKEN
        try:
            cfg, home = load_home(args)
            assert [d.name for d in home.devices if d.id == "light.hue_lamp"] == ["내 스탠드"]
            assert cfg.home.devices[-1].handler == "mqtt"
            ha.results["config/area_registry/list"] = [
                *ha.results["config/area_registry/list"],
                {"area_id": "study", "name": "서재", "aliases": [], "floor_id": None},
            ]
            _, again = load_home(args)  # what SIGHUP calls
        finally:
            del os.environ["SORI_HA_TOKEN"]
    assert "서재" in [a.name for a in again.areas]


def test_a_bad_token_is_exit_2_and_nothing_written(ha, tmp_path):
    out = tmp_path / "home.toml"
    done = sori("home", "import", "--ha-url", ha.url, "-o", str(out), env_token="wrong")
    assert done.returncode == 2
    assert "refused the token" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


def test_no_token_says_which_variable(tmp_path):
    done = sori("home", "import", "--ha-url", "http://127.0.0.1:1", env_token=None)
    assert done.returncode == 2 and "$SORI_HA_TOKEN is empty" in done.stderr


def test_server_down_is_exit_2_and_nothing_written(tmp_path):
    out = tmp_path / "home.toml"
    url = f"http://127.0.0.1:{free_port()}"
    done = sori("home", "import", "--ha-url", url, "-o", str(out))
    assert done.returncode == 2
    assert "cannot reach Home Assistant" in done.stderr and "--ha-url" in done.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "command, bad, message",
    [
        ("config/area_registry/list", "malformed", "not JSON"),
        ("config/entity_registry/list", {"oops": 1}, "not a list"),
        ("config/device_registry/list", [{"name": "no id"}], "not in the shape expected"),
    ],
)
def test_malformed_payloads_are_exit_2_and_nothing_written(tmp_path, command, bad, message):
    out = tmp_path / "home.toml"
    with HaServer() as ha:
        ha.results[command] = bad
        done = sori("home", "import", "--ha-url", ha.url, "-o", str(out))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
