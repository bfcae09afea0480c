"""audio.denoise = "auto" decides by SNR, per utterance, once for the hearing pipeline: the
shared read clips in generated rooms, through the real pipeline (Silero VAD, the pre-roll)
to the decision; the recognizer and the wake detector share one decision and one
DeepFilterNet3 instance."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import pytest

from sori.assemble.hearing import hearing_recognizer
from sori.assemble.understanding import home_from_config, presets_from_config
from sori.assemble.wake import build_wake_detector
from sori.core.config import load_config
from sori.hearing.audio.augment import at_dbfs, gain_db, make_noise, mix_at_snr, to_pcm16
from sori.hearing.audio.denoise import RoomDenoise, decision_ms
from sori.hearing.audio.format import read_file
from sori.hearing.audio.sources import RawSource
from sori.hearing.stt.denoised import AutoDenoised
from sori.hearing.wake.denoised import AutoDenoisedWake
from sori.testing.fakes import ScriptedRecognizer
from sori.testing.replaying import replay_events

EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "device" / "sori.example.toml"
CLIPS = (
    "picovoice_leopard_test_ko.wav",
    "zeroth_104_003_0294.wav",
    "zeroth_104_003_0352.wav",
    "zeroth_104_003_0019.wav",
)
LEAD = 16_000
"""A second of the room before each clip."""


@pytest.fixture(scope="module")
def config():
    config = load_config(str(EXAMPLE_CONFIG))
    return dataclasses.replace(
        config,
        stt=dataclasses.replace(config.stt, warm_up_s=0.0),
        audio=dataclasses.replace(config.audio, denoise="auto"),
        wake=dataclasses.replace(config.wake, denoise="auto"),
    )


@pytest.fixture(scope="module")
def speech(shared_dir) -> list[np.ndarray]:
    folder = shared_dir / "audio" / "ko-read"
    return [np.frombuffer(read_file(folder / n), "<i2").astype(np.float32) for n in CLIPS]


def decided(config, signal: np.ndarray) -> list[bool]:
    """Whether each utterance the pipeline hears in `signal` is denoised."""
    measure = decision_ms(config.vad.pre_roll_ms, config.vad.start_ms)
    room = RoomDenoise(None, config.audio.denoise_above_dbfs, measure)
    room.lend = lambda: None  # decide only
    source = RawSource(io.BytesIO(to_pcm16(signal)), name="room")
    replay_events(source, config, AutoDenoised(ScriptedRecognizer([]), room), None)
    assert room.decisions, "the pipeline heard no utterance"
    return [wanted for _, wanted in room.decisions]


def in_room(speech: np.ndarray, room: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros(LEAD, np.float32), speech]) + room[: LEAD + len(speech)]


def at_snr(speech: np.ndarray, kind: str, snr_db: float, seed: int) -> np.ndarray:
    """`speech` with `kind` noise `snr_db` under it, the noise a second ahead of it."""
    noise = make_noise(kind, LEAD + len(speech), np.random.default_rng(seed))
    mixed = mix_at_snr(speech, noise[LEAD:], snr_db)
    lead = noise[:LEAD] * float(np.std(mixed - speech)) / float(np.std(noise[LEAD:]))
    return np.concatenate([lead, mixed]).astype(np.float32)


@pytest.mark.parametrize("kind", ["hum", "brown"])
def test_clean_speech_in_a_minus_35_dbfs_room_is_heard_raw(config, speech, kind):
    """A room at -35 dBFS, by the old rule (-55) a noisy one, whose noise lies below the
    speech band (mains hum, rumble): the voice stands far above it, so nothing is denoised."""
    for seed, clip in enumerate(speech[:2] if kind == "brown" else speech):
        room = at_dbfs(make_noise(kind, LEAD + len(clip), np.random.default_rng(seed)), -35)
        assert not any(decided(config, in_room(clip, room))), (kind, CLIPS[seed])


def test_clean_speech_in_a_quiet_room_is_heard_raw(config, speech):
    for clip in speech:
        assert not any(decided(config, clip))


@pytest.mark.parametrize("kind", ["white", "pink"])
@pytest.mark.parametrize("snr_db", [10, 15])
@pytest.mark.parametrize("gain", [0.0, -10.0])
def test_speech_10_to_15_db_above_white_or_pink_noise_is_denoised_at_any_level(
    config, speech, kind, snr_db, gain
):
    for seed, clip in enumerate(speech[:2]):
        signal = gain_db(at_snr(clip, kind, snr_db, seed), gain)
        assert all(decided(config, signal)), (kind, snr_db, gain, CLIPS[seed])


def test_speech_30_db_above_the_noise_is_heard_raw_20_db_denoised(config, speech):
    for seed, clip in enumerate(speech[:2]):
        assert not any(decided(config, at_snr(clip, "pink", 35, seed)))
        assert all(decided(config, at_snr(clip, "white", 20, seed)))


def test_the_recognizer_and_the_wake_detector_share_one_decision_and_one_denoiser(config):
    """The daemon's hearing: the recognizer and the wake detector built from the config
    consult one `RoomDenoise`, holding one DeepFilterNet3 instance; a recognizer turn opened
    after a wake phrase takes the decision made on the utterance's start at once, and the
    one denoiser. The Wyoming server's detector (a client's audio) decides on its own."""
    presets = presets_from_config(config.intents, home_from_config(config.home))
    recognizer = hearing_recognizer(config, presets)
    detector = build_wake_detector(config, recognizer=recognizer)
    assert isinstance(recognizer, AutoDenoised) and isinstance(detector, AutoDenoisedWake)
    room = recognizer.room
    assert detector.room is room and room.made == 1
    rng = np.random.default_rng(1)
    noisy = to_pcm16(at_dbfs(make_noise("white", 16_000, rng), -30))
    start = room.measure_bytes
    wake = room.utterance("wake")  # gated: the detector hears the utterance's start
    assert wake.feed(noisy[: start - 640]) is None  # held back until it decides
    assert wake.feed(noisy[start - 640 : start]) is not None and wake.denoising
    lent = wake._denoiser
    wake.close()  # the phrase was found: the detector stops listening
    stt = room.utterance("stt")  # the recognizer turn after the phrase
    assert stt.feed(noisy[:640]) is not None  # decided already: nothing held back
    assert stt.denoising and stt._denoiser is lent and room.made == 1
    assert len(room.decisions) == 1
    stt.close()
    stt = room.utterance("stt")  # the next utterance, in the listening window
    wake = room.utterance("wake")  # the detector beside the recognizer
    assert stt.feed(noisy[:start]) is not None and stt.denoising
    assert wake.feed(noisy[:640]) is not None and not wake.denoising  # the one is busy
    assert len(room.decisions) == 2 and room.made == 1  # one per utterance, not per listener
    wake.close()
    stt.close()
    room.rejoin("stt")  # Sori answered; the phrase said over it opens a turn, same utterance
    stt = room.utterance("stt")
    assert stt.feed(noisy[:640]) is not None and stt.denoising and len(room.decisions) == 2
    stt.close()
    wyoming = build_wake_detector(config, recognizer=recognizer, hears_the_room=False)
    assert isinstance(wyoming, AutoDenoisedWake) and wyoming.room is not room
    assert wyoming.room.made == 0  # its denoiser loads on a client's first noisy utterance
