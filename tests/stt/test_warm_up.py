"""Warm-up at start-up: every pass of the real vosk recognizer decodes speech-like sound
once, through the flush path, before the first utterance; build_recognizer does it."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest

from sori.assemble import hearing
from sori.core.config import Config
from sori.core.config.sections import VoskConfig
from sori.hearing.audio.sources import FileSource
from sori.hearing.audio.synthetic import speech_like
from sori.hearing.stt.base import WarmUp, stop_warm_up, warm_up, warm_up_later
from sori.hearing.stt.vosk import VoskRecognizer, load_model

PHRASES = ["거실 불 켜 줘", "거실 불 꺼 줘", "안방 에어컨 꺼 줘", "커튼 쳐 줘", "지금 몇 시야"]


@pytest.fixture(scope="module")
def model():
    return load_model(chunk_ms=VoskConfig().chunk_ms)


class Spy:
    """A real KaldiRecognizer, with a count of the audio and final results it was asked for."""

    def __init__(self, rec) -> None:
        self.rec = rec
        self.audio_bytes = 0
        self.finals = 0

    def AcceptWaveform(self, pcm: bytes) -> bool:  # noqa: N802 (vosk's name)
        self.audio_bytes += len(pcm)
        return self.rec.AcceptWaveform(pcm)

    def FinalResult(self) -> str:  # noqa: N802
        self.finals += 1
        return self.rec.FinalResult()

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.rec, name)


def test_warm_up_decodes_through_both_passes_and_the_flush_path(model):
    rec = VoskRecognizer(model, phrases=PHRASES, mode="both")
    rec._free, rec._gram = Spy(rec._free), Spy(rec._gram)
    done = warm_up(rec, 2.0)
    assert done.audio_s == pytest.approx(2.0)
    for spy in (rec._free, rec._gram):
        assert spy.audio_bytes >= 2 * 32000  # the whole signal, on each pass
        assert spy.finals >= 1  # finalized: the final-result path is warm too
    # the free pass was flushed: it heard the 120 ms of padding twice, beyond the signal
    assert rec._free.audio_bytes >= 2 * 32000 + 2 * 120 * 32
    assert rec._worker is not None  # the second pass's thread has started


def test_warm_up_does_not_change_what_the_first_utterance_is_heard_as(model, shared_dir):
    """The synthetic sound leaves no trace in the recognizer's hearing of real speech."""
    pcm = FileSource(shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav").pcm

    def first_text(warm: bool) -> str:
        rec = VoskRecognizer(model, phrases=PHRASES, mode="free")
        if warm:
            warm_up(rec, 2.0)
        stream = rec.open_stream()
        for i in range(0, len(pcm), 640):
            stream.feed(pcm[i : i + 640])
        return stream.finalize().text

    assert first_text(warm=True) == first_text(warm=False)


def test_build_recognizer_warms_up_what_it_built(model, monkeypatch, caplog):
    calls = []
    loaded = VoskRecognizer(model, phrases=PHRASES, mode="both")  # the model loads once here
    monkeypatch.setattr(hearing, "_load_recognizer", lambda stt, phrases: loaded)

    def recorded(recognizer, seconds: float) -> WarmUp:
        calls.append((recognizer, seconds))
        return warm_up(recognizer, seconds)

    monkeypatch.setattr(hearing, "warm_up", recorded)
    stt = dataclasses.replace(Config().stt, warm_up_s=1.0)
    with caplog.at_level(logging.INFO, logger="sori.assemble.hearing"):
        recognizer = hearing.build_recognizer(stt, PHRASES)
    assert recognizer is loaded
    assert calls == [(loaded, 1.0)]
    assert any("warmed up on 1.0 s" in r.getMessage() for r in caplog.records)


def test_zero_seconds_is_no_warm_up():
    class Untouchable:
        name = "none"

        def open_stream(self):  # noqa: ANN202
            raise AssertionError("no warm-up must open a stream")

    assert warm_up(Untouchable(), 0) == WarmUp(0.0, 0.0)
    warm_up_later(Untouchable(), 0, report=lambda done: None)


def test_a_warm_up_in_the_background_gives_way_to_the_first_utterance(model, shared_dir):
    """The daemon warms up on a thread: an utterance that begins meanwhile stops it at the
    next frame and is heard whole, exactly as by a recognizer that never warmed up."""
    pcm = FileSource(shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav").pcm

    def heard(rec: VoskRecognizer) -> str:
        stream = rec.open_stream()
        for i in range(0, len(pcm), 640):
            stream.feed(pcm[i : i + 640])
        return stream.finalize().text

    reports: list[WarmUp] = []
    warming = VoskRecognizer(model, phrases=PHRASES, mode="both")
    warm_up_later(warming, 60.0, reports.append)  # far longer than the test takes
    assert warming.warming is not None
    text = heard(warming)  # opening the stream waited for the warm-up to stop
    (done,) = reports
    assert done.stopped and 0 <= done.audio_s < 60.0
    assert warming.warming is None
    assert text == heard(VoskRecognizer(model, phrases=PHRASES, mode="both"))


def test_a_warm_up_in_the_background_ends_when_sori_stops(model):
    """The daemon's stop ends it too: its decoding on the recognizer's worker thread
    would otherwise hold the interpreter's exit until the end of the warm-up."""
    reports: list[WarmUp] = []
    warming = VoskRecognizer(model, phrases=PHRASES, mode="both")
    warm_up_later(warming, 60.0, reports.append)
    stop_warm_up(warming)
    (done,) = reports
    assert done.stopped and warming.warming is None
    stop_warm_up(warming)  # nothing left to stop


def test_speech_like_sound_is_reproducible_and_at_speech_level():
    one = speech_like(1.5, np.random.default_rng(0))
    assert len(one) == 24_000
    assert np.array_equal(one, speech_like(1.5, np.random.default_rng(0)))
    rms_dbfs = 20 * np.log10(np.sqrt(np.mean(one.astype(np.float64) ** 2)) / 32768)
    assert -35 < rms_dbfs < -15  # ordinary speech, not a whisper nor clipping
    assert np.abs(one).max() < 32768
