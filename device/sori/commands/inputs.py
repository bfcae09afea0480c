"""Audio inputs named on a command line (`sori replay`, `sori wake`): all opened before
any model loads, so a wrong name is told at once; each input that cannot be read is told
on stderr and skipped, and the others still run."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sori.core.errors import AudioError


@dataclass(frozen=True, slots=True)
class RawInput:
    """How raw PCM on stdin ('-') is read (`--format`, `--rate`, `--channels`)."""

    sample_format: str
    """Sample format name (s16le, f32le, s32le, u8)."""
    rate_hz: int
    """Sample rate, in Hz."""
    channels: int
    """Interleaved channel count."""


def open_inputs(
    command: str, names: Iterable[str], frame_ms: int, raw: RawInput | None = None
) -> tuple[list[Any], bool]:
    """(sources, some failed): each name opened as a WAV/FLAC file, or '-' as raw PCM on
    stdin when `raw` says how to read it. A missing, empty or unreadable file is told on
    stderr as `sori COMMAND: NAME: why` and left out."""
    # The audio extra: imported here, so `sori --help` runs without it.
    from sori.hearing.audio.sources import FileSource, RawSource

    sources: list[Any] = []
    failed = False
    for name in names:
        try:
            if name == "-" and raw is not None:
                sources.append(
                    RawSource(sys.stdin.buffer, raw.sample_format, raw.rate_hz, raw.channels,
                              frame_ms)
                )  # fmt: skip
            else:
                sources.append(FileSource(name, frame_ms))
        except AudioError as exc:
            print(f"sori {command}: {exc}", file=sys.stderr)
            failed = True
    return sources, failed


def print_each(
    command: str,
    sources: Iterable[Any],
    records: Callable[[Any], Iterable[dict[str, Any]]],
    line: Callable[[dict[str, Any]], str],
) -> bool:
    """Print one line per record of each source in turn; a source that breaks while it is
    read (stdin that is no audio) is told on stderr and the next goes on. True when one
    broke."""
    failed = False
    for source in sources:
        try:
            for record in records(source):
                print(line(record), flush=True)
        except AudioError as exc:
            print(f"sori {command}: {exc}", file=sys.stderr)
            failed = True
    return failed
