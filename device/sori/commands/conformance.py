"""`sori conformance DIR`: run Home Assistant-format intent tests against our matcher."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sori.assemble.understanding import presets_from_config
from sori.commands.options import add_json_option
from sori.core.config import load_config
from sori.core.errors import PackError
from sori.testing.conformance import Failure, load_cases, run_cases
from sori.understanding.intents.loader import load_fixtures


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "conformance",
        help="run Home Assistant-format intent tests",
        description="Run every test file in DIR (HA intents format: `tests:` with sentences, "
        "intent name and slots, plus `_fixtures.yaml`). Prints each failure and ends with "
        "'N passed, M failed'. Exit 1 when any sentence fails.",
    )
    parser.add_argument("dir", metavar="DIR", help="folder with *.yaml tests and _fixtures.yaml")
    parser.add_argument("--config", metavar="F", help="config file (for intents settings)")
    add_json_option(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    if not folder.is_dir():
        raise PackError(f"{folder} is not a folder; pass the folder that holds _fixtures.yaml")
    fixtures = folder / "_fixtures.yaml"
    home = load_fixtures(fixtures) if fixtures.is_file() else None
    config = load_config(args.config)
    presets = presets_from_config(config.intents, home) if home else None
    if presets is None:
        raise PackError(f"{folder}: no _fixtures.yaml; conformance needs the test home")
    cases = load_cases(folder)
    result = run_cases(cases, presets)
    for failure in result.failures:
        print(_format(failure, args.json), flush=True)
    print(f"{result.passed} passed, {len(result.failures)} failed")
    if not cases:
        print(f"sori conformance: no tests found in {folder}", file=sys.stderr)
        return 1
    return 1 if result.failures else 0


def _format(failure: Failure, as_json: bool) -> str:
    if as_json:
        return json.dumps(failure.__dict__, ensure_ascii=False)
    return (
        f"FAIL {failure.file}: {failure.sentence!r}\n"
        f"  expected {failure.expected_intent} {failure.expected_slots}\n"
        f"  got      {failure.got_intent} {failure.got_slots}"
    )
