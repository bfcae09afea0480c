"""Shared test fixtures and paths."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# A real mosquitto broker (`mosquitto`, `subscriber`), for the actions and daemon tests.
pytest_plugins = ["broker"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules marked `slow` (30 s or more) go first. scripts/test.sh hands whole modules
    to its workers in this order (`--no-loadscope-reorder`), so the long ones start early
    and the short ones fill in at the end, and the workers finish together: a long module
    handed out last kept one worker busy for a minute after the other had finished."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is absent")
    return SHARED


@pytest.fixture(autouse=True)
def private_home(tmp_path_factory, monkeypatch) -> Path:
    """Each test gets its own HOME, so `sori run` makes its API token there, never in the
    real one."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture(autouse=True, scope="module")
def no_mqtt_client_outlives_its_file() -> Iterator[None]:
    """Fails the file whose tests leave an MQTT client running (a daemon or an answerer
    built and never closed). Such a client holds its connection and thread for the rest
    of the worker's run; one that shared a later file's client id took the broker from
    that file's daemon, whose command then never arrived."""

    def running() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name.startswith("paho-mqtt-client-")}

    before = running()
    yield
    deadline = time.monotonic() + 2.0  # a client closing now stops its thread at once
    while (left := running() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"MQTT clients left running: {sorted(t.name for t in left)}; close them"


@pytest.fixture(autouse=True, scope="module")
def a_room_of_its_own() -> None:
    """Each test file's pipelines start with denoisers that know no room: the process's
    pool keeps what its denoisers learned (a daemon's room stays the same), which would
    make a file's results depend on the files run before it in the same worker. Per file,
    not per test: a file's daemon, built once, keeps the denoiser it warmed (loading one
    in the middle of a barge-in makes it late)."""
    from sori.hearing.audio.denoise_decision import POOL

    POOL.forget()


@pytest.fixture
def quiet(caplog):
    """Asserts at the end that nothing above INFO and no traceback was logged (the HTTP
    API's line at its connection cap aside)."""
    caplog.set_level(logging.DEBUG)
    yield caplog
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    loud = [r for r in loud if "connections open" not in r.getMessage()]  # the cap's line
    assert not loud, [f"{r.levelname} {r.name}: {r.getMessage()}" for r in loud]
    assert "Traceback" not in caplog.text
