"""Options shared by several subcommands, and the config and home they name."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from sori.assemble.home_source import with_home_source
from sori.assemble.understanding import home_from_config, presets_from_config
from sori.core.config import FIRST_RUN_NOTE, Config, find_config, first_run_config, load_config
from sori.core.home import Home
from sori.provisioning.board import apply_board
from sori.provisioning.models import default_models_dir
from sori.provisioning.models.store import SERVICE_DIR
from sori.understanding.intents import Presets
from sori.understanding.intents.loader import load_fixtures


def add_home_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="F", help="config file (default: see README)")
    parser.add_argument(
        "--fixtures", metavar="F", help="Home Assistant test-fixture YAML with areas and entities"
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per line")


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """--dir or --system: which model store a command reads or writes."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--dir",
        metavar="DIR",
        help="model store (default: $SORI_MODELS_DIR or ~/.local/share/sori/models)",
    )
    where.add_argument("--system", action="store_true", help=f"the service's {SERVICE_DIR}")


def store_root(args: argparse.Namespace) -> Path:
    """The model store that add_store_options' flags name: --dir, --system, or the user's."""
    if args.dir:
        return Path(args.dir).expanduser()
    return SERVICE_DIR if args.system else default_models_dir()


def load_home(args: argparse.Namespace) -> tuple[Config, Home]:
    """Config plus the home it describes, or the fixtures' home when --fixtures is given.

    With no config file anywhere (a fresh install) the example home stands in, in the dry
    run, and the command says so once on stderr."""
    if args.config is None and not args.fixtures and find_config() is None:
        config = apply_board(first_run_config())
        _note_first_run()
    else:
        config = with_home_source(apply_board(load_config(args.config)))
    home = load_fixtures(args.fixtures) if args.fixtures else home_from_config(config.home)
    return config, home


def load_understanding(args: argparse.Namespace) -> tuple[Config, Presets]:
    config, home = load_home(args)
    return config, presets_from_config(config.intents, home)


@functools.cache
def _note_first_run() -> None:
    """Say FIRST_RUN_NOTE once per process (a reload loads the home again)."""
    print(f"sori: {FIRST_RUN_NOTE}", file=sys.stderr)
