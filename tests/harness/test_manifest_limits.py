"""Hostile manifests: every number is finite and in range (the config's own check), a
wrong type, deep nesting, a huge number or an alias bomb gives one ManifestError line,
never a traceback, a hang or gigabytes; and so does whatever YAML hypothesis writes."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sori.testing.harness import manifest as manifest_module
from sori.testing.harness.manifest import (
    MAX_BYTES,
    MAX_DEPTH,
    Manifest,
    ManifestError,
    load_manifest,
)
from sori.testing.harness.record import append_fixture

CLIP = "clip.wav"
"""A file beside the manifest: loading only checks that the audio exists."""
ONE = f"fixtures:\n  - audio: {CLIP}\n    expect: {{no_action: true}}\n"


def write(folder: Path, text: str) -> Path:
    (folder / CLIP).write_bytes(b"")
    path = folder / "m.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def bomb(levels: int) -> str:
    """Billion laughs: each level a list of nine aliases of the level below, 9**levels
    strings once expanded, written in a few hundred bytes. It stands in the fixture's
    name, which is read after its audio and expectation."""
    anchors = ["&l0 [x, x, x, x, x, x, x, x, x]"]
    anchors += [f"&l{k} [{', '.join([f'*l{k - 1}'] * 9)}]" for k in range(1, levels)]
    return f"{ONE}    name: [{', '.join(anchors)}]\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            ONE + "augment:\n  - {speed: .nan}\n",
            "augment[0].speed: must be between 0.5 and 2.0, got nan",
        ),
        (
            ONE + "augment:\n  - {gain_db: .inf}\n",
            "augment[0].gain_db: must be between -60 and 40, got inf",
        ),
        (
            ONE + "augment:\n  - {noise: white, snr_db: [10, -.inf]}\n",
            "augment[0].snr_db[1]: must be between -20 and 80, got -inf",
        ),
        (
            "defaults: {max_commit_ms: .nan}\n" + ONE,
            "defaults.max_commit_ms: must be at least 0, got nan",
        ),
        (
            "defaults: {gap_s: 1" + "0" * 400 + "}\n" + ONE,  # too big for a float
            "defaults.gap_s: must be between 0 and 30, got inf",
        ),
        (
            ONE + "tolerances: {p95_commit_ms_rise: 0x" + "f" * 4000 + "}\n",
            "tolerances.p95_commit_ms_rise: must be at least 0, got inf",
        ),
        (
            ONE + "augment:\n  - {speed: " + "1" * 5000 + "}\n",
            "line 5, column 13: an int of 5000 characters ('1111111111…') cannot be read",
        ),
        (
            ONE + "augment:\n  - {reverb: [room]}\n",
            "augment[0].reverb: must be room or hall, got a list",
        ),
        (
            ONE + "augment:\n  - {noise: {white: 1}, snr_db: 10}\n",
            "augment[0].noise: must be white, pink, brown, hum or babble, got a table",
        ),
        (
            f"fixtures:\n  - audio: {CLIP}\n    expect: {{no_action: true, tier: [a]}}\n",
            "fixtures[0].expect.tier: must be preset, local, edge or none, got a list",
        ),
        ("[" * 5000 + "]" * 5000 + "\n", f"line 1, column 17: nested more than {MAX_DEPTH} deep"),
        (
            "a:\n" + "".join(" " * k + "- \n" for k in range(1, 1000)),
            "line 17, column 17: nested more than",
        ),
        (
            f"fixtures:\n  - audio: {'a' * 5000}.wav\n    expect: {{no_action: true}}\n",
            "fixtures[0].audio: cannot use",
        ),
        (
            ONE + "tolerances: !!timestamp 2024-13-45\n",
            "line 4, column 13: a timestamp ('2024-13-45') cannot be read",
        ),
        (
            ONE + "augment:\n  - {speed: !!float fast}\n",
            "line 5, column 13: a float ('fast') cannot be read",
        ),
        (
            ONE + "augment: &a [{speed: 1.5}]\ntolerances: *a\n",
            "line 5, column 13: aliases (*a) are not allowed",
        ),
        (bomb(9), "line 4, column 50: aliases (*l0) are not allowed"),
        (ONE + 'name: "\\U11111111"\n', "line 4, column 10: an escape names no character"),
        (ONE + "name: \x1b[31m\n", "line 4: character U+001B is not allowed in YAML; remove it"),
    ],
)
def test_a_hostile_manifest_is_one_clear_error(tmp_path, body, message):
    with pytest.raises(ManifestError) as caught:
        load_manifest(write(tmp_path, body))
    assert f"m.yaml: {message}" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_alias_bomb_is_refused_in_bounded_memory(tmp_path):
    """Seven levels: 4.8 million strings expanded, which the old loader printed into an
    error (about 60 MB); small enough not to hurt the machine if this ever regresses."""
    path = write(tmp_path, bomb(7))
    tracemalloc.start()
    try:
        with pytest.raises(ManifestError, match="aliases"):
            load_manifest(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20


def test_a_manifest_larger_than_the_limit_is_refused_unread(tmp_path):
    path = write(tmp_path, ONE + "# " + "x" * MAX_BYTES + "\n")
    with pytest.raises(ManifestError, match=r"m.yaml: larger than 1 MiB; a manifest"):
        load_manifest(path)


def test_a_manifest_of_too_many_values_is_refused_as_soon_as_it_has_one_more(tmp_path, monkeypatch):
    """However densely written: a flow list of ones packs two bytes to a value."""
    monkeypatch.setattr(manifest_module, "MAX_VALUES", 1000)
    path = write(tmp_path, ONE + "augment: [" + "1," * 2000 + "1]\n")
    with pytest.raises(ManifestError, match=r"m.yaml: line 4, column 1987: more than 1000 values"):
        load_manifest(path)


def test_large_finite_numbers_within_range_still_load(tmp_path):
    manifest = load_manifest(
        write(tmp_path, "defaults: {max_commit_ms: 1.0e+300}\n" + ONE + "augment: [{speed: 2}]\n")
    )
    assert manifest.fixtures[0].expect[0].max_commit_ms == 1e300
    assert manifest.augmentations[1].speed == 2.0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[" * 5000 + "]" * 5000 + "\n", "line 1, column 17: nested more than"),
        (bomb(9), "line 4, column 50: aliases (*l0) are not allowed"),
        ("fixtures: [\n", "line 2, column 1: expected the node content"),
    ],
)
def test_sori_record_reads_the_manifest_it_extends_with_the_same_limits(tmp_path, body, message):
    path = write(tmp_path, body)
    with pytest.raises(ManifestError, match=re.escape(f"m.yaml: {message}")):
        append_fixture(path, "take", b"\0\0" * 1600, {"no_action": True})
    assert path.read_text(encoding="utf-8") == body
    assert not (tmp_path / "clips").exists()


def _limit_memory() -> None:
    """In the child: at most 1 GiB of address space (the command needs 0.2), so a
    regression dies of MemoryError instead of eating the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))


