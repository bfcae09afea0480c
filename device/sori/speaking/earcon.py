"""Short tones that need no voice: the error earcon and the timer's ring."""

from __future__ import annotations

import math
from array import array
from functools import lru_cache

TONES_HZ = {
    "error": ((660.0, 0.12), (0.0, 0.04), (440.0, 0.18)),
    "ring": ((880.0, 0.15), (0.0, 0.1)) * 3,
    "listen": ((990.0, 0.08),),
}
"""Each earcon as (frequency in Hz, duration in seconds) steps; 0 Hz is silence."""


@lru_cache(maxsize=16)
def earcon(kind: str, rate_hz: int, volume: float = 0.4) -> bytes:
    """16-bit mono PCM of the earcon `kind` ("error", "ring", "listen") at `rate_hz`;
    made once per kind and rate, then served from memory like the cached replies."""
    try:
        steps = TONES_HZ[kind]
    except KeyError:
        raise ValueError(f"no earcon {kind!r}; known: {', '.join(sorted(TONES_HZ))}") from None
    out = array("h")
    for freq_hz, seconds in steps:
        n = int(rate_hz * seconds)
        fade = max(1, int(rate_hz * 0.005))
        for i in range(n):
            if freq_hz == 0.0:
                out.append(0)
                continue
            ramp = min(1.0, i / fade, (n - 1 - i) / fade)
            out.append(int(32767 * volume * ramp * math.sin(2 * math.pi * freq_hz * i / rate_hz)))
    if out.itemsize != 2:  # pragma: no cover - "h" is 16-bit on every platform we run on
        raise RuntimeError("array('h') is not 16-bit here")
    return out.tobytes()
