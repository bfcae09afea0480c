"""Home Assistant's own Korean intent tests (../shared/conformance/ha-intents-ko)."""

from __future__ import annotations

import subprocess
import sys

from sori.testing.conformance import load_cases, run_cases
from sori.understanding.intents import load_presets
from sori.understanding.intents.loader import load_fixtures


def test_at_least_95_percent_of_home_assistant_korean_sentences_pass(shared_dir):
    folder = shared_dir / "conformance" / "ha-intents-ko"
    presets = load_presets("ko", load_fixtures(folder / "_fixtures.yaml"))
    cases = load_cases(folder)
    assert len(cases) > 250
    result = run_cases(cases, presets)
    failed = "\n".join(f"{f.sentence} → {f.got_intent} {f.got_slots}" for f in result.failures)
    assert result.passed / len(cases) >= 0.95, failed


def test_cli_prints_failures_and_a_closing_count(shared_dir, tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    fixtures = (shared_dir / "conformance" / "ha-intents-ko" / "_fixtures.yaml").read_text()
    (folder / "_fixtures.yaml").write_text(fixtures, encoding="utf-8")
    (folder / "light.yaml").write_text(
        "language: ko\ntests:\n"
        "  - sentences: ['거실 불 꺼', '거실 불 꺼 줘']\n"
        "    intent: {name: HassTurnOff, slots: {name: 거실 조명}}\n"
        "  - sentences: ['거실 불 꺼']\n"
        "    intent: {name: HassTurnOn}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "sori", "conformance", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout.strip().splitlines()[-1] == "2 passed, 1 failed"
    assert "FAIL light.yaml: '거실 불 꺼'" in done.stdout


def test_cli_refuses_a_folder_without_fixtures(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "sori", "conformance", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "_fixtures.yaml" in done.stderr
    assert "Traceback" not in done.stderr
