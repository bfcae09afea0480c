"""`wake.denoise = "auto"`: a wake detector that hears an utterance's start denoised when
the room is noisy, the same decision `audio.denoise = "auto"` makes for the recognizer.

White or fan noise at 15-30 dB SNR masks the opening consonant of a phrase, which the
phrase backend then misses (scripts/bench_wake.py). So each utterance's first audio, the
pre-roll, measures the room (sori.hearing.audio.denoise.UtteranceDenoise): in a quiet room the
detector hears the raw audio, in a noisy one DeepFilterNet3's output. The denoiser runs
only while the detector still listens (`WakeStream.done`): the phrase backend decodes the
first seconds of an utterance, so a long noisy sentence costs no more than its start.

The denoised audio lags by sori.hearing.audio.denoise.DELAY_MS; detection times are moved back by
it, so they stay times of the raw stream (where the command after the phrase begins).
"""

from __future__ import annotations

from dataclasses import replace

from sori.hearing.audio.denoise import DELAY_MS, RoomDenoise, UtteranceDenoise
from sori.hearing.wake.base import Detection, WakeDetector, WakeStream


class AutoDenoisedWake:
    """`detector`, hearing each utterance denoised when its room is loud (see module)."""

    def __init__(self, detector: WakeDetector, room: RoomDenoise) -> None:
        self.inner = detector
        self.name = detector.name
        self.phrases = detector.phrases
        self.rearm_s = detector.rearm_s
        self.room = room
        """The decision, the denoisers and the decisions so far (sori.hearing.audio.denoise)."""

    def heard_in(self, phrase: str, pcm: bytes) -> bool:
        return self.inner.heard_in(phrase, pcm)  # Sori's voice as played: no room noise

    def open_stream(self, within: bool = False) -> WakeStream:
        """An utterance's start, raw or denoised; from `within` one, raw: no pre-roll measures
        the room there, and the denoiser does not take out Sori's own voice."""
        if within:
            return self.inner.open_stream(within=True)
        return AutoDenoisedWakeStream(self.room.utterance(), self.inner.open_stream())


class AutoDenoisedWakeStream:
    """One utterance: raw or denoised, decided on its first audio."""

    def __init__(self, audio: UtteranceDenoise, inner: WakeStream) -> None:
        self._audio: UtteranceDenoise | None = audio
        """None once the detector stopped listening (the denoiser is back with its owner)."""
        self._inner = inner
        self._lag_s = 0.0
        """How late the detector hears the audio, in seconds (the denoiser's delay)."""

    @property
    def done(self) -> bool:
        return self._audio is None

    def feed(self, pcm: bytes) -> list[Detection]:
        if self._audio is None:
            return []
        heard = self._audio.feed(pcm)
        self._lag_s = DELAY_MS / 1000 if self._audio.denoising else 0.0
        found = self._inner.feed(heard) if heard else []
        if self._inner.done:
            self._release()  # the detector has stopped listening: so does the denoiser
        return self._shifted(found)

    def finish(self) -> list[Detection]:
        found: list[Detection] = []
        if self._audio is not None:
            held = self._audio.decide()
            self._lag_s = DELAY_MS / 1000 if self._audio.denoising else 0.0
            found += self._inner.feed(held) if held else []
            tail = self._release()
            found += self._inner.feed(tail) if tail else []
        return self._shifted(found + self._inner.finish())

    def close(self) -> None:
        if self._audio is not None:
            self._release()
        self._inner.close()

    def _release(self) -> bytes:
        """Stop denoising: the held-back tail (nothing when raw)."""
        assert self._audio is not None
        audio, self._audio = self._audio, None
        return audio.close()

    def _shifted(self, found: list[Detection]) -> list[Detection]:
        """Detections in raw-stream times: earlier by the denoiser's delay, if it ran."""
        if not self._lag_s or not found:
            return found
        lag = self._lag_s
        return [
            replace(d, start_s=round(max(0.0, d.start_s - lag), 3),
                    end_s=round(max(0.0, d.end_s - lag), 3))
            for d in found
        ]  # fmt: skip
