"""Options shared by several subcommands, and the config and home they name."""

from __future__ import annotations

import argparse

from sori.assemble.understanding import home_from_config, presets_from_config
from sori.board import apply_board
from sori.config import Config, load_config
from sori.home import Home
from sori.intents import Presets
from sori.intents.loader import load_fixtures


def add_home_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="F", help="config file (default: see README)")
    parser.add_argument(
        "--fixtures", metavar="F", help="Home Assistant test-fixture YAML with areas and entities"
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per line")


def load_home(args: argparse.Namespace) -> tuple[Config, Home]:
    """Config plus the home it describes, or the fixtures' home when --fixtures is given."""
    config = apply_board(load_config(args.config))  # [board] profile: threads, providers
    home = load_fixtures(args.fixtures) if args.fixtures else home_from_config(config.home)
    return config, home


def load_understanding(args: argparse.Namespace) -> tuple[Config, Presets]:
    config, home = load_home(args)
    return config, presets_from_config(config.intents, home)
