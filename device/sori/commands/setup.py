"""`sori setup`: prepare this machine for `sori run`: a commented sori.toml and the HTTP
API token.

    sori setup                                   # asks a few questions on a terminal
    sori setup --area 거실 --ha-url http://homeassistant.local:8123 --non-interactive
    sori setup --token-file /etc/sori/api-token  # only the token, as before
    sori setup --array respeaker-usb-4mic        # hear through a microphone array

A ReSpeaker array plugged in is found by its sound card's name (asked about on a
terminal; taken as it is otherwise, unless its name could be another board's) and
written with its device, its channels and its geometry; `--array none` keeps one
microphone.

The config goes to `-o PATH` (default ~/.config/sori/sori.toml, where every command finds
it); an existing one is kept unless --force. It is loaded back before it is written, and
the command prints what to run next. With only --token-file (no config flag) setup makes
the token alone and prints the `[http]` lines and a curl example.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sori.core.config import Config
from sori.core.config.edit import replace_config
from sori.core.config.sections import ARRAY_BOARDS
from sori.core.config.starter import Answers, starter_toml
from sori.core.errors import ConfigError
from sori.serving.api_access import DEFAULT_TOKEN_FILE, write_token

if TYPE_CHECKING:
    from sori.hearing.audio.array import BoardFound

DEFAULT_CONFIG_FILE = "~/.config/sori/sori.toml"
CONFIG_FLAGS = (
    "output", "area", "ha_url", "ha_token_env", "mqtt_url", "wake", "across_room", "array",
    "arbitrate",
)  # fmt: skip


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "setup",
        help="prepare this machine for 'sori run': write sori.toml and the HTTP API token",
        description="Write a starter sori.toml (the room, Home Assistant, the MQTT broker, "
        "the wake phrase, how far away people talk to it, a ReSpeaker array plugged in: "
        "asked for, or taken from the flags) and generate an API token for the HTTP API "
        "into a file only you can read "
        "(mode 0600); with only --token-file, "
        "just the token, with the [http] config lines and a curl example. The daemon "
        "requires 'Authorization: Bearer TOKEN' on POST /say, and on everything but /health "
        "when bound beyond loopback; 'sori run' makes this file itself when no token is "
        "configured.",
    )
    parser.add_argument(
        "--token-file", metavar="PATH",
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
    parser.add_argument(
        "-o", "--output", metavar="PATH",
        help=f"where to write sori.toml (default {DEFAULT_CONFIG_FILE})",
    )  # fmt: skip
    parser.add_argument("--area", metavar="NAME", help="the room the speaker stands in (거실)")
    parser.add_argument("--ha-url", metavar="URL", help="Home Assistant (http://HOST:8123)")
    parser.add_argument(
        "--ha-token-env", metavar="VAR",
        help="environment variable with HA's long-lived access token (default SORI_HA_TOKEN)",
    )  # fmt: skip
    parser.add_argument("--mqtt-url", metavar="URL", help="MQTT broker (mqtt://HOST:1883)")
    parser.add_argument(
        "--wake", action="append", metavar="PHRASE", help="a wake phrase (소리야); repeatable"
    )
    parser.add_argument(
        "--across-room", action=argparse.BooleanOptionalAction,
        help="people talk to it from a step (0.7 m) away or more, as to any speaker in a "
        'room: take out the room\'s late echoes (audio.dereverb = "spectral"; the default). '
        "--no-across-room for a microphone spoken into from close by",
    )  # fmt: skip
    parser.add_argument(
        "--arbitrate", action=argparse.BooleanOptionalAction,
        help="another Sori speaker in the home shares the MQTT broker: only the one that "
        "heard the wake phrase clearest answers (wake.arbitrate; needs --mqtt-url)",
    )  # fmt: skip
    parser.add_argument(
        "--array", choices=(*ARRAY_BOARDS, "none"), metavar="BOARD",
        help="the microphone array it hears through: " + ", ".join(ARRAY_BOARDS)
        + "; 'none' for one microphone (default: the one found plugged in, if any)",
    )  # fmt: skip
    return parser


def run(args: argparse.Namespace) -> int:
    token_only = args.token_file is not None and not any(
        getattr(args, name) not in (None, []) for name in CONFIG_FLAGS
    )
    if token_only:
        return make_token(args)
    return write_config(args)


def write_config(args: argparse.Namespace) -> int:
    """sori.toml from the flags (and questions on a terminal), checked, then written."""
    target = Path(args.output or DEFAULT_CONFIG_FILE).expanduser().absolute()
    if target.exists() and not args.force:
        raise ConfigError(f"{target} exists; pass --force to replace it, or -o another path")
    from sori.hearing.audio.array import boards_plugged_in

    found = boards_plugged_in() or []
    if not args.non_interactive and sys.stdin.isatty():
        ask(args, found)
    array, notes = choose_array(args.array, found)
    for flag, url, schemes in (
        ("--ha-url", args.ha_url, ("http://", "https://")),
        ("--mqtt-url", args.mqtt_url, ("mqtt://", "mqtts://")),
    ):
        if url and not url.startswith(schemes):
            raise ConfigError(f"{flag} {url!r} must start with {' or '.join(schemes)}")
    if args.arbitrate and not args.mqtt_url:
        raise ConfigError(
            "--arbitrate needs --mqtt-url: the speakers tell each other over the broker they share"
        )
    token = Path(args.token_file or DEFAULT_TOKEN_FILE).expanduser().absolute()
    if not token.exists() or args.force:
        try:
            write_token(token, args.force)
        except OSError as exc:
            raise ConfigError(f"cannot write {token}: {exc.strerror or exc}") from None
    answers = Answers(
        area=(args.area or "").strip(),
        ha_url=(args.ha_url or "").rstrip("/"),
        ha_token_env=args.ha_token_env or "SORI_HA_TOKEN",
        mqtt_url=args.mqtt_url or "",
        wake=[w.strip() for w in args.wake or [] if w.strip()],
        token_file=str(token),
        across_room=args.across_room is not False,
        arbitrate=bool(args.arbitrate),
        array=array.board if array else "",
        array_channels=array.channels if array else 0,
        array_device=array.device if array else "",
    )
    wake_section = "wake" in {f.name for f in dataclasses.fields(Config)}
    text = starter_toml(answers, datetime.date.today().isoformat(), wake_section)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot write {target}: {exc.strerror or exc}") from None
    replace_config(target, text)  # refuses what won't load; 0600 with a password in it
    config_flag = "" if args.output is None else f" --config {target}"
    steps = [f'sori intent{config_flag} "불 켜줘"']
    if answers.ha_url and not os.environ.get(answers.ha_token_env):
        steps.insert(0, f"export {answers.ha_token_env}=<HA long-lived access token>")
    steps.append(f"sori run{config_flag}")
    if args.json:
        record = {
            "config": str(target), "token_file": str(token), "next": steps,
            "array": dataclasses.asdict(array) if array else None, "notes": notes,
        }  # fmt: skip
        print(json.dumps(record, ensure_ascii=False))
        return 0
    print(f"# wrote {target} (it loads: checked)")
    for note in notes:
        print(f"# {note}")
    if answers.wake and not wake_section:
        print("# the wake phrases are written commented out: this Sori has no [wake] section")
    print("# next:")
    for step in steps:
        print(step)
    return 0


def ask(args: argparse.Namespace, found: list[BoardFound]) -> None:
    """Fill what the flags left out from a few questions (Enter keeps the default); an
    array `found` plugged in is asked about."""

    def question(prompt: str, default: str = "") -> str:
        shown = f" [{default}]" if default else ""
        try:
            return input(f"{prompt}{shown}: ").strip() or default
        except EOFError:
            return default

    if args.area is None:
        args.area = question("Which room is the speaker in (e.g. 거실)", "거실")
    if args.ha_url is None:
        args.ha_url = question("Home Assistant URL (Enter for none)")
    if args.ha_url and args.ha_token_env is None:
        args.ha_token_env = question("Environment variable with its token", "SORI_HA_TOKEN")
    if args.mqtt_url is None:
        args.mqtt_url = question("MQTT broker URL (Enter for none)")
    if args.mqtt_url and args.arbitrate is None:
        other = question("Is another Sori speaker in this home on that broker (y/N)", "n")
        args.arbitrate = other.lower().startswith("y")
    if not args.wake:
        wake = question("Wake phrase", "소리야")
        args.wake = [wake] if wake else []
    if args.across_room is None:
        far = question("Will people talk to it from a step away or more (Y/n)", "y")
        args.across_room = not far.lower().startswith("n")
    if args.array is None and found:
        board = found[0]
        if board.unsure:
            print(f"({board.device}: {board.unsure})")
        use = question(f"Hear through the {board.board} ({board.device}) (Y/n)", "y")
        args.array = board.board if not use.lower().startswith("n") else "none"


def choose_array(asked: str | None, found: list[BoardFound]) -> tuple[BoardFound | None, list[str]]:
    """The array to hear through: the one `--array` (or the question) names, with its
    device when it is plugged in; else the one found, unless its name could be another
    board's. And notes for the person running setup."""
    from sori.hearing.audio.array import BoardFound, driver_channels

    if asked == "none":
        return None, []
    if asked:
        for board in found:
            if board.board == asked:
                return board, []
        note = f"no {asked} is plugged in: set audio.device in the config once it is"
        return BoardFound(asked, driver_channels(asked), ""), [note]
    if not found:
        return None, []
    board = found[0]
    if board.unsure:
        return None, [
            f"found {board.device}, which may be the {board.board}: {board.unsure}; "
            f"run again with --array {board.board} --force if it is"
        ]
    return board, [f"hears through the {board.board} found ({board.device}); --array none "
                   "for one microphone"]  # fmt: skip


def make_token(args: argparse.Namespace) -> int:
    """Only the HTTP API token, and the [http] lines and a curl example to use it."""
    path = Path(args.token_file or DEFAULT_TOKEN_FILE).expanduser().absolute()
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
