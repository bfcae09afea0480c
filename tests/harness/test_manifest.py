"""The fixture manifest: a bad one stops with the fixture and field at fault, before any
model loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sori.testing.harness.manifest import ManifestError, check_intents, load_manifest

REPO = Path(__file__).resolve().parents[2]
CLIP = REPO.parent / "shared" / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("CLIP", str(CLIP)), encoding="utf-8")
    return path


def test_the_example_manifest_loads_with_its_augmentations_expanded(shared_dir):
    manifest = load_manifest(REPO / "tests" / "fixtures" / "ko-read.yaml")
    names = [a.name for a in manifest.augmentations]
    assert names[:3] == ["clean", "white 20 dB", "white 10 dB"]
    assert {"babble 10 dB", "gain -12 dB", "speed 1.1", "reverb room"} <= set(names)
    assert all(p.is_file() for f in manifest.fixtures for p in f.audio)
    two = manifest.fixtures[-1]
    assert two.per_utterance and len(two.expect) == 2 and len(two.audio) == 2
    assert manifest.home is not None and manifest.home.name == "_fixtures.yaml"
    assert manifest.fixtures[0].expect[0].max_commit_ms == 100  # from defaults


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (
            "fixtures:\n  - audio: CLIP\n    expect: {intent: HassTurnOn, slot: {}}\n",
            "fixtures[0].expect.slot: unknown field",
        ),
        (
            "fixtures:\n  - audio: CLIP\n    expect: {intent: HassTurnOn}\n"
            "  - audio: nowhere.wav\n    expect: {no_action: true}\n",
            "fixtures[1].audio: no such file",
        ),
        (
            "fixtures:\n  - audio: [CLIP, gone.wav]\n    expect: [{no_action: true}]\n",
            "fixtures[0].audio[1]: no such file",
        ),
        (
            "fixtures:\n  - audio: CLIP\n    expect: [{intent: HassTurnOn}, {max_cer: 2}]\n",
            "fixtures[0].expect[1].max_cer: must be between 0 and 1, got 2.0",
        ),
        ("fixtures:\n  - audio: CLIP\n", "fixtures[0].expect: missing"),
        (
            "fixtures:\n  - audio: CLIP\n    expect: {no_action: true}\n"
            "augment:\n  - {noise: purple, snr_db: 10}\n",
            "augment[0].noise: must be white, pink, brown, hum or babble, got 'purple'",
        ),
        (
            "fixtures:\n  - audio: CLIP\n    expect: {no_action: true}\n"
            "augment:\n  - {noise: white, snr_db: [20, loud]}\n",
            "augment[0].snr_db[1]: must be a number",
        ),
        (
            "fixtures:\n  - audio: CLIP\n    expect: {intent: HassTurnOn, no_action: true}\n",
            "fixtures[0].expect.no_action: contradicts",
        ),
        ("defaults: {home: nohome.yaml}\nfixtures: []\n", "defaults.home: no such file"),
        (
            "fixtures:\n  - audio: CLIP\n    expect: {no_action: true}\n"
            "augment:\n  - {gain_db: 0}\n",
            "augment: 'clean' is listed twice",
        ),
    ],
)
def test_a_bad_manifest_names_the_fixture_and_field(tmp_path, shared_dir, body, where):
    with pytest.raises(ManifestError) as caught:
        load_manifest(write(tmp_path, body))
    assert f"m.yaml: {where}" in str(caught.value)


def test_an_unknown_intent_is_named_with_the_nearest_known_one(tmp_path, shared_dir):
    body = "fixtures:\n  - audio: CLIP\n    expect: [{no_action: true}, {intent: HassTurnOnn}]\n"
    manifest = load_manifest(write(tmp_path, body))
    with pytest.raises(
        ManifestError,
        match=r"fixtures\[0\]\.expect\[1\]\.intent: unknown intent "
        r"'HassTurnOnn'; did you mean HassTurnOn\?",
    ):
        check_intents(manifest, ["HassTurnOn", "HassTurnOff"])


def test_the_command_exits_2_on_a_bad_manifest_without_a_traceback(tmp_path, shared_dir):
    body = "fixtures:\n  - audio: CLIP\n    expect: {intent: HassTurnOnn}\n"
    path = write(tmp_path, body)
    done = subprocess.run(
        [sys.executable, "-m", "sori", "test", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "fixtures[0].expect.intent: unknown intent 'HassTurnOnn'" in done.stderr
    assert "Traceback" not in done.stderr
