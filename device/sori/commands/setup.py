"""`sori setup`: prepare this machine for `sori run`. For now: the HTTP API token.

    sori setup                              # ~/.config/sori/api-token, mode 0600
    sori setup --token-file /etc/sori/api-token --force --json

It prints the `[http]` lines to add to sori.toml and a curl example. A later step of
setup writes the whole sori.toml; the flags below (--non-interactive, --json) are the
interface it keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
from pathlib import Path

from sori.errors import ConfigError

DEFAULT_TOKEN_FILE = "~/.config/sori/api-token"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "setup",
        help="prepare this machine for 'sori run' (for now: make the HTTP API token)",
        description="Generate an API token for the HTTP API into a file only you can read "
        "(mode 0600) and print the [http] config lines and a curl example. The daemon then "
        "requires 'Authorization: Bearer TOKEN' on POST /say, and on everything but /health "
        "when bound beyond loopback.",
    )
    parser.add_argument(
        "--token-file", default=DEFAULT_TOKEN_FILE, metavar="PATH",
        help=f"where to write the token (default {DEFAULT_TOKEN_FILE})",
    )  # fmt: skip
    parser.add_argument(
        "--force", action="store_true", help="replace an existing token file (a new token)"
    )
    parser.add_argument(
        "--non-interactive", action="store_true", help="never ask; take defaults and flags"
    )
    parser.add_argument(
        "--bind", default="127.0.0.1:8377", metavar="HOST:PORT",
        help="the http.bind to show in the example (default 127.0.0.1:8377)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def write_token(path: Path, force: bool = False) -> str:
    """A new token in `path`, created with mode 0600 (its folder 0700 when made here)."""
    if path.exists() and not force:
        raise ConfigError(f"{path} exists; keep using it, or pass --force for a new token")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(token + "\n")
        os.chmod(temp, 0o600)  # whatever the umask
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return token


def run(args: argparse.Namespace) -> int:
    path = Path(args.token_file).expanduser().absolute()
    try:
        write_token(path, args.force)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    host = args.bind.rpartition(":")[0].strip("[]") or "127.0.0.1"
    base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else args.bind}"
    config = f'[http]\nbind = "{args.bind}"\ntoken_file = "{path}"'
    curl = (
        f'curl -H "Authorization: Bearer $(cat {path})" -H "Content-Type: application/json" '
        f'-d \'{{"text": "거실 불 켜줘"}}\' {base}/say'
    )
    if args.json:
        record = {"token_file": str(path), "config": config, "curl": curl}
        print(json.dumps(record, ensure_ascii=False))
        return 0
    print(f"# wrote a new API token to {path} (mode 0600)")
    print("# add to sori.toml:")
    print(config)
    print("# then, after 'sori run':")
    print(curl)
    return 0
