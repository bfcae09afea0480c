"""scripts/check_arm64.sh without building a root: its help, its refusals, and the one JSON
line (and exit status) it makes from a run's results (--json-from)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check_arm64.sh"
GOOD = [
    ("arch", "aarch64"),
    ("python", "3.11.2"),
    ("emulated", "true"),
    ("notes", "emulated: qemu-user 7.2.22 on an x86-64 host (2 cores); not a board figure"),
    ("llm", "false"),
    ("install_s", "176"),
    ("notes", "no llama-cpp-python (install.sh --no-llm)"),
    ("demo_ok", "true"),
    ("demo_s", "13"),
    ("intent", "HassTurnOff"),
    ("replay_s", "147"),
    ("replay_ok", "true"),
    ("replay_text", "에어컨 꺼 줘"),
    ("total_s", "512"),
]


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def summary(tmp_path: Path, rows: list[tuple[str, str]]) -> subprocess.CompletedProcess:
    results = tmp_path / "results.tsv"
    results.write_text("".join(f"{key}\t{value}\n" for key, value in rows), encoding="utf-8")
    return check("--json-from", str(results))


def test_help_names_every_option_and_the_json_line():
    done = check("--help")
    assert done.returncode == 0
    for option in ("--cpu", "--with-llm", "--bundle", "--cache", "--rebuild", "--json-from"):
        assert option in done.stdout
    assert '"replay_ok"' in done.stdout
    assert "never a board figure" in " ".join(done.stdout.split())
    assert not done.stdout.startswith("#")  # the comment block, shown without its marks


def test_bad_arguments_exit_2_with_the_reason():
    unknown = check("--fast")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("[check-arm64] unknown option --fast")
    missing = check("--json-from", "/nonexistent/results.tsv")
    assert missing.returncode == 2
    assert "no results file /nonexistent/results.tsv" in missing.stderr
    bare = check("--cache")
    assert bare.returncode == 2 and "--cache needs a folder" in bare.stderr


def test_a_run_where_all_three_worked_is_one_json_line_and_exit_0(tmp_path):
    done = summary(tmp_path, GOOD)
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    result = json.loads(line)
    assert result == {
        "arch": "aarch64",
        "python": "3.11.2",
        "install_s": 176.0,
        "demo_ok": True,
        "intent": "HassTurnOff",
        "replay_ok": True,
        "replay_text": "에어컨 꺼 줘",
        "notes": [GOOD[3][1], GOOD[6][1]],
        "emulated": True,
        "llm": False,
        "demo_s": 13.0,
        "replay_s": 147.0,
        "total_s": 512.0,
    }
    assert list(result)[:8] == ["arch", "python", "install_s", "demo_ok", "intent",
                                "replay_ok", "replay_text", "notes"]  # fmt: skip


def test_any_one_failure_exits_1(tmp_path):
    for key, bad, shown in [("demo_ok", "false", False), ("intent", "HassTurnOn", "HassTurnOn"),
                            ("replay_ok", "false", False)]:  # fmt: skip
        rows = [(k, bad if k == key else v) for k, v in GOOD]
        done = summary(tmp_path, rows)
        assert done.returncode == 1, key
        assert json.loads(done.stdout)[key] == shown


def test_a_run_that_stopped_after_the_install_fails_with_its_note(tmp_path):
    rows = GOOD[:6] + [("notes", "install.sh failed (exit 1); see logs/install.log")]
    done = summary(tmp_path, rows)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["demo_ok"] is False and result["replay_ok"] is False
    assert result["intent"] is None and result["replay_text"] is None
    assert result["notes"][-1].startswith("install.sh failed")


def test_the_bundle_counts_only_when_it_was_checked(tmp_path):
    installed = summary(tmp_path, [*GOOD, ("bundle_board", "pi5"), ("bundle_ok", "true")])
    assert installed.returncode == 0
    assert json.loads(installed.stdout)["bundle_board"] == "pi5"
    failed = summary(tmp_path, [*GOOD, ("bundle_ok", "false")])
    assert failed.returncode == 1 and json.loads(failed.stdout)["bundle_ok"] is False
