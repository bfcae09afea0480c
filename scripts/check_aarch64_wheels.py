"""Which runtime dependencies install on a 64-bit ARM board from a prebuilt wheel, and
which must build from source there.

    .venv/bin/python scripts/check_aarch64_wheels.py [--python-version 3.11] [--json]

For each requirement of pyproject.toml (the runtime dependencies and the device extras),
plus silero-vad (installed with --no-deps by scripts/install.sh), asks PyPI what
`pip download --only-binary=:all: --platform manylinux2014_aarch64 --python-version 3.11
--no-deps` would fetch (a `pip install --dry-run --report`, so nothing large downloads),
once for manylinux2014 alone (glibc 2.17) and once with the newer manylinux tags a
Raspberry Pi OS bookworm (glibc 2.36) or JetPack 6 (Ubuntu 22.04, glibc 2.35) accepts.
Then, for each requirement that has a wheel, a full resolution with its dependencies names
any dependency that has none. Whether the wheels load on a board (shared libraries they
link but do not carry, such as vosk's libatomic.so.1) is what scripts/check_arm64.sh runs.
Needs the registry (pypi.org); ignores pip's local configuration so local mirrors do not
answer for PyPI. Exit 0 when the check ran.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEVICE_EXTRAS = ("audio", "llm", "speech", "denoise", "wyoming")
"""Extras a speaker runs with (not report, test)."""
SPECIAL = ("silero-vad>=5",)
"""Installed by scripts/install.sh outside pyproject (its dependencies would pull torch)."""
OLD = ("manylinux2014_aarch64",)
NEW = OLD + tuple(f"manylinux_2_{v}_aarch64" for v in range(17, 36))
"""Tags a bookworm or JetPack 6 pip accepts (glibc 2.35 and up), newest last: every one,
because pip does not widen a --platform tag to older glibcs (`sori bundle` lists them too)."""
INDEX = "https://pypi.org/simple"
CERT = "/etc/ssl/certs/ca-certificates.crt"


def requirements() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in DEVICE_EXTRAS:
        wanted += [r for r in project["optional-dependencies"][extra] if not r.startswith("sori")]
    unique: dict[str, str] = {}
    for req in [*wanted, *SPECIAL]:
        unique.setdefault(re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0].lower(), req)
    return sorted(unique.values(), key=str.lower)


def resolve(req: str, platforms: tuple[str, ...], python: str, deps: bool) -> dict:
    """What pip would download for `req`: {"files": [...]} or {"error": last error line}."""
    with tempfile.TemporaryDirectory() as target:
        argv = [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--quiet",
                "--ignore-installed", "--only-binary=:all:", "--python-version", python,
                "--implementation", "cp", "--target", target, "--index-url", INDEX,
                "--report", "-"]  # fmt: skip
        if Path(CERT).exists():
            argv += ["--cert", CERT]
        for platform in platforms:
            argv += ["--platform", platform]
        if not deps:
            argv.append("--no-deps")
        done = subprocess.run([*argv, req], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.startswith("ERROR")]
        return {"error": lines[-1] if lines else done.stderr.strip()[-200:]}
    report = json.loads(done.stdout)
    return {"files": [i["download_info"]["url"].rsplit("/", 1)[-1] for i in report["install"]]}


def check(req: str, python: str) -> dict:
    old = resolve(req, OLD, python, deps=False)
    new = resolve(req, NEW, python, deps=False)
    row = {
        "requirement": req,
        "manylinux2014": old.get("files", [None])[0],
        "wheel": new.get("files", [None])[0],
        "error": new.get("error"),
        "dependencies_without_wheel": None,
    }
    if row["wheel"]:
        full = resolve(req, NEW, python, deps=True)
        if "error" in full:
            found = re.search(r"No matching distribution found for (\S+)", full["error"])
            row["dependencies_without_wheel"] = found.group(1) if found else full["error"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python-version", default="3.11", help="target Python (default 3.11)")
    parser.add_argument("--json", action="store_true", help="one JSON object per requirement")
    args = parser.parse_args()
    reqs = requirements()
    print(f"checking {len(reqs)} requirements against {INDEX} ...", file=sys.stderr)
    with ThreadPoolExecutor(4) as pool:
        rows = list(pool.map(lambda r: check(r, args.python_version), reqs))
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print(f"| requirement | aarch64 wheel (py{args.python_version}, glibc <= 2.35) | "
          "some version for manylinux2014 (glibc 2.17) | dependency without wheel |")  # fmt: skip
    print("|---|---|---|---|")
    for row in rows:
        wheel = f"`{row['wheel']}`" if row["wheel"] else "**none: builds from source**"
        old = "yes" if row["manylinux2014"] else "no"
        dep = row["dependencies_without_wheel"] or ""
        print(f"| `{row['requirement']}` | {wheel} | {old} | {dep} |")
    source = [r["requirement"] for r in rows if not r["wheel"]]
    deps = sorted({d for r in rows if (d := r["dependencies_without_wheel"])})
    print(f"\nmust build from source on aarch64: {', '.join(source) or 'none'}")
    print(f"dependencies published only as source: {', '.join(deps) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
