"""`sori models list|fetch|verify|use`: the model catalog, fetched with checksums.

Models install into ~/.local/share/sori/models ($SORI_MODELS_DIR; --system for the
service's /var/lib/sori/models; --dir for any folder).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sori.commands.options import add_store_options, store_root
from sori.core.config import find_config
from sori.core.config.edit import replace_config, set_keys
from sori.core.errors import ConfigError, ModelError
from sori.provisioning.models import find_entry, installed_path, load_catalog
from sori.provisioning.models.catalog import BOARDS, KINDS
from sori.provisioning.models.fetch import fetch, stderr_progress
from sori.provisioning.models.store import verify


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "models",
        help="list, fetch, verify and use models from the catalog",
        description="The model catalog (speech-to-text, VAD, wake word, voices, LLMs): list "
        "it, fetch models with resume and sha256 checks, verify installs, and point the "
        "config at one.",
    )
    common = argparse.ArgumentParser(add_help=False)
    add_store_options(common)
    common.add_argument("--catalog", metavar="F", help="another catalog.toml")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = actions.add_parser(
        "list", parents=[common], help="the catalog, with what is installed"
    )
    listing.add_argument("--kind", choices=KINDS, help="only this kind")
    listing.add_argument("--board", choices=BOARDS, help="only models that suit this board")
    listing.add_argument("--json", action="store_true", help="one JSON object per model")

    fetching = actions.add_parser("fetch", parents=[common], help="download and install models")
    fetching.add_argument("names", nargs="+", metavar="NAME")
    fetching.add_argument(
        "--allow-unverified",
        action="store_true",
        help="accept a model the catalog has no checksum for",
    )
    fetching.add_argument("--force", action="store_true", help="fetch again when installed")

    verifying = actions.add_parser("verify", parents=[common], help="check installed models")
    verifying.add_argument("names", nargs="*", metavar="NAME", help="default: all installed")
    verifying.add_argument("--json", action="store_true", help="one JSON object per model")

    using = actions.add_parser("use", parents=[common], help="write a model's keys into the config")
    using.add_argument("name", metavar="NAME")
    using.add_argument("--config", metavar="F", help="config file to edit (default: see README)")
    return parser


def run(args: argparse.Namespace) -> int:
    entries = load_catalog(args.catalog)
    root = store_root(args)
    return {"list": _list, "fetch": _fetch, "verify": _verify, "use": _use}[args.action](
        args, entries, root
    )


def _list(args: argparse.Namespace, entries: list, root: Path) -> int:
    for entry in entries:
        if args.kind and entry.kind != args.kind or args.board and args.board not in entry.boards:
            continue
        path = installed_path(root, entry)
        if args.json:
            record = entry.as_dict() | {
                "installed": path is not None,
                "path": str(path) if path else None,
            }
            print(json.dumps(record, ensure_ascii=False))
        else:
            mark = "*" if path else " "
            checked = "" if entry.verified else "  (sha256 unverified)"
            print(
                f"{mark} {entry.kind:<4} {entry.name:<54} {entry.size_mb:>6g} MB "
                f"{'/'.join(entry.languages):<8} {entry.license}{checked}"
            )
    return 0


def _fetch(args: argparse.Namespace, entries: list, root: Path) -> int:
    chosen = [find_entry(entries, name) for name in args.names]  # unknown names: exit 2 first
    for entry in chosen:
        if installed_path(root, entry) and not args.force:
            print(f"{entry.name}: already installed in {root} (--force fetches it again)")
            continue
        progress = stderr_progress(entry.name)
        path, digest = fetch(entry, root, allow_unverified=args.allow_unverified, progress=progress)
        if progress:
            print(file=sys.stderr)
        print(f"{entry.name}: installed at {path}")
        if not entry.sha256:
            print(
                f"{entry.name}: sha256 {digest} (not in the catalog: compare it with the "
                "upstream's before trusting it)",
                file=sys.stderr,
            )
    return 0


def _verify(args: argparse.Namespace, entries: list, root: Path) -> int:
    if args.names:
        chosen = [find_entry(entries, name) for name in args.names]
    else:
        chosen = [e for e in entries if installed_path(root, e)]
    failed = False
    for entry in chosen:
        problems = verify(root, entry)
        failed = failed or bool(problems)
        if args.json:
            print(
                json.dumps(
                    {"name": entry.name, "ok": not problems, "problems": problems},
                    ensure_ascii=False,
                )
            )
        else:
            print(f"{entry.name}: " + ("ok" if not problems else "; ".join(problems)))
    if not chosen and not args.json:
        print(f"no models installed in {root}")
    return 1 if failed else 0


def _use(args: argparse.Namespace, entries: list, root: Path) -> int:
    entry = find_entry(entries, args.name)
    path = installed_path(root, entry)
    if path is None:
        raise ModelError(
            f"{entry.name} is not installed in {root}; run `sori models fetch {entry.name}` first"
        )
    if not entry.config:
        print(
            f"{entry.name}: Sori has no config keys for a {entry.kind} model yet; nothing written"
        )
        return 0
    target = find_config(args.config)
    if target is None:
        raise ConfigError("no config file to edit; give --config FILE or set $SORI_CONFIG")
    # Checked again here, not taken from an earlier `models verify`: files change between.
    problems = verify(root, entry)
    if problems:
        raise ModelError(
            f"config not changed: {'; '.join(problems)}; then `sori models use {entry.name}`"
        )
    values = {k: v.replace("{path}", str(path)) for k, v in entry.config.items()}
    written = replace_config(target, set_keys(target, values))
    for key, value in values.items():
        print(f"{written}: {key} = {json.dumps(value, ensure_ascii=False)}")
    return 0
