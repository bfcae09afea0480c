"""A real Home Assistant (2024.3.3, scripts/real_ha.py) for the end-to-end tests of this
folder, started once per session on a free loopback port, onboarded, stopped by PID.

These tests run as their own command, `bash scripts/test_real_ha.sh` (which sets
SORI_REAL_HA=1); without it this folder collects nothing, so the main suite never
installs or starts Home Assistant (and reports nothing from here as passed or skipped).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

ENABLED = os.environ.get("SORI_REAL_HA") == "1"
if not ENABLED:
    collect_ignore_glob = ["test_*.py"]


def _load_script():
    """scripts/real_ha.py as the module `real_ha`, imported before any test changes HOME
    (its cache folder is under the real one)."""
    spec = importlib.util.spec_from_file_location("real_ha", REPO / "scripts" / "real_ha.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["real_ha"] = module
    spec.loader.exec_module(module)
    return module


if ENABLED:  # the helpers of this folder import each other, and real_ha, by name
    sys.path.insert(0, str(HERE))
    real_ha_script = _load_script()


@pytest.fixture(scope="session")
def real_ha(tmp_path_factory) -> Iterator:
    """The running Home Assistant: `.url`, `.token` (an owner's long-lived token), `.pid`."""
    from ha_kit import Ha

    ha = real_ha_script.RealHa.start(tmp_path_factory.mktemp("home-assistant"))
    try:
        yield Ha(ha)
    finally:
        ha.stop()


@pytest.fixture(scope="session")
def home(real_ha) -> dict[str, str]:
    """The home as a user sets it up in HA's UI: an area 거실 (alias 리빙룸); the template
    light 거실 조명 (over input_boolean.living_light_power) in it, alias 거실 불, exposed to
    Assist; the template switch 비밀 릴레이 in it too, not exposed."""
    area = real_ha.area("거실", ["리빙룸"])
    real_ha.place("light.living_light", area, ["거실 불"])
    real_ha.place("switch.secret_relay", area, ["비밀 스위치"])
    real_ha.expose(["light.living_light"], True)
    real_ha.expose(["switch.secret_relay"], False)
    return {"area": area, "light": "light.living_light", "hidden": "switch.secret_relay"}


@pytest.fixture(scope="session")
def ha_mqtt(real_ha, mosquitto) -> str:
    """HA's MQTT integration on the suite's real mosquitto (tests/broker.py), added as the
    UI adds it: Settings > Devices & services > MQTT, broker and port."""
    host, port = mosquitto.removeprefix("mqtt://").split(":")
    real_ha.add_integration("mqtt", {"broker": host, "port": int(port)})
    return mosquitto
