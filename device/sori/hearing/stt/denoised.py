"""`audio.denoise = "auto"`: a recognizer that hears an utterance denoised only when its
speech stands too little above the room.

The pipeline opens a recognizer stream when the VAD hears speech start, and feeds it the
pre-roll first: the room just before the speech. This wrapper holds that audio back, with
the speech's first `DECISION_SPEECH_MS` (the pipeline's whole ring arrives in one go, and
the recognizer catches up on what was held at once), and asks the hearing pipeline's one
decision (sori.hearing.audio.denoise.RoomDenoise): an SNR estimate, speech level over the
room's. With a voice well above the room the utterance goes to the recognizer as it is, so
clean speech loses nothing, however loud the room; otherwise it goes through the pipeline's
one DeepFilterNet3 instance, primed on the buffered pre-roll, until the utterance ends. A
recognizer turn opened after a wake phrase takes the decision the wake detector made on the
utterance's start. The VAD keeps hearing the raw microphone (Silero holds speech down to
5 dB SNR), so between utterances nothing is denoised, and the endpointing is the same in
every room.

The denoised audio lags by sori.hearing.audio.denoise.DELAY_MS: on a flush (a pause) and at the
end, that held-back tail is pushed out first, so the recognizer hears the last syllable.
"""

from __future__ import annotations

import logging

from sori.hearing.audio.denoise import Estimate, RoomDenoise, UtteranceDenoise
from sori.hearing.stt.base import Hypothesis, RecognizerStream, SpeechRecognizer

log = logging.getLogger(__name__)


class AutoDenoised:
    """`recognizer`, with each utterance denoised when `room` decides so (see the module
    docstring)."""

    def __init__(self, recognizer: SpeechRecognizer, room: RoomDenoise) -> None:
        self.inner = recognizer
        self.name = recognizer.name
        self.room = room
        """The decision, the denoiser and the decisions so far, shared with the wake
        detector (sori.hearing.audio.denoise)."""

    @property
    def decisions(self) -> list[tuple[Estimate, bool]]:
        """(estimate, denoised) of every utterance decided so far, for tests and benches."""
        return self.room.decisions

    def open_stream(self) -> AutoDenoisedStream:
        return AutoDenoisedStream(self.room.utterance("stt"), self.inner.open_stream())

    def forget_room(self) -> None:
        """Drop what the denoiser learned of the room: the next utterance that needs one
        gets a fresh DeepFilterNet state. For replays of unrelated recordings (`sori test`),
        whose results must not depend on what was heard before them."""
        self.room.forget_room()


class AutoDenoisedStream:
    """One utterance: raw or denoised, decided on its start."""

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
