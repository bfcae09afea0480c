"""device/sori.service: what the issue asks of the unit, read the way systemd reads it."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[1] / "device" / "sori.service"


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # keys are case-sensitive in systemd
    parser.read(UNIT, encoding="utf-8")
    return parser


def test_runs_unprivileged_with_the_audio_group():
    service = unit()["Service"]
    assert service["User"] not in ("", "root")
    assert "audio" in service["SupplementaryGroups"].split()
    assert service["NoNewPrivileges"] == "true"


def test_restarts_on_failure_and_reloads_with_sighup():
    service = unit()["Service"]
    assert service["Restart"] == "on-failure"
    assert service["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert service["KillSignal"] == "SIGTERM"
    assert service["ExecStart"].endswith("/sori run")


def test_systemd_accepts_the_unit_where_it_is_installed(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (no systemd here)")
    out = subprocess.run(
        [analyze, "verify", "--man=no", str(UNIT)], capture_output=True, text=True, check=False
    )
    assert "Unknown key" not in out.stderr and "Unknown section" not in out.stderr
