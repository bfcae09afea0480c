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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from sori.hearing.audio.format import RATE_HZ, float_to_s16, write_wav
from sori.testing.harness.manifest import ManifestError, load_manifest, read_yaml

log = logging.getLogger(__name__)

LABEL = re.compile(r"^[\w.-]+$")
"""A label becomes a file name: letters (any script), digits, '_', '-', '.'."""


def capture(source: Any, seconds: float, channels: int = 1) -> bytes:
    """Up to `seconds` of pipeline PCM from `source` (a MicSource or a file), then close
    it. With a microphone array (`channels` > 1): every channel, interleaved, as the
    array recorded it, so that `sori test` hears the fixture through the array's front
    end as the daemon hears the room."""
    wanted = int(seconds * RATE_HZ) * 2 * channels
    pcm = bytearray()
    try:
        for piece in _pieces(source, channels):
            pcm += piece
            if len(pcm) >= wanted:
                break
    finally:
        source.close()
    if not pcm:
        raise ManifestError(f"{source.name}: no audio was captured")
    return bytes(pcm[:wanted])


def _pieces(source: Any, channels: int) -> Iterator[bytes]:
    """`source`'s audio as s16le PCM, `channels` interleaved."""
    if channels == 1:
        yield from (frame.pcm for frame in source.frames())
        return
    for frame in source.channel_frames(channels):  # an AudioError for a wrong count
        yield float_to_s16(frame.samples.reshape(-1))


def check_new_fixture(
    manifest_path: Path, label: str, expect: dict[str, Any], clips: str = "clips"
) -> tuple[dict[str, Any], str | None]:
    """Refuse, before anything is recorded, a fixture that could not be appended: a bad
    label, no expectation, a clip of that name already there, a manifest that is not
    one. The manifest's data (empty when new) and its text as it was (None when new)."""
    if not LABEL.match(label):
        raise ManifestError(f"--label {label!r}: use letters, digits, '_', '-' or '.'")
    if not expect:
        raise ManifestError("say what the recording must do: --intent, --transcript or --no-action")
    wav = manifest_path.parent / clips / f"{label}.wav"
    if wav.exists():
        raise ManifestError(f"{wav} exists; choose another --label")
    before = manifest_path.read_text(encoding="utf-8") if manifest_path.exists() else None
    data = read_yaml(before, manifest_path) if before else {}
    if not isinstance(data, dict):
        raise ManifestError(f"{manifest_path}: not a manifest (a mapping with 'fixtures')")
    if not isinstance(data.setdefault("fixtures", []), list):
        raise ManifestError(f"{manifest_path}: fixtures: must be a list")
    return data, before


def append_fixture(
    manifest_path: Path,
    label: str,
    pcm: bytes,
    expect: dict[str, Any],
    clips: str = "clips",
    channels: int = 1,
) -> Path:
    """Write `pcm` (`channels` interleaved) as `clips/<label>.wav` beside the manifest and
    append the fixture (created if the manifest does not exist); the WAV's path."""
    data, before = check_new_fixture(manifest_path, label, expect, clips)
    folder = manifest_path.parent / clips
    wav = folder / f"{label}.wav"
    data.setdefault("fixtures", []).append(
        {"name": label, "audio": f"{clips}/{label}.wav", "expect": expect}
    )
    folder.mkdir(parents=True, exist_ok=True)
    write_wav(wav, pcm, channels=channels)
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
