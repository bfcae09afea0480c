"""The state files Sori keeps across restarts (timers.json, the wake state.json): a damaged
or hostile one is set aside (renamed *.bad-<time>, one log line) and the defaults are used;
start-up goes on. Real loaders, real files, and one real `sori run`."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon_kit import write_config
from sori.acting.actions.timers import Timers
from sori.serving.conversation.listening import Conversation

GOOD_TIMER = {"id": 3, "seconds": 60.0, "ends_s": 2_000_000_000.0, "name": "파스타"}


def aside(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.bad-*"))


def load_timers(path: Path, caplog) -> Timers:
    timers = Timers(path=path, now=lambda: 1_900_000_000.0, autorun=False)
    with caplog.at_level(logging.ERROR):
        timers.load()
    return timers


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (json.dumps([GOOD_TIMER | {"ends_s": "soon"}]), "ends_s must be a number"),
        ('[{"id": 1, "seconds": 5, "ends_s": NaN}]', "ends_s must be a finite number"),
        ('[{"id": 1, "seconds": 5, "ends_s": Infinity}]', "ends_s must be a finite number"),
        (json.dumps([GOOD_TIMER | {"id": "1"}]), "id must be an integer"),
        (json.dumps([GOOD_TIMER | {"kind": "bomb"}]), "kind must be timer or alarm"),
        (json.dumps([GOOD_TIMER | {"ringing_since_s": [1]}]), "ringing_since_s must be"),
        (json.dumps([GOOD_TIMER | {"colour": "red"}]), "unknown key"),
        (json.dumps([1]), "must be a table"),
        (json.dumps({"id": 1}), "must be a list"),
        ("", "empty"),
        ('[{"id": 1, "sec', "Unterminated"),
        ("[" * 100_000, "nested too deeply"),
        (json.dumps([GOOD_TIMER | {"seconds": int("9" * 400)}]), "seconds must be"),
        (b"\xff\xfe[]", "utf-8"),
    ],
)
def test_a_bad_timers_file_is_set_aside_and_no_timers_are_kept(tmp_path, caplog, text, why):
    path = tmp_path / "timers.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    timers = load_timers(path, caplog)
    assert timers.active() == [] and timers.missed == []
    assert not path.exists() and len(aside(path)) == 1  # kept for a person to look at
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert why.lower() in lines[0].lower() and "set aside as timers.json.bad-" in lines[0]
    # The next timer is kept in a new file that loads again.
    timers.start(30, "라면")
    again = Timers(path=path, now=time.time, autorun=False)
    again.load()
    assert [t.name for t in again.active()] == ["라면"]


def test_a_good_timers_file_loads_as_before(tmp_path, caplog):
    path = tmp_path / "timers.json"
    path.write_text(json.dumps([GOOD_TIMER, GOOD_TIMER | {"id": 4, "ends_s": 1.0}]))
    timers = load_timers(path, caplog)
    assert [t.id for t in timers.active()] == [3] and [t.id for t in timers.missed] == [4]
    assert not aside(path) and not caplog.records


def test_a_nan_timer_never_spins_the_runner(tmp_path, caplog):
    """Today a NaN `ends_s` makes the runner wait 0 s again and again (96 % CPU)."""
    path = tmp_path / "timers.json"
    path.write_text('[{"id": 1, "seconds": 5, "ends_s": NaN}]')
    looks = []

    def now() -> float:
        looks.append(1)
        return time.time()

    async def main() -> None:
        timers = Timers(path=path, now=now, autorun=False)
        timers.load()
        runner = asyncio.create_task(timers.run())
        await asyncio.sleep(0.5)
        runner.cancel()

    started = time.process_time()
    asyncio.run(main())
    assert len(looks) < 10, f"the runner looked at the clock {len(looks)} times in 0.5 s"
    assert time.process_time() - started < 0.3


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ('{"muted": tr', "Expecting value"),
        ('{"muted": "false"}', "muted must be true or false"),
        ('{"muted": 1}', "muted must be true or false"),
        ("[true]", "not a JSON object"),
        ("\x00" * 10, "Expecting value"),
    ],
)
def test_a_bad_wake_state_file_is_set_aside_and_the_default_used(tmp_path, caplog, text, why):
    path = tmp_path / "state.json"
    path.write_text(text)
    with caplog.at_level(logging.ERROR):
        conversation = Conversation(gated=True, muted=False, state_file=path)
    assert conversation.muted is False  # "false" as a string is not muted
    assert not path.exists() and len(aside(path)) == 1
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and why in lines[0] and "unmuted" in lines[0], lines
    conversation.mute()
    assert Conversation(gated=True, state_file=path).muted is True  # a good file again


def test_a_good_wake_state_file_is_honoured(tmp_path):
    path = tmp_path / "state.json"
    path.write_text('{"muted": true}')
    assert Conversation(gated=True, muted=False, state_file=path).muted is True
    path.write_text("{}")
    assert Conversation(gated=True, muted=True, state_file=path).muted is True
    assert not aside(path)


def test_the_state_files_keep_a_private_mode(tmp_path):
    path = tmp_path / "state.json"
    path.write_text('{"muted": false}')
    os.chmod(path, 0o600)
    Conversation(gated=True, state_file=path).mute()
    assert path.stat().st_mode & 0o777 == 0o600
    timers_path = tmp_path / "timers.json"
    timers_path.write_text("[]")
    os.chmod(timers_path, 0o600)
    Timers(path=timers_path, autorun=False).start(10)
    assert timers_path.stat().st_mode & 0o777 == 0o600


# Hostile JSON: any document, and timer lists whose fields are any JSON value.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
FIELDS = ["id", "seconds", "ends_s", "name", "kind", "ringing_since_s", "next_ring_s"]
TIMER_LISTS = st.lists(
    st.dictionaries(st.sampled_from([*FIELDS, "x"]), JSON_VALUES, max_size=8), max_size=4
)
RAW = st.binary(max_size=200) | st.text(max_size=200).map(str.encode)
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _dump(value) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


@FUZZ
@given(st.one_of(RAW, JSON_VALUES.map(_dump), TIMER_LISTS.map(_dump)))
def test_fuzz_timers_file_loads_or_is_set_aside(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("timers")
    path = folder / "timers.json"
    path.write_bytes(data)
    timers = Timers(path=path, now=lambda: 1_900_000_000.0, autorun=False)
    timers.load()  # never raises
    if path.exists():  # loaded: every timer is a sane one
        for timer in [*timers.active(), *timers.missed]:
            assert isinstance(timer.id, int) and math.isfinite(timer.ends_s)
            assert timer.kind in ("timer", "alarm") and isinstance(timer.name, str)
        assert timers.next_event_s() is None or math.isfinite(timers.next_event_s())
        timers.start(5, "x")  # and it can be written back
        json.loads(path.read_text("utf-8"))
    else:
        assert len(aside(path)) == 1 and timers.active() == []


@FUZZ
@given(st.one_of(RAW, JSON_VALUES.map(_dump), st.builds(dict, muted=JSON_VALUES).map(_dump)))
def test_fuzz_wake_state_file_loads_or_is_set_aside(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("state")
    path = folder / "state.json"
    path.write_bytes(data)
    conversation = Conversation(gated=True, muted=False, state_file=path)
    assert conversation.muted in (True, False)
    if not path.exists():
        assert len(aside(path)) == 1 and conversation.muted is False


def test_sori_run_starts_with_bad_state_files(tmp_path, mosquitto, private_home):
    """`sori run` refused to start on an empty state.json and died on a timers.json that
    says "soon"; now both are set aside, logged, and the daemon answers."""
    state = tmp_path / "state.json"
    state.write_text("")
    timers = tmp_path / "timers.json"
    timers.write_text(json.dumps([GOOD_TIMER | {"ends_s": "soon"}]))
    config = write_config(
        tmp_path,
        mosquitto,
        extra=f'\n[alarms]\nstate_file = "{timers}"\n',
        wake=f'\n[wake]\nenabled = false\nstate_file = "{state}"\n',
    )
    config.write_text(config.read_text().replace('log_format = "text"', 'log_format = "json"'))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sori", "run", "--config", str(config), "--input", "none",
         "--output", str(tmp_path / "r.wav"), "--http", "127.0.0.1:0"],
        cwd=tmp_path, env={**os.environ, "PYTHONUNBUFFERED": "1"}, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line)
            if '"msg": "ready"' in line:
                break
        url = json.loads(lines[-1])["http"]
        health = httpx.get(f"{url}/health", timeout=10).json()
        assert health["listening"]["muted"] is False and health["timers"] == 0
        proc.send_signal(signal.SIGTERM)
        lines.append(proc.communicate(timeout=30)[1])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = "".join(lines)
    assert proc.returncode == 0, log
    assert "Traceback" not in log
    assert "state.json: empty; set aside as state.json.bad-" in log, log
    assert "timers.json: timers[0].ends_s must be a number" in log, log
    assert len(aside(state)) == 1 and len(aside(timers)) == 1
