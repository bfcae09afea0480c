"""`sori home import`: the home as Home Assistant knows it, as sori.toml's [home] section.

    export SORI_HA_TOKEN=...   # a long-lived access token (HA: your profile > Security)
    sori home import --ha-url http://homeassistant.local:8123 -o home.toml

Reads areas, floors, devices, the entities exposed to Assist and their aliases over HA's
websocket API; names stay as HA has them. Exit 2, nothing written, when HA cannot be
reached, refuses the token, redirects elsewhere (the token is never sent there), does not
answer within --timeout-s in all, or answers in shapes or with names (control characters)
it does not take. An existing FILE is replaced whole or not at all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from sori.core.config import parse_config, parse_toml
from sori.core.errors import ConfigError
from sori.core.files import replace_file
from sori.provisioning.ha_import import fetch_registries, home_tables, home_toml

MAX_TIMEOUT_S = 300
"""Longest --timeout-s: home.source_timeout_s allows as much."""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "home",
        help="the home's areas and devices: 'sori home import' reads them from Home Assistant",
        description="Work with the [home] section of sori.toml.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    imp = actions.add_parser(
        "import",
        help="write [home] from Home Assistant's areas, devices and entities exposed to Assist",
        description="Read Home Assistant's area, floor, device and entity registries and the "
        "entities exposed to Assist over its websocket API, and write sori.toml's [home] "
        'section (to stdout, or -o FILE). [home] source = "home_assistant" reads them at '
        "every start instead.",
    )
    imp.add_argument("--ha-url", required=True, metavar="URL", help="http://HOST:8123")
    imp.add_argument(
        "--token-env", default="SORI_HA_TOKEN", metavar="VAR",
        help="environment variable with a long-lived access token (default SORI_HA_TOKEN)",
    )  # fmt: skip
    imp.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    imp.add_argument("--force", action="store_true", help="replace an existing FILE")
    imp.add_argument(
        "--timeout-s", type=float, default=10.0, metavar="S",
        help="longest wait for Home Assistant, all steps together (default 10)",
    )  # fmt: skip
    imp.add_argument("--json", action="store_true", help="print the tables as one JSON object")
    return parser


def run(args: argparse.Namespace) -> int:
    if not 0 < args.timeout_s <= MAX_TIMEOUT_S:  # nan too
        raise ConfigError(
            f"--timeout-s must be above 0 and at most {MAX_TIMEOUT_S}, got {args.timeout_s}"
        )
    token = os.environ.get(args.token_env, "")
    if not token:
        raise ConfigError(
            f"${args.token_env} is empty: export a long-lived access token (HA: your profile "
            "> Security > Long-lived access tokens), or name another variable with --token-env"
        )
    target = Path(args.output).expanduser() if args.output else None
    if target is not None and target.exists() and not args.force:
        raise ConfigError(f"{target} exists; pass --force to replace it, or -o another file")
    tables = home_tables(asyncio.run(fetch_registries(args.ha_url, token, args.timeout_s)))
    text = home_toml(tables, args.ha_url)
    parse_config(parse_toml(text, "imported [home]"), source="imported [home]")  # it loads
    if args.json:
        print(json.dumps(tables, ensure_ascii=False))
    elif target is None:
        sys.stdout.write(text)
    if target is not None:
        try:
            replace_file(target, text)
        except OSError as exc:
            raise ConfigError(f"cannot write {target}: {exc.strerror or exc}") from None
        print(
            f"# wrote {target}: {len(tables['areas'])} areas, {len(tables['devices'])} "
            "devices; paste it into sori.toml (set [home] area)",
            file=sys.stderr,
        )
    return 0
