"""scripts/install.sh's own steps, run by bash: the CPU probe's crash is one line of ours,
and a long step says what it does, about how long it takes, and when it is done."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

INSTALL = Path(__file__).resolve().parents[1] / "scripts" / "install.sh"


def functions(*names: str) -> str:
    """The named shell functions of install.sh, as written there."""
    text = INSTALL.read_text()
    found = [re.search(rf"^{n}\(\) {{( [^\n]*}}$|\n.*?^}}$)", text, re.M | re.S) for n in names]
    return "\n".join(f[0] for f in found)


def bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script], cwd=cwd, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip


def test_a_crashing_cpu_probe_is_one_line_that_says_so(tmp_path):
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    python = venv / "python"  # a python whose llama.cpp faults, as on some AMX machines
    python.write_text(
        "#!/bin/sh\ncat >/dev/null\nexec python3 -c "
        "'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'\n"
    )
    python.chmod(0o755)
    done = bash(functions("say", "llama_works") + "\nllama_works || echo rc=$?", tmp_path)
    assert done.stdout == "rc=139\n"
    assert done.stderr.splitlines() == [
        "[install] CPU probe: llama.cpp crashed (segmentation fault) evaluating one token; "
        "this CPU lists instructions (AMX?) it faults on"
    ]


def test_a_long_step_tells_its_estimate_and_its_end(tmp_path):
    steps = functions("say", "long_step")
    done = bash(steps + '\nlong_step "building x" "4 minutes" true', tmp_path)
    assert done.returncode == 0
    lines = done.stderr.splitlines()
    assert lines[0] == "[install] building x (about 4 minutes)"
    assert re.fullmatch(r"\[install\] building x: done in \d+ s", lines[1])
    failed = bash(steps + '\nlong_step "building y" "1 minute" false || echo rc=$?', tmp_path)
    assert failed.stdout == "rc=1\n"
