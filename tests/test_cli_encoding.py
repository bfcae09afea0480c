"""The CLI on a terminal that cannot show Korean: escapes instead of a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = str(Path(__file__).resolve().parents[1] / "device" / "sori.example.toml")


def sori_ascii(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    return subprocess.run(
        [sys.executable, "-m", "sori", *args],
        input=stdin.encode() if stdin is not None else None,
        capture_output=True, env=env, timeout=120,
    )  # fmt: skip


def test_intent_on_an_ascii_terminal_answers_with_escapes():
    done = sori_ascii("intent", "--config", EXAMPLE, "--json", "거실 불 꺼 줘")
    err = done.stderr.decode("ascii")
    assert done.returncode == 0, err
    assert "Traceback" not in err
    record = json.loads(done.stdout.decode("ascii"))  # \\uXXXX escapes are valid JSON
    assert record["intent"] == "HassTurnOff" and record["slots"]["name"] == "거실 조명"
    plain = sori_ascii("intent", "--config", EXAMPLE, "거실 불 꺼 줘")
    assert plain.returncode == 0 and b"HassTurnOff" in plain.stdout
    assert "\\uac70\\uc2e4" in plain.stdout.decode("ascii")  # 거실


def test_korean_on_an_ascii_stdin_and_errors_do_not_traceback(tmp_path):
    done = sori_ascii("intent", "--config", EXAMPLE, stdin="거실 불 꺼 줘\n")
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    missing = tmp_path / "없는.toml"
    done = sori_ascii("intent", "--config", str(missing), "불 켜")
    assert done.returncode == 2 and b"Traceback" not in done.stderr
    assert b"does not exist" in done.stderr
