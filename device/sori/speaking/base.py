"""The speech-synthesis protocol, plus sentence splitting shared by the backends.

A voice turns text into 16-bit mono PCM, one chunk per sentence, so the speaker can
start on the first sentence while later ones are still being synthesized.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

_SENTENCE_END = re.compile(r"(?<=[.!?。？！…])\s+|\n+")


class Voice(Protocol):
    """A text-to-speech backend."""

    rate_hz: int
    """Sample rate of the PCM it yields, in Hz."""

    def synthesize(self, text: str) -> Iterator[bytes]:
        """16-bit little-endian mono PCM at `rate_hz`, one chunk per sentence (blocking)."""
        ...


def split_sentences(text: str) -> list[str]:
    """ "불을 켰어요. 또 필요하세요?" → ["불을 켰어요.", "또 필요하세요?"]; blanks dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def duration_s(pcm: bytes, rate_hz: int) -> float:
    """Length of 16-bit mono PCM in seconds."""
    return len(pcm) / 2 / rate_hz
