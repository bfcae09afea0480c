"""espeak-ng: the last-resort voice. Robotic, but it speaks Korean and is always there.

Runs the `espeak-ng` program (Debian package `espeak-ng`) once per sentence and reads
the WAV it writes to stdout.
"""

from __future__ import annotations

import io
import logging
import shutil
import subprocess
import wave
from collections.abc import Iterator

from sori.core.errors import BackendError, DependencyError
from sori.speaking.base import split_sentences

log = logging.getLogger(__name__)

RATE_HZ = 22050
"""espeak-ng's output rate."""


class EspeakVoice:
    """Speaks through the espeak-ng program."""

    def __init__(
        self,
        voice: str = "ko",
        words_per_minute: int = 160,
        executable: str = "espeak-ng",
        timeout_s: float = 20.0,
    ) -> None:
        found = shutil.which(executable)
        if found is None:
            raise DependencyError(f"{executable} is not installed; run 'apt-get install espeak-ng'")
        self._exe = found
        self.voice = voice
        self.words_per_minute = words_per_minute
        self.timeout_s = timeout_s
        self.rate_hz = RATE_HZ
        self._check_voice()

    def _check_voice(self) -> None:
        out = subprocess.run(
            [self._exe, f"--voices={self.voice}"], capture_output=True, text=True, check=False
        )
        rows = out.stdout.splitlines()[1:]
        if not any(self.voice in row.split()[1:5] for row in rows if row.strip()):
            raise DependencyError(
                f"espeak-ng has no voice {self.voice!r}; run 'espeak-ng --voices' to list them"
            )

    def synthesize(self, text: str) -> Iterator[bytes]:
        for sentence in split_sentences(text):
            yield self._one(sentence)

    def _one(self, sentence: str) -> bytes:
        try:
            out = subprocess.run(
                [self._exe, "-v", self.voice, "-s", str(self.words_per_minute), "--stdout"],
                input=sentence.encode("utf-8"),
                capture_output=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise BackendError(f"espeak-ng took over {self.timeout_s} s for one sentence") from None
        if out.returncode != 0:
            err = out.stderr.decode("utf-8", "replace").strip()
            raise BackendError(f"espeak-ng failed ({out.returncode}): {err}")
        # Writing to a pipe, espeak-ng cannot seek back to fix the header's sizes, so read
        # the format from the header and take everything after the data chunk's header.
        with wave.open(io.BytesIO(out.stdout)) as wav:
            if wav.getsampwidth() != 2 or wav.getnchannels() != 1:
                raise BackendError("espeak-ng wrote audio that is not 16-bit mono")
            self.rate_hz = wav.getframerate()
        start = out.stdout.find(b"data") + 8
        pcm = out.stdout[start:]
        return pcm[: len(pcm) // 2 * 2]
