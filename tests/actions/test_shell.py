from __future__ import annotations

import asyncio
import shutil
import sys

import pytest

from sori.actions.base import Command
from sori.actions.shell import ShellHandler
from sori.errors import BackendError, ConfigError
from sori.home import Device

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
