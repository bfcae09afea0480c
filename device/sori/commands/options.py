"""Options shared by several subcommands, and the loading they imply."""

from __future__ import annotations

import argparse

from sori.config import Config, HomeConfig, IntentsConfig, load_config
from sori.home import Area, Device, Home
from sori.intents import Presets, load_presets
from sori.intents.loader import load_fixtures


def add_home_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="F", help="config file (default: see README)")
    parser.add_argument(
        "--fixtures", metavar="F", help="Home Assistant test-fixture YAML with areas and entities"
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per line")


def home_from_config(home: HomeConfig) -> Home:
    return Home(
        areas=tuple(Area(a.id, a.name, tuple(a.aliases)) for a in home.areas),
        devices=tuple(
            Device(
                id=d.id,
                name=d.name,
                domain=d.domain or d.id.split(".", 1)[0],
                area=d.area or None,
                aliases=tuple(d.aliases),
                device_class=d.device_class or None,
            )
            for d in home.devices
        ),
        speaker_area=home.area or None,
    )


def load_home(args: argparse.Namespace) -> tuple[Config, Home]:
    """Config plus the home it describes, or the fixtures' home when --fixtures is given."""
    config = load_config(args.config)
    home = load_fixtures(args.fixtures) if args.fixtures else home_from_config(config.home)
    return config, home


def presets_from_config(intents: IntentsConfig, home: Home) -> Presets:
    return load_presets(
        intents.language,
        home,
        extra_packs=intents.packs,
        include_home_assistant=intents.home_assistant,
        fuzzy_threshold=intents.fuzzy_threshold if intents.fuzzy else None,
    )


def load_understanding(args: argparse.Namespace) -> tuple[Config, Presets]:
    config, home = load_home(args)
    return config, presets_from_config(config.intents, home)
