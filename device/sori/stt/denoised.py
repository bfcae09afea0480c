"""`audio.denoise = "auto"`: a recognizer that hears an utterance denoised only when the
room is noisy.

The pipeline opens a recognizer stream when the VAD hears speech start, and feeds it the
pre-roll first: the room just before the speech. This wrapper holds that audio back until
it has `measure_ms` of it (the pipeline's whole ring arrives in one go, so nothing waits),
measures the room's level (sori.audio.denoise.room_level_dbfs) and decides
(`use_denoiser`): in a quiet room the utterance goes to the recognizer as it is, so clean
speech loses nothing; in a noisy one it goes through DeepFilterNet3, which is primed on the
buffered pre-roll and runs only until the utterance ends. The VAD keeps hearing the raw
microphone (Silero holds speech down to 5 dB SNR), so between utterances nothing is
denoised, and the endpointing is the same in every room.

The denoised audio lags by sori.audio.denoise.DELAY_MS: on a flush (a pause) and at the
end, that held-back tail is pushed out first, so the recognizer hears the last syllable.
"""

from __future__ import annotations

import logging

from sori.audio.denoise import DeepFilterDenoiser, room_level_dbfs, use_denoiser
from sori.audio.format import RATE_HZ
from sori.stt.base import Hypothesis, RecognizerStream, SpeechRecognizer

log = logging.getLogger(__name__)


class AutoDenoised:
    """`recognizer`, with each utterance denoised when its room is louder than
    `above_dbfs` (see the module docstring)."""

    def __init__(
        self,
        recognizer: SpeechRecognizer,
        denoiser: DeepFilterDenoiser,
        above_dbfs: float,
        measure_ms: int,
    ) -> None:
        self.inner = recognizer
        self.name = recognizer.name
        self.above_dbfs = above_dbfs
        """The room level above which an utterance is denoised, in dBFS."""
        self.measure_bytes = 2 * RATE_HZ * max(20, measure_ms) // 1000
        """How much of a stream's first audio measures the room, in bytes."""
        self._idle = [denoiser]
        self.decisions: list[tuple[float, bool]] = []
        """(room level in dBFS, denoised) of every utterance so far, for tests and benches."""

    def open_stream(self) -> AutoDenoisedStream:
        return AutoDenoisedStream(self, self.inner.open_stream())

    def lend(self) -> DeepFilterDenoiser:
        """A denoiser for one utterance, restarted; `give_back` returns it."""
        denoiser = self._idle.pop() if self._idle else DeepFilterDenoiser()
        denoiser.restart()
        return denoiser

    def give_back(self, denoiser: DeepFilterDenoiser) -> None:
        self._idle.append(denoiser)

    def forget_room(self) -> None:
        """Drop what the denoisers learned of the room: the next utterance that needs one
        gets a fresh DeepFilterNet state. For replays of unrelated recordings (`sori test`),
        whose results must not depend on what was heard before them."""
        self._idle.clear()


class AutoDenoisedStream:
    """One utterance: raw or denoised, decided on its first `measure_ms`."""

    def __init__(self, owner: AutoDenoised, inner: RecognizerStream) -> None:
        self._owner, self._inner = owner, inner
        self._held = bytearray()
        """Audio fed before the decision (the pre-roll)."""
        self._decided = False
        self._denoiser: DeepFilterDenoiser | None = None

    def feed(self, pcm: bytes) -> Hypothesis | None:
        if not self._decided:
            self._held += pcm
            if len(self._held) < self._owner.measure_bytes:
                return None
            return self._decide()
        return self._inner.feed(self._through(pcm))

    def flush(self, silence_ms: int) -> Hypothesis | None:
        shown = self._decide() if not self._decided else None
        if self._denoiser is not None:
            shown = _latest(shown, self._inner.feed(self._denoiser.drain()))
        return _latest(shown, self._inner.flush(silence_ms))

    def finalize(self) -> Hypothesis:
        if not self._decided:
            self._decide()
        if self._denoiser is not None:
            self._inner.feed(self._denoiser.drain())
            self._owner.give_back(self._denoiser)
            self._denoiser = None
        return self._inner.finalize()

    def _decide(self) -> Hypothesis | None:
        held, self._held = bytes(self._held), bytearray()
        self._decided = True
        level = room_level_dbfs(held)
        wanted = use_denoiser(level, self._owner.above_dbfs)
        self._owner.decisions.append((level, wanted))
        log.debug("denoise auto: room at %.1f dBFS: %s", level, "denoised" if wanted else "raw")
        if wanted:
            self._denoiser = self._owner.lend()
        return self._inner.feed(self._through(held)) if held else None

    def _through(self, pcm: bytes) -> bytes:
        return pcm if self._denoiser is None else self._denoiser.process(pcm)


def _latest(earlier: Hypothesis | None, later: Hypothesis | None) -> Hypothesis | None:
    """The newer of two partial hypotheses (None = unchanged)."""
    return later if later is not None else earlier
