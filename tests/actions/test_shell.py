from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from sori.acting.actions import ActionRegistry, LocalHandler, Timers
from sori.acting.actions.base import Command
from sori.acting.actions.shell import ShellHandler
from sori.core.errors import BackendError, ConfigError
from sori.core.events import IntentCommitted
from sori.core.home import Device, Home

LAMP = Device("light.desk", "책상 조명", "light")
FAN = Device("fan.bedroom", "선풍기", "fan")
PY = sys.executable


def test_runs_the_allowed_program_with_values(tmp_path):
    out = tmp_path / "out.txt"
    script = f"open({str(out)!r}, 'w').write(' '.join(__import__('sys').argv[1:]))"
    handler = ShellHandler({"light.desk": [PY, "-c", script, "{entity_id}", "{state}"]}, [PY])
    result = asyncio.run(handler.handle(Command("HassTurnOn", {}, LAMP)))
    assert out.read_text() == "light.desk on"
    assert result.detail.startswith(PY)


def test_domain_and_wildcard_entries_apply_when_no_entity_entry():
    handler = ShellHandler({"fan": [PY, "{object_id}"], "*": [PY, "{intent}"]}, [PY])
    assert handler.argv_for(Command("HassTurnOn", {}, FAN)) == [PY, "bedroom"]
    assert handler.argv_for(Command("HassTurnOn", {}, LAMP)) == [PY, "HassTurnOn"]


def test_programs_outside_the_allow_list_are_refused_at_start():
    with pytest.raises(ConfigError, match=r"shell\.commands\.light\.desk.*shell\.allow"):
        ShellHandler({"light.desk": ["/bin/rm", "-rf", "/"]}, [PY])
    with pytest.raises(ConfigError, match="absolute path"):
        ShellHandler({}, ["rm"])


def test_failing_program_is_a_backend_error():
    false = shutil.which("false")
    handler = ShellHandler({"*": [false]}, [false])
    with pytest.raises(BackendError, match="exited 1"):
        asyncio.run(handler.handle(Command("HassTurnOn", {}, LAMP)))


def test_a_hanging_program_is_killed_at_the_timeout():
    sleep = shutil.which("sleep")
    handler = ShellHandler({"*": [sleep, "30"]}, [sleep], timeout_s=0.2)
    with pytest.raises(TimeoutError):
        asyncio.run(asyncio.wait_for(handler.handle(Command("HassTurnOn", {}, LAMP)), 10))


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def lingering_script(tmp_path, spawn: str) -> tuple[list[str], Path]:
    """A program that exits at once, leaving `spawn` (a 30 s sleep) holding its stdout."""
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "lamp.sh"
    script.write_text(f"#!/bin/sh\n{spawn} &\necho $! > {pid_file}\n")
    return ["/bin/sh", str(script)], pid_file


def test_a_child_holding_the_output_is_killed_with_its_group_at_the_deadline(tmp_path):
    argv, pid_file = lingering_script(tmp_path, "sleep 30")
    handler = ShellHandler({"*": argv}, ["/bin/sh"])  # its own timeout is 5 s
    reg = ActionRegistry(
        Home(devices=(LAMP,)), {"shell": handler}, LocalHandler(Timers()), timeout_s=0.5
    )
    reg.default_handler = "shell"
    started = time.monotonic()
    (done,) = asyncio.run(reg.act(IntentCommitted(0, 1, "", "HassTurnOn", {"name": "책상 조명"})))
    took = time.monotonic() - started
    assert not done.ok and "process group was killed" in done.detail
    assert took < 10, f"waited {took:.1f} s on an orphan's pipe"
    pid = int(pid_file.read_text())
    end = time.monotonic() + 5
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.01)
    assert not alive(pid)


def test_a_child_that_left_the_group_does_not_hold_the_handler(tmp_path):
    argv, pid_file = lingering_script(tmp_path, "setsid sleep 30")
    handler = ShellHandler({"*": argv}, ["/bin/sh"], timeout_s=0.3)
    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match="process group was killed"):
            asyncio.run(handler.handle(Command("HassTurnOn", {}, LAMP)))
        assert time.monotonic() - started < 10
    finally:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
