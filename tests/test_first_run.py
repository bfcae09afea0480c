"""A fresh install: no sori.toml anywhere, an empty HOME, and every `sori ...` command the
README and the pages of docs/ show in their code blocks, run verbatim.

Which README commands run (the rule, applied by `readme_commands`):
- a line of a fenced code block that starts with `sori `, `$ sori ` or `.venv/bin/sori `,
  or pipes `echo ...` into `sori`; output lines such as `sori run: sori.toml: ...` are not
  commands (the word after `sori` is not a subcommand);
- left out: commands that need hardware (`sori run` with the microphone, `arecord | ...`),
  a daemon that serves until stopped (`sori run --input none`), a file the reader is meant
  to bring (a path argument that does not exist beside the README: `command.wav`,
  `sori.toml`), `sori setup` (it writes the config every other command would then read),
  and `sori ask` with text no preset understands (it loads the local model,
  ~20 s a command on two cores; tests/llm covers that path).
Paths are as printed: the temp cwd has `device/` and `../shared/` as the repository has.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SUBCOMMANDS = (
    "demo",
    "intent",
    "phrases",
    "conformance",
    "replay",
    "ask",
    "run",
    "setup",
    "home",
)
NOTE = "no sori.toml; using the example home, run `sori setup`"


def readme_commands() -> list[str]:
    """`sori` command lines of the README's and the docs' code blocks that a fresh install
    can run, each once."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    found = []
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, re.S):
        for raw in block.splitlines():
            line = raw.strip().removeprefix("$ ")
            line = re.sub(r"^bash scripts/install\.sh && \.venv/bin/", "", line)
            line = re.sub(r"\s+#.*$", "", line)  # a trailing comment
            if not re.match(rf"^(echo .*\| )?sori ({'|'.join(SUBCOMMANDS)})(\s|$)", line):
                continue
            if runnable(line) and line not in found:
                found.append(line)
    return found


def runnable(line: str) -> bool:
    words = shlex.split(line.split("| ")[-1])
    if words[1] == "setup":
        return False
    if words[1] == "run" and "--input" in words:
        source = words[words.index("--input") + 1]
        if source in ("mic", "none") or not (REPO / source).exists():
            return False
    if words[1] == "run" and "--input" not in words:
        return False  # the microphone
    if words[1] == "ask" and "거실 불 켜" not in line:
        return False  # the local model answers: slow here, covered in tests/llm
    for option in ("--config", "--fixtures"):
        if option in words and not (REPO / words[words.index(option) + 1]).exists():
            return False
    if words[1] in ("replay", "conformance"):
        paths = [w for w in words[2:] if not w.startswith("-") and w not in ("s16le", "8000")]
        if not paths or not all((REPO / p).exists() for p in paths):
            return False
    return True


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """An empty HOME, a cwd laid out like the repository, and `sori` on PATH."""
    root = tmp_path_factory.mktemp("fresh")
    cwd, home, bin_ = root / "sori", root / "home", root / "bin"
    for folder in (cwd, home, bin_):
        folder.mkdir()
    (cwd / "device").symlink_to(REPO / "device")
    (root / "shared").symlink_to(SHARED)
    shim = bin_ / "sori"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m sori "$@"\n')
    shim.chmod(0o755)
    env = {
        **{k: v for k, v in os.environ.items() if k != "SORI_CONFIG"},
        "HOME": str(home),
        "PATH": f"{bin_}:{os.environ['PATH']}",
        "PYTHONPATH": str(REPO / "device"),
    }
    return cwd, env


def run_all(lines: list[str], cwd: Path, env: dict[str, str]) -> dict[str, tuple[int, str, str]]:
    """Run the lines at once (models load in parallel), each with bash as printed."""
    procs = {
        line: subprocess.Popen(
            ["bash", "-c", line],
            cwd=cwd,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for line in lines
    }
    results = {}
    for line, proc in procs.items():
        out, err = proc.communicate(timeout=240)
        results[line] = (proc.returncode, out, err)
    return results


def test_the_rule_keeps_the_readme_commands_that_matter() -> None:
    lines = readme_commands()
    assert 'echo "켜줘 거실 불" | sori intent --json' in lines
    assert "sori demo" in lines
    assert not any(line.startswith("sori run") and "none" in line for line in lines)
    assert not any("sori.toml" in line.split() for line in lines)


def test_every_readme_command_works_on_a_fresh_install(fresh) -> None:
    cwd, env = fresh
    conformance = "sori conformance ../shared/conformance/ha-intents-ko"  # beside the repo
    lines = [
        *readme_commands(),
        'sori intent "거실 불 켜줘"',
        'sori intent --json "불 켜줘"',
        conformance,
    ]
    results = run_all(lines, cwd, env)
    for line, (code, out, err) in results.items():
        assert code == 0, f"{line}: exit {code}\n{err}"
        assert "Traceback" not in err, f"{line}:\n{err}"
        assert out.strip(), f"{line}: printed nothing"
    # The note comes once, from the commands that read the home.
    _, _, err = results['sori intent "거실 불 켜줘"']
    assert err.count(NOTE) == 1
    # The README's own example: the example home is there, so it is understood.
    answer = json.loads(results['echo "켜줘 거실 불" | sori intent --json'][1])
    assert answer["intent"] == "HassTurnOn" and answer["slots"]["name"] == "거실 조명"
    assert "HassTurnOn" in results['sori intent "거실 불 켜줘"'][1]
    # The example home's room is the default area: "불 켜줘" is the living room's lights.
    lights = json.loads(results['sori intent --json "불 켜줘"'][1])
    assert lights["slots"].get("area") == "거실"
    assert "HassTurnOn" in results["sori demo"][1]
    assert "passed" in results[conformance][1]


def test_a_config_file_silences_the_note(fresh, tmp_path: Path) -> None:
    _, env = fresh
    (tmp_path / "sori.toml").write_text('[intents]\nlanguage = "ko"\n', encoding="utf-8")
    done = subprocess.run(
        ["sori", "intent", "거실 불 켜줘"], cwd=tmp_path, env=env, text=True,
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0
    assert NOTE not in done.stderr
    assert "(no match)" in done.stdout  # its own (empty) home, not the example's
