"""scripts/install.sh's own steps, run by bash: the CPU probe's crash is one line of ours,
a long step says what it does, about how long it takes, and when it is done, and --dry-run
prints the packages each machine gets (aarch64 with and without the llama.cpp build)."""

from __future__ import annotations

import re
import subprocess
import tomllib
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


def run_install(tmp_path: Path, *args: str, arch: str) -> subprocess.CompletedProcess:
    """install.sh from a copy of it in an empty tree, SORI_ARCH=arch, with apt-get, sudo,
    pip and python3 on PATH replaced by stubs that record any call in tmp_path/calls."""
    (tmp_path / "scripts").mkdir(exist_ok=True)
    (tmp_path / "scripts" / "install.sh").write_text(INSTALL.read_text())
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    for name in ("apt-get", "sudo", "pip", "python3", "dpkg-query", "nvcc"):
        stub = stubs / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> "{tmp_path}/calls"\n')
        stub.chmod(0o755)
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "SORI_ARCH": arch, "HOME": str(tmp_path)}
    return subprocess.run(
        ["bash", "scripts/install.sh", *args], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def dry_run(tmp_path: Path, *args: str, arch: str = "aarch64") -> subprocess.CompletedProcess:
    """install.sh --dry-run (which calls none of the stubs)."""
    return run_install(tmp_path, "--dry-run", *args, arch=arch)


def plan(done: subprocess.CompletedProcess) -> dict[str, str]:
    assert done.returncode == 0, done.stderr
    return dict(line.split(": ", 1) for line in done.stdout.splitlines())


def extra_requirements(extras: str) -> set[str]:
    """The requirement names pip installs for `.[extras]`, sori[...] references followed."""
    optional = tomllib.loads((INSTALL.parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names, todo, seen = set(), extras.split(","), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for req in optional[extra]:  # a KeyError names an extra pyproject lacks
            name = re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0].lower()
            if name == "sori":
                todo += re.search(r"\[(.*)\]", req)[1].split(",")
            else:
                names.add(name)
    return names


def test_the_aarch64_plan_builds_llama_cpp_with_a_compiler(tmp_path):
    found = plan(dry_run(tmp_path))
    assert found["arch"] == "aarch64"
    apt = found["apt"].split()
    assert {"libportaudio2", "libsndfile1", "espeak-ng", "alsa-utils", "python3-venv",
            "libatomic1", "build-essential", "cmake", "python3-dev"} <= set(apt)  # fmt: skip
    assert found["pip"] == "-e .[all]"
    assert "llama-cpp-python" in extra_requirements("all")
    assert found["llama-cpp-python"].startswith("builds from source for this CPU")
    assert "-DGGML_NATIVE=ON" in found["llama-cpp-python"]
    assert not (tmp_path / "calls").exists() and not (tmp_path / ".venv").exists()


def test_the_aarch64_plan_without_llm_needs_no_compiler(tmp_path):
    found = plan(dry_run(tmp_path, "--no-llm"))
    apt = set(found["apt"].split())
    assert {"libatomic1", "python3-venv", "espeak-ng"} <= apt
    assert not apt & {"build-essential", "cmake", "python3-dev", "gcc"}
    extras = re.fullmatch(r"-e \.\[(.*)\]", found["pip"])[1]
    wanted = extra_requirements(extras)
    assert "llama-cpp-python" not in wanted
    # everything else a speaker uses: hearing, speaking, acting, the edge client, Wyoming
    assert {"vosk", "onnxruntime", "sherpa-onnx", "piper-tts", "httpx", "wyoming"} <= wanted
    assert found["llama-cpp-python"].startswith("skipped")
    assert found["pip --no-deps"] == "silero-vad>=5 pyrnnoise>=0.4"
    # the same extras as .[all] but llm: an extra added to `all` must be added here too
    optional = tomllib.loads((INSTALL.parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    (everything,) = optional["all"]
    assert set(extras.split(",")) | {"llm"} == set(re.search(r"\[(.*)\]", everything)[1].split(","))
    assert not (tmp_path / "calls").exists()


def test_the_x86_plan_and_the_test_packages(tmp_path):
    found = plan(dry_run(tmp_path, "--test", arch="x86_64"))
    apt = found["apt"].split()
    assert {"mosquitto", "sox", "chromium", "fonts-noto-cjk", "ffmpeg"} <= set(apt)
    assert not {"libatomic1", "build-essential", "cmake"} & set(apt)
    assert found["pip"] == "-e .[test]"
    assert found["llama-cpp-python"].startswith("from PyPI")
    arm = plan(dry_run(tmp_path, "--test"))
    assert "ffmpeg" in arm["apt"].split() and "build-essential" in arm["apt"].split()


def test_bad_options_install_nothing(tmp_path):
    both = dry_run(tmp_path, "--test", "--no-llm")
    assert both.returncode == 2 and "--test needs llama-cpp-python" in both.stderr
    unknown = dry_run(tmp_path, "--fast")
    assert unknown.returncode == 2 and "unknown option --fast" in unknown.stderr
    odd = dry_run(tmp_path, arch="riscv64")
    assert odd.returncode == 2 and "unsupported machine riscv64" in odd.stderr
    other = run_install(tmp_path, "--no-llm", arch="aarch64")  # a plan, never an install
    assert other.returncode == 2 and "SORI_ARCH plans with --dry-run only" in other.stderr
    assert not (tmp_path / "calls").exists()
