"""`sori doctor`: checks this board (Python, packages, CPU, memory, disk, audio devices,
models, config, MQTT/Home Assistant/edge) and replays a clip to time the pipeline.
Exit 0 when fit, 1 when a check fails (each printed with its fix)."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from pathlib import Path

from sori.core.config import load_config
from sori.core.errors import SoriError
from sori.provisioning import doctor
from sori.provisioning.board import apply_board, this_board


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "doctor",
        help="check that this board is fit to run Sori, and time the pipeline",
        description="Check Python and packages, CPU features, memory, disk, audio devices, "
        "models, the config and the servers it names; then replay a clip through hearing "
        "and print the real-time factor and commit latency. Exit 0 when fit, 1 otherwise.",
    )
    parser.add_argument("--config", metavar="F", help="config file (default: see README)")
    parser.add_argument("--dir", metavar="DIR", help="models folder (default: as sori models)")
    parser.add_argument(
        "--clip",
        metavar="WAV",
        help="a spoken command for the self-test, which passes only when it is heard and "
        "committed (default: the shared Korean clip beside a checkout, else a synthetic one)",
    )
    parser.add_argument("--no-self-test", action="store_true", help="skip the replay")
    parser.add_argument("--json", action="store_true", help="one JSON object per check")
    return parser


def run(args: argparse.Namespace) -> int:
    checks = [
        doctor.check_python(),
        doctor.check_packages(),
        doctor.check_cpu(
            doctor.read_text("/proc/cpuinfo"), platform.machine(), doctor.llama_survives
        ),
        doctor.check_memory(doctor.read_text("/proc/meminfo")),
    ]
    models_dir = doctor.models_dir_for(args.dir)
    checks.append(doctor.check_disk(models_dir))
    checks += doctor.check_audio()
    try:
        config = apply_board(load_config(args.config))
        where = config.source or "embedded defaults"
        detected, chosen = this_board(), config.board.profile
        applied = detected if chosen == "auto" else chosen
        said = f"board profile {applied}" + (
            " (detected)"
            if chosen == "auto"
            else f" (set in the config; this board looks like {detected})"
        )
        checks.append(doctor.Check("config", True, f"{where}; {said}"))
    except SoriError as exc:
        config = None
        checks.append(doctor.Check("config", False, str(exc), "fix the key it names"))
    if config is not None:
        if (array := doctor.check_array(config)) is not None:
            checks.append(array)
        if (echo := doctor.check_echo_path(config)) is not None:
            checks.append(echo)
        checks.append(doctor.check_models(config, models_dir))
        uses = {d.handler for d in getattr(config.home, "devices", [])}
        reachable = doctor.check_reachable(config, uses)
        checks += reachable
        broker_down = any(c.name == "mqtt" and not c.ok for c in reachable)
        if not broker_down and (arbitration := doctor.check_arbitration(config)) is not None:
            checks.append(arbitration)
        if not args.no_self_test:
            checks.append(_self_test(config, args.clip))
    for check in checks:
        if args.json:
            print(json.dumps(check.as_dict(), ensure_ascii=False))
        else:
            mark = "ok  " if check.ok else "FAIL"
            print(f"{mark} {check.name}: {check.detail}")
            if not check.ok:
                print(f"     fix: {check.fix}")
    failed = [c.name for c in checks if not c.ok]
    if failed and not args.json:
        print(f"not fit: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _self_test(config, clip: str | None) -> doctor.Check:
    try:
        if clip:
            return doctor.self_test(config, Path(clip))
        found = doctor.default_clip()
        if found:
            return doctor.self_test(config, found)
        with tempfile.TemporaryDirectory() as tmp:
            return doctor.self_test(config, doctor.synthetic_clip(Path(tmp) / "synthetic.wav"))
    except (SoriError, ImportError) as exc:
        return doctor.Check(
            "self-test",
            False,
            f"could not run: {exc}",
            "pip install 'sori[audio]' and check the stt models",
        )
