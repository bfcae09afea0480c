from __future__ import annotations

import pytest

from sori.core.errors import ModelError
from sori.speaking.base import duration_s
from sori.speaking.piper import PiperVoice, default_model


@pytest.fixture(scope="module")
def joe() -> PiperVoice:
    return PiperVoice()


def test_default_voice_is_the_joe_package(joe):
    assert joe.model_path == default_model()
    assert joe.rate_hz == 22050


def test_streams_one_chunk_per_sentence(joe):
    chunks = list(joe.synthesize("The living room light is on. Anything else?"))
    assert len(chunks) == 2
    assert all(0.3 < duration_s(c, joe.rate_hz) < 5 for c in chunks)


def test_slower_length_scale_makes_longer_audio(joe):
    slow = PiperVoice(length_scale=2.0)
    (fast_audio,) = joe.synthesize("Turning on the kitchen lights.")
    (slow_audio,) = slow.synthesize("Turning on the kitchen lights.")
    assert len(slow_audio) > 1.2 * len(fast_audio)


def test_missing_model_names_the_key(tmp_path):
    with pytest.raises(ModelError, match=r"tts\.piper\.model"):
        PiperVoice(model=tmp_path / "nope.onnx")