def sori_test(manifest: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sori", "test", str(manifest)],
        capture_output=True,
        text=True,
        timeout=30,  # the bad manifest is refused before any model loads: about 1 s
        preexec_fn=_limit_memory,
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (ONE + "augment:\n  - {speed: .nan}\n", "augment[0].speed: must be between 0.5 and 2.0"),
        (bomb(9), "aliases (*l0) are not allowed; write the value out"),
    ],
)
def test_the_command_refuses_a_hostile_manifest_quickly(tmp_path, body, message):
    done = sori_test(write(tmp_path, body))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


# -- property: whatever the YAML, load_manifest gives a Manifest or a ManifestError --------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from([CLIP, "white", "babble", "room", "preset", "HassTurnOn", "거실 조명"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


def _table(keys: tuple[str, ...]) -> st.SearchStrategy[dict]:
    """A mapping of real field names (and now and then a made-up one) to random values."""
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=4), _values, max_size=5)


_expectations = _table(("intent", "slots", "transcript", "max_cer", "no_action", "tier"))
_fixtures = st.fixed_dictionaries(
    {"audio": st.just(CLIP) | st.lists(st.just(CLIP), max_size=2) | _values},
    optional={"expect": _expectations | st.lists(_expectations, max_size=2), "name": _values},
)
_documents = st.fixed_dictionaries(
    {},
    optional={
        "defaults": _table(("max_commit_ms", "max_cer", "gap_s")) | _values,
        "fixtures": st.lists(_fixtures, max_size=3) | _values,
        "augment": st.lists(_table(("noise", "snr_db", "gain_db", "speed", "reverb")), max_size=3),
        "tolerances": _table(("accuracy_drop", "p95_commit_ms_rise")) | _values,
    },
)
_hostile = st.sampled_from(
    [
        ".nan",
        "-.inf",
        "1" * 5000,
        "0x" + "f" * 4000,
        "&a [1]",
        "*a",
        "!!timestamp 2024-13-45",
        "[" * 100,
        "{",
        "<<: *a",
        "!!binary eA==",
        "? [a]\n: b",
        "\t",
        "\x00",
        "'",
        "- - -",
    ]
)


def _spliced(text: str, at: int, piece: str) -> str:
    cut = at % (len(text) + 1)
    return text[:cut] + piece + text[cut:]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_documents, st.lists(st.tuples(st.integers(0, 10_000), _hostile), max_size=2))
def test_load_manifest_gives_a_manifest_or_a_manifest_error(tmp_path, document, splices):
    text = yaml.safe_dump(document, allow_unicode=True)
    for at, piece in splices:
        text = _spliced(text, at, piece)
    try:
        manifest = load_manifest(write(tmp_path, text))
    except ManifestError as exc:
        assert str(exc).startswith(str(tmp_path / "m.yaml"))
        assert "\n" not in str(exc)
    else:
        assert isinstance(manifest, Manifest)
