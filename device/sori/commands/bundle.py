"""`sori bundle --board pi5 -o sori-pi5.tar` and `sori bundle install FILE`: an offline
bundle of wheels, models and config for a board with no network."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sori.commands.options import add_store_options, store_root
from sori.provisioning.board import PROFILES
from sori.provisioning.bundle import InstallOptions, PackOptions, install_bundle, pack
from sori.provisioning.bundle.extract import StepFailed
from sori.provisioning.bundle.pack import DEFAULT_EXTRAS
from sori.provisioning.bundle.unpack import DEFAULT_CONFIG


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "bundle",
        help="pack wheels, models and config for a board; install such a bundle offline",
        description="Pack the sori wheel and its dependencies for a board's platform, the "
        "models of its profile (from the local model store) and its config into one tar "
        "with sha256 checksums; `sori bundle install FILE` installs it on a device with no "
        "network.",
    )
    parser.add_argument("--board", choices=sorted(PROFILES), help="board profile to pack for")
    parser.add_argument("-o", "--output", metavar="FILE", help="the bundle to write (.tar)")
    parser.add_argument(
        "--platform",
        action="append",
        metavar="TAG",
        help="pip platform tag (repeatable; default: the board's)",
    )
    parser.add_argument("--python-version", metavar="X.Y", help="target Python (default: this)")
    parser.add_argument(
        "--extras",
        default=",".join(DEFAULT_EXTRAS),
        help="sori extras to pack, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--wheels-from",
        metavar="DIR",
        help="take every wheel from this wheelhouse, with no index (offline)",
    )
    parser.add_argument("--find-links", metavar="DIR", help="an extra wheelhouse besides PyPI")
    parser.add_argument(
        "--sori-wheel",
        metavar="FILE",
        help="the sori wheel to pack (default: built from this checkout)",
    )
    parser.add_argument(
        "--requirement",
        action="append",
        metavar="REQ",
        help="pack this instead of sori's own requirements (repeatable)",
    )
    parser.add_argument("--no-models", action="store_true", help="pack no models")
    parser.add_argument("--catalog", metavar="F", help="another model catalog")
    parser.add_argument("--json", action="store_true", help="a JSON summary on stdout")
    add_store_options(parser)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    inst = actions.add_parser("install", help="install a bundle offline")
    inst.add_argument("file", metavar="FILE")
    inst.add_argument(
        "--venv",
        metavar="PATH",
        help="venv for the wheels, created when missing (default: this sori's)",
    )
    inst.add_argument(
        "--system-site-packages",
        action="store_true",
        help="a new venv sees the system's packages (JetPack's CUDA builds)",
    )
    inst.add_argument("--config", metavar="F", help=f"config to write (default {DEFAULT_CONFIG})")
    inst.add_argument("--force", action="store_true", help="replace an existing config")
    inst.add_argument("--json", action="store_true", help="a JSON summary on stdout")
    add_store_options(inst)
    return parser


def _say(text: str) -> None:
    print(f"[bundle] {text}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    root = store_root(args)
    if args.action == "install":
        return _install(args, root)
    if not args.board or not args.output:
        print(
            "sori bundle: give --board and -o FILE (or: sori bundle install FILE)", file=sys.stderr
        )
        return 2
    options = PackOptions(
        board=args.board,
        output=Path(args.output),
        platforms=args.platform or [],
        extras=[e for e in args.extras.split(",") if e],
        wheels_from=Path(args.wheels_from) if args.wheels_from else None,
        find_links=Path(args.find_links) if args.find_links else None,
        sori_wheel=Path(args.sori_wheel) if args.sori_wheel else None,
        requirements=args.requirement or [],
        models_dir=None if args.no_models else root,
        catalog=Path(args.catalog) if args.catalog else None,
        **({"python_version": args.python_version} if args.python_version else {}),
    )
    manifest = pack(options, _say)
    summary = {
        "output": str(options.output),
        "board": manifest.board,
        "platforms": manifest.platforms,
        "python_version": manifest.python_version,
        "wheels": manifest.wheels,
        "source_only": [s.__dict__ for s in manifest.source_only],
        "models": [m.name for m in manifest.models],
        "bytes": options.output.stat().st_size,
    }
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print(
            f"{options.output}: {len(manifest.wheels)} wheels, {len(manifest.models)} models, "
            f"config for {manifest.board} ({summary['bytes'] / 1e6:.1f} MB)"
        )
        for item in manifest.source_only:
            print(f"  no wheel: {item.package} (the device builds it: {item.build})")
    return 0


def _install(args: argparse.Namespace, root: Path) -> int:
    venv = (
        Path(args.venv)
        if args.venv
        else Path(sys.prefix)
        if sys.prefix != sys.base_prefix
        else None
    )
    if venv is None:
        print(
            "sori bundle install: sori is not running in a venv; give --venv PATH", file=sys.stderr
        )
        return 2
    options = InstallOptions(
        bundle=Path(args.file),
        venv=venv,
        models_dir=root,
        config=Path(args.config) if args.config else DEFAULT_CONFIG,
        force=args.force,
        system_site_packages=args.system_site_packages,
    )
    try:
        summary = install_bundle(options, _say)
    except StepFailed as exc:
        print(f"sori bundle install: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print(
            f"installed {len(summary['wheels'])} wheels into {venv}, "
            f"{len(summary['models'])} models into {root}; config "
            f"{'written to' if summary['config']['written'] else 'kept at'} "
            f"{summary['config']['path']}"
        )
    return 0
