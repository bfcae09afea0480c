"""`sori conformance` and its fixture files: malformed input is refused naming the file and
what is wrong (exit 2), never a traceback."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from sori.core.errors import PackError
from sori.testing.conformance import load_cases
from sori.understanding.intents.loader import load_fixtures

FIXTURES = """\
areas:
  - name: 거실
    id: living_room
entities:
  - name: (거실 조명|거실 불)
    id: light.living_room
    area: living_room
"""


@pytest.mark.parametrize(
    ("tests", "message"),
    [
        ("tests: 5\n", "'tests' must be a list of tests, got int"),
        ("tests: [5]\n", "tests[0] must be a mapping"),
        (
            "tests:\n  - sentences: 거실 불 켜\n    intent: {name: HassTurnOn}\n",
            "tests[0].sentences must be a list of sentences, got text",
        ),
        (
            "tests:\n  - sentences: [거실 불 켜]\n    intent: HassTurnOn\n",
            "tests[0].intent must be a mapping with a 'name'",
        ),
        (
            "tests:\n  - sentences: [거실 불 켜]\n    intent: {name: HassTurnOn, slots: [name]}\n",
            "tests[0].intent.slots must be a mapping of slot name to value, got a list",
        ),
        (
            "tests:\n  - sentences: [거실 불 켜]\n    intent: {name: HassTurnOn, slots: 거실}\n",
            "tests[0].intent.slots must be a mapping of slot name to value, got text",
        ),
        (
            "tests:\n  - sentences: [거실 불 켜]\n"
            "    intent: {name: HassTurnOn, slots: {name: {a: 1}}}\n",
            "tests[0].intent.slots.name must be text or a number",
        ),
        ("tests: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ],
)
def test_malformed_test_files_are_refused_naming_file_and_entry(tmp_path, tests, message):
    (tmp_path / "light.yaml").write_text(tests, encoding="utf-8")
    with pytest.raises(PackError, match=re.escape(message)) as err:
        load_cases(tmp_path)
    assert "light.yaml" in str(err.value)


@pytest.mark.parametrize(
    ("fixtures", "message"),
    [
        ("areas: 5\n", "'areas' must be a list, got int"),
        ("entities: {a: 1}\n", "'entities' must be a list, got dict"),
        ("areas:\n  - {name: '(|||)', id: x}\n", "areas[0].name = '(|||)' names nothing"),
        ("areas:\n  - {name: '(거실|안[방])', id: x}\n", "'안[방]' holds template syntax"),
        ("areas:\n  - {name: 'a|b', id: x}\n", "'a|b' holds template syntax"),
        ("areas:\n  - {name: [거실], id: x}\n", "areas[0].name must be text, got list"),
        (
            "entities:\n  - {name: 불, id: light.x, area: [a]}\n",
            "entities[0].area must be an area id",
        ),
        ("entities:\n  - {name: 불, id: light.x, attributes: 5}\n", "attributes must be a mapping"),
        ("areas: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ],
)
def test_malformed_fixtures_are_refused_naming_file_and_entry(tmp_path, fixtures, message):
    path = tmp_path / "_fixtures.yaml"
    path.write_text(fixtures, encoding="utf-8")
    with pytest.raises(PackError, match=re.escape(message)) as err:
        load_fixtures(path)
    assert "_fixtures.yaml" in str(err.value)


def test_cli_exits_2_without_a_traceback(tmp_path):
    (tmp_path / "_fixtures.yaml").write_text(FIXTURES, encoding="utf-8")
    (tmp_path / "light.yaml").write_text("tests: 5\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "sori", "conformance", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{tmp_path / 'light.yaml'}: 'tests' must be a list" in done.stderr
    (tmp_path / "light.yaml").unlink()
    (tmp_path / "_fixtures.yaml").write_text("areas:\n  - {name: '(|||)', id: x}\n")
    done = subprocess.run(
        [sys.executable, "-m", "sori", "conformance", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "names nothing" in done.stderr
