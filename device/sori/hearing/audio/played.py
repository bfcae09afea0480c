"""What Sori's speaker played, and when: its own voice as the microphone hears it back.

While a reply plays the microphone hears it, and the voice detector hears what echo
cancellation leaves of it and a user's "소리야" over it as one utterance. The player
records every piece it hands to a speaker (`add`, clock times): the echo canceller's
reference (`between`, sori.hearing.audio.echo_cancel); the hearing pipeline asks
whether Sori was speaking when a frame was heard (`speaking`: then the wake phrase is
listened for all through an utterance) and, for a wake phrase heard then, what Sori was
saying at that moment (`said_as_heard`): a phrase in Sori's own voice is no wake phrase.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

from sori.hearing.audio.format import RATE_HZ, SAMPLE_BYTES, s16_to_float, to_pipeline

VOICE_DBFS = -45.0
"""Below this level (the RMS of a span, in dBFS) Sori was silent then: a pause between
sentences, not its voice."""
KEEP_S = 30.0
"""How much of the latest playback is kept, in seconds."""
ECHO_TAIL_S = 0.5
"""How long after a piece ends the microphone may still hear it, in seconds (the output's
buffer and the room's reverberation)."""

S = 1_000_000_000


class PlayedAudio:
    """The latest `KEEP_S` of what the speaker played, as 16 kHz mono s16le, each piece
    stamped with the clock time it began playing (thread-safe: the player adds on the event
    loop, the hearing pipeline reads on its worker thread)."""

    def __init__(self) -> None:
        self._pieces: deque[tuple[int, int, bytes]] = deque()
        """(start, end, pcm) of each piece, clock times in nanoseconds."""
        self._end_ns = 0
        """Where the latest piece ends: a piece handed over sooner plays after it."""
        self._lock = threading.Lock()

    def add(self, t_ns: int, pcm: bytes, rate_hz: int) -> None:
        """The speaker was handed `pcm` (16-bit mono at `rate_hz`) at clock time `t_ns`."""
        if not pcm:
            return
        if rate_hz != RATE_HZ:
            pcm = to_pipeline(s16_to_float(pcm), rate_hz)
        with self._lock:
            start = max(t_ns, self._end_ns)
            self._end_ns = start + len(pcm) // SAMPLE_BYTES * S // RATE_HZ
            self._pieces.append((start, self._end_ns, pcm))
            while self._pieces and self._pieces[0][0] < self._end_ns - int(KEEP_S * S):
                self._pieces.popleft()

    def speaking(self, t_ns: int) -> bool:
        """Whether the microphone may hear Sori at clock time `t_ns`."""
        tail_ns = int(ECHO_TAIL_S * S)
        with self._lock:
            for start, end, _ in reversed(self._pieces):
                if end + tail_ns < t_ns:
                    return False  # later pieces than this one began later still
                if start <= t_ns:
                    return True
        return False

    def said(self, start_ns: int, end_ns: int) -> bytes | None:
        """What Sori said from clock time `start_ns` to `end_ns` (`between`); None when it
        was silent then."""
        pcm = self.between(start_ns, end_ns)
        return pcm if 20 * np.log10(max(_rms(pcm) / 32768, 1e-9)) >= VOICE_DBFS else None

    def said_as_heard(self, start_ns: int, end_ns: int, heard: bytes) -> bytes | None:
        """What Sori said from `start_ns` to `end_ns` (`said`) at the level of `heard`, the
        microphone's audio then. A decoder hears quiet audio otherwise than loud: scaled
        so, Sori's voice alone decodes as the microphone's does when the echo is all it
        heard, and as loud words, far from any phrase, when a user spoke over it."""
        said = self.said(start_ns, end_ns)
        if said is None:
            return None
        gain = _rms(heard) / _rms(said)
        return (np.frombuffer(said, "<i2") * gain).clip(-32768, 32767).astype("<i2").tobytes()

    def between(self, start_ns: int, end_ns: int) -> bytes:
        """What was played from clock time `start_ns` to `end_ns` (silence where nothing
        was), 16 kHz mono s16le."""
        out = bytearray(max(0, (end_ns - start_ns) * RATE_HZ // S) * SAMPLE_BYTES)
        with self._lock:
            pieces = list(self._pieces)
        for t, _, pcm in pieces:
            offset = (t - start_ns) * RATE_HZ // S * SAMPLE_BYTES
            lo, hi = max(0, offset), min(len(out), offset + len(pcm))
            if lo < hi:
                out[lo:hi] = pcm[lo - offset : hi - offset]
        return bytes(out)


def _rms(pcm: bytes) -> float:
    samples = np.frombuffer(pcm, "<i2").astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) if samples.size else 0.0
