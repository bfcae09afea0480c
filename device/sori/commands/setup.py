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
from pathlib import Path

from sori.api_access import DEFAULT_TOKEN_FILE, write_token
from sori.errors import ConfigError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "setup",
        help="prepare this machine for 'sori run' (for now: make the HTTP API token)",
        description="Generate an API token for the HTTP API into a file only you can read "
        "(mode 0600) and print the [http] config lines and a curl example. The daemon "
        "requires 'Authorization: Bearer TOKEN' on POST /say, and on everything but /health "
        "when bound beyond loopback; 'sori run' makes this file itself when no token is "
        "configured.",
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
