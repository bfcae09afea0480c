"""`audio.denoise = "auto"`: a recognizer that hears an utterance denoised only when the
room is noisy.

The pipeline opens a recognizer stream when the VAD hears speech start, and feeds it the
pre-roll first: the room just before the speech. This wrapper holds that audio back until
it has `measure_ms` of it (the pipeline's whole ring arrives in one go, so nothing waits),
measures the room's level (sori.hearing.audio.denoise.room_level_dbfs) and decides
(`use_denoiser`): in a quiet room the utterance goes to the recognizer as it is, so clean
speech loses nothing; in a noisy one it goes through DeepFilterNet3, which is primed on the
buffered pre-roll and runs only until the utterance ends. The VAD keeps hearing the raw
microphone (Silero holds speech down to 5 dB SNR), so between utterances nothing is
denoised, and the endpointing is the same in every room.

The denoised audio lags by sori.hearing.audio.denoise.DELAY_MS: on a flush (a pause) and at the
end, that held-back tail is pushed out first, so the recognizer hears the last syllable.
"""

from __future__ import annotations

import logging

from sori.hearing.audio.denoise import DeepFilterDenoiser, RoomDenoise, UtteranceDenoise
from sori.hearing.stt.base import Hypothesis, RecognizerStream, SpeechRecognizer

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
        self.room = RoomDenoise(denoiser, above_dbfs, measure_ms)
        """The decision, the denoisers and the decisions so far (sori.hearing.audio.denoise)."""

    @property
    def decisions(self) -> list[tuple[float, bool]]:
        """(room level in dBFS, denoised) of every utterance so far, for tests and benches."""
        return self.room.decisions

    def open_stream(self) -> AutoDenoisedStream:
        return AutoDenoisedStream(self.room.utterance(), self.inner.open_stream())

    def forget_room(self) -> None:
        """Drop what the denoisers learned of the room: the next utterance that needs one
        gets a fresh DeepFilterNet state. For replays of unrelated recordings (`sori test`),
        whose results must not depend on what was heard before them."""
        self.room.forget_room()


class AutoDenoisedStream:
    """One utterance: raw or denoised, decided on its first `measure_ms`."""

    def __init__(self, audio: UtteranceDenoise, inner: RecognizerStream) -> None:
        self._audio, self._inner = audio, inner

    def feed(self, pcm: bytes) -> Hypothesis | None:
        heard = self._audio.feed(pcm)
        return None if heard is None else self._inner.feed(heard)

    def flush(self, silence_ms: int) -> Hypothesis | None:
        shown = self._decide()
        if self._audio.denoising:
            shown = _latest(shown, self._inner.feed(self._audio.drain()))
        return _latest(shown, self._inner.flush(silence_ms))

    def finalize(self) -> Hypothesis:
        self._decide()
        denoising = self._audio.denoising
        tail = self._audio.close()
        if denoising:
            self._inner.feed(tail)
        return self._inner.finalize()

    def _decide(self) -> Hypothesis | None:
        """Decide now when the utterance is shorter than the measure (a pause, the end)."""
        if self._audio.decided:
            return None
        held = self._audio.decide()
        return self._inner.feed(held) if held else None


def _latest(earlier: Hypothesis | None, later: Hypothesis | None) -> Hypothesis | None:
    """The newer of two partial hypotheses (None = unchanged)."""
    return later if later is not None else earlier
