"""`sori intent` and `sori demo` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = str(Path(__file__).resolve().parents[1] / "device" / "sori.example.toml")


def sori(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sori", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_json_lines_carry_every_field():
    done = sori("intent", "--config", EXAMPLE, "--json", "거실 불 꺼 줘", "오늘 점심 뭐 먹지")
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert set(first) == {"text", "intent", "slots", "confidence", "response", "elapsed_ms"}
    assert first["intent"] == "HassTurnOff"
    assert first["slots"]["name"] == "거실 조명"
    assert first["response"] == "거실 조명을 껐어요"
    assert first["confidence"] == 1.0 and first["elapsed_ms"] > 0
    assert second["intent"] is None and second["slots"] == {}


def test_stdin_is_answered_line_by_line_as_it_comes():
    with subprocess.Popen(
        [sys.executable, "-m", "sori", "intent", "--config", EXAMPLE, "--json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        proc.stdin.write("불 켜 줘\n")
        proc.stdin.flush()
        # The answer arrives before stdin is closed: the CLI streams.
        answer = json.loads(proc.stdout.readline())
        assert answer["intent"] == "HassTurnOn" and answer["slots"]["area"] == "거실"
        proc.stdin.write("타이머 취소\n")
        proc.stdin.close()
        assert json.loads(proc.stdout.readline())["intent"] == "HassCancelTimer"
        assert proc.wait(timeout=30) == 0


def test_plain_output_is_one_line_per_utterance():
    done = sori("intent", "--config", EXAMPLE, stdin="불 꺼\n\n뭐 해?\n")
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("불 꺼\tHassTurnOff")
    assert lines[2].endswith("(no match)")


def test_bad_config_exits_2_with_the_key_named(tmp_path):
    bad = tmp_path / "sori.toml"
    bad.write_text("[intents]\nfuzzy_threshold = 'high'\n")
    done = sori("intent", "--config", str(bad), "불 켜")
    assert done.returncode == 2
    assert "intents.fuzzy_threshold must be a number" in done.stderr
    assert "Traceback" not in done.stderr


def test_demo_runs_on_embedded_defaults(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "sori", "demo", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers[0]["intent"] == "HassTurnOn"
    assert answers[-1]["intent"] is None  # 거실 불 켜지 마


def test_help_lists_the_subcommands():
    done = sori("--help")
    assert done.returncode == 0
    for command in ("intent", "conformance", "demo"):
        assert command in done.stdout


def test_fixtures_give_the_home(shared_dir):
    fixtures = shared_dir / "conformance" / "ha-intents-ko" / "_fixtures.yaml"
    done = sori("intent", "--fixtures", str(fixtures), "--json", "침실 커튼 열어 줘")
    answer = json.loads(done.stdout)
    assert answer["intent"] == "HassTurnOn"
    assert answer["slots"]["name"] == "침실 커튼"
    assert answer["slots"]["domain"] == "cover"


def test_missing_fixtures_file_exits_2(tmp_path):
    done = sori("intent", "--fixtures", str(tmp_path / "nope.yaml"), "불 켜")
    assert done.returncode == 2
    assert "nope.yaml: file not found" in done.stderr
