"""`sori record`: a new fixture from the microphone (or any audio source), written as a
WAV beside the manifest and appended to it with its expectation, so that a tester builds
a set on a real device in minutes.

The manifest is rewritten through YAML (comments are not kept) and read back with the
same checks as `sori test`; if the new fixture does not pass them, the manifest is put
back as it was and the recording removed.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import yaml

from sori.hearing.audio.format import RATE_HZ, write_wav
from sori.testing.harness.manifest import ManifestError, load_manifest, read_yaml

log = logging.getLogger(__name__)

LABEL = re.compile(r"^[\w.-]+$")
"""A label becomes a file name: letters (any script), digits, '_', '-', '.'."""


def capture(source: Any, seconds: float) -> bytes:
    """Up to `seconds` of pipeline PCM from `source` (a MicSource or a file), then close it."""
    wanted = int(seconds * RATE_HZ) * 2
    pcm = bytearray()
    try:
        for frame in source.frames():
            pcm += frame.pcm
            if len(pcm) >= wanted:
                break
    finally:
        source.close()
    if not pcm:
        raise ManifestError(f"{source.name}: no audio was captured")
    return bytes(pcm[:wanted])


def append_fixture(
    manifest_path: Path, label: str, pcm: bytes, expect: dict[str, Any], clips: str = "clips"
) -> Path:
    """Write `pcm` as `clips/<label>.wav` beside the manifest and append the fixture
    (created if the manifest does not exist); the WAV's path."""
    if not LABEL.match(label):
        raise ManifestError(f"--label {label!r}: use letters, digits, '_', '-' or '.'")
    if not expect:
        raise ManifestError("say what the recording must do: --intent, --transcript or --no-action")
    folder = manifest_path.parent / clips
    wav = folder / f"{label}.wav"
    if wav.exists():
        raise ManifestError(f"{wav} exists; choose another --label")
    before = manifest_path.read_text(encoding="utf-8") if manifest_path.exists() else None
    data = read_yaml(before, manifest_path) if before else {}
    if not isinstance(data, dict):
        raise ManifestError(f"{manifest_path}: not a manifest (a mapping with 'fixtures')")
    fixtures = data.setdefault("fixtures", [])
    if not isinstance(fixtures, list):
        raise ManifestError(f"{manifest_path}: fixtures: must be a list")
    fixtures.append({"name": label, "audio": f"{clips}/{label}.wav", "expect": expect})
    folder.mkdir(parents=True, exist_ok=True)
    write_wav(wav, pcm)
    manifest_path.write_text(
        yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8"
    )
    try:
        load_manifest(manifest_path)
    except ManifestError:
        wav.unlink()
        if before is None:
            manifest_path.unlink()
        else:
            manifest_path.write_text(before, encoding="utf-8")
        raise
    log.info("appended fixture %s to %s", label, manifest_path)
    return wav
