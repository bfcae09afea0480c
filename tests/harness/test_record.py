"""`sori record`: a fixture captured and appended to a manifest that `sori test` accepts.

No sound device exists here, so the audio comes from a WAV file through `--input` (the
same capture path as the microphone, which is a frame source like it); the microphone
itself is not exercised."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import yaml

from sori.hearing.audio.format import RATE_HZ
from sori.testing.harness import conditions
from sori.testing.harness.manifest import load_manifest


def record(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sori", "record", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_recording_is_appended_with_its_expectation(tmp_path, shared_dir):
    clip = shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav"
    manifest = tmp_path / "set.yaml"
    done = record(
        "--manifest",
        str(manifest),
        "--label",
        "거실_켜기",
        "--input",
        str(clip),
        "--seconds",
        "2",
        "--intent",
        "HassTurnOn",
        "--slot",
        "area=거실",
    )
    assert done.returncode == 0, done.stderr
    second = record(
        "--manifest",
        str(manifest),
        "--label",
        "story",
        "--input",
        str(clip),
        "--transcript",
        "그는 이리저리 피하면서",
        "--no-action",
    )
    assert second.returncode == 0, second.stderr
    loaded = load_manifest(manifest)
    first, story = loaded.fixtures
    assert first.name == "거실_켜기" and first.expect[0].slots == {"area": "거실"}
    assert story.expect[0].no_action and story.expect[0].transcript == "그는 이리저리 피하면서"
    recorded = conditions.clip(first.audio[0])
    assert len(recorded) == 2 * RATE_HZ  # --seconds 2 of the clip, as it was
    # the same samples (a WAV round trip through float may move one by one step)
    assert np.abs(recorded - conditions.clip(clip)[: 2 * RATE_HZ]).max() <= 1


def test_a_bad_expectation_leaves_the_manifest_as_it_was(tmp_path, shared_dir):
    clip = shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav"
    manifest = tmp_path / "set.yaml"
    manifest.write_text("fixtures:\n  - audio: " + str(clip) + "\n    expect: {no_action: true}\n")
    before = manifest.read_text()
    done = record(
        "--manifest",
        str(manifest),
        "--label",
        "x",
        "--input",
        str(clip),
        "--intent",
        "HassTurnOn",
        "--no-action",
    )
    assert done.returncode == 2
    assert "fixtures[1].expect.no_action: contradicts 'intent'" in done.stderr
    assert manifest.read_text() == before and not (tmp_path / "clips" / "x.wav").exists()
    nothing = record("--manifest", str(manifest), "--label", "y", "--input", str(clip))
    assert nothing.returncode == 2 and "--intent, --transcript or --no-action" in nothing.stderr
    assert len(yaml.safe_load(manifest.read_text())["fixtures"]) == 1


def test_an_array_s_recording_keeps_one_channel_per_microphone(tmp_path, shared_dir):
    """With audio.channels = 4 the fixture is the array's four channels, which `sori
    test` then hears through the array's front end; a one-channel source is refused with
    what to give instead, and nothing is appended."""
    import wave

    from sori.hearing.audio.format import read_file, write_wav

    clip = shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav"
    mono = np.frombuffer(read_file(clip), "<i2")[: 2 * RATE_HZ]
    four = np.stack([mono, mono // 2, mono // 3, mono // 4], axis=1)
    recorded = tmp_path / "array.wav"
    write_wav(recorded, four.astype("<i2").tobytes(), channels=4)
    config = tmp_path / "sori.toml"
    config.write_text('[audio]\nchannels = 4\n\n[audio.array]\ngeometry = "respeaker-4mic-hat"\n')
    manifest = tmp_path / "set.yaml"
    common = ["--manifest", str(manifest), "--config", str(config), "--no-action"]
    done = record(*common, "--label", "room", "--input", str(recorded), "--seconds", "1")
    assert done.returncode == 0, done.stderr
    with wave.open(str(tmp_path / "clips" / "room.wav")) as w:
        assert (w.getnchannels(), w.getnframes()) == (4, RATE_HZ)
        kept = np.frombuffer(w.readframes(RATE_HZ), "<i2").reshape(-1, 4)
    assert np.abs(kept.astype(int) - four[:RATE_HZ]).max() <= 1  # the channels, in order
    refused = record(*common, "--label", "mono", "--input", str(clip))
    assert refused.returncode != 0 and "audio.channels is 4" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert [f.name for f in load_manifest(manifest).fixtures] == ["room"]
