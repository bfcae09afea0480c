"""The array's front end as a stream (sori.hearing.audio.front_end): frame in, frame out,
the beam's delay, the wiring of dereverberation and of echo cancellation per channel."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from array_rooms import FRAME, free_field, geometry

from sori.assemble.hearing import build_array, front_end
from sori.core.config import Config
from sori.hearing.audio.array import delay_and_sum, steering, unit_vectors
from sori.hearing.audio.format import (
    RATE_HZ,
    AudioFrame,
    ChannelFrame,
    float_to_s16,
    s16_to_float,
)
from sori.hearing.audio.front_end import FFT_SIZE, REBEAM_S, ArrayFrontEnd, array_frames
from sori.hearing.audio.played import PlayedAudio


def config_with(**audio) -> Config:
    config = Config()
    array = dataclasses.replace(config.audio.array, geometry="respeaker-4mic-hat")
    audio = {"channels": 4, "array": array, "denoise": "off"} | audio
    return dataclasses.replace(config, audio=dataclasses.replace(config.audio, **audio))


def frames_of(samples: np.ndarray) -> list[ChannelFrame]:
    usable = len(samples) - len(samples) % FRAME
    return [
        ChannelFrame(samples[k : k + FRAME].astype(np.float32), k * 1_000_000_000 // RATE_HZ)
        for k in range(0, usable, FRAME)
    ]


def tone(seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE_HZ)) / RATE_HZ
    return 0.3 * np.sin(2 * np.pi * 440 * t)


def test_before_any_direction_the_output_is_the_first_microphone_fft_size_late():
    signal = free_field(tone(), 70.0)
    array = ArrayFrontEnd(geometry())
    out = np.concatenate([array.process(f.samples) for f in frames_of(signal)])
    assert np.allclose(out[FFT_SIZE:], signal[: len(out) - FFT_SIZE, 0], atol=1e-5)
    assert np.abs(out[:FFT_SIZE]).max() < 1e-9


def test_frames_keep_their_times_and_length():
    chunks = frames_of(free_field(tone(0.2), 10.0))
    out = list(array_frames(chunks, ArrayFrontEnd(geometry())))
    assert [(f.start_ns, f.samples) for f in out] == [(c.start_ns, FRAME) for c in chunks]


def test_a_steered_beam_passes_the_talker_undistorted():
    said = tone()
    signal = free_field(said, 70.0)  # relative to the array's centre, where `said` is
    array = ArrayFrontEnd(geometry(), "delay-sum")
    array._steer(int(np.argmin(np.abs(array._finder.azimuth_deg - 70.0))))  # elevation 0
    out = np.concatenate([array.process(f.samples) for f in frames_of(signal)])
    late = out[FFT_SIZE + 2048 :]
    assert np.allclose(late, said[2048 : 2048 + len(late)], atol=1e-3)


@pytest.mark.parametrize("frame", [160, 320, 480])
def test_the_stream_is_beamed_again_as_the_beam_points_now(frame):
    """A talker who takes the beam over began before it turned: `rebeam` gives the last
    samples given out as the beam points now, the same as a front end held at those
    weights all along would have given them, and no more than it keeps."""
    noise = np.random.default_rng(2).standard_normal((3 * RATE_HZ, 4)).astype(np.float32)
    freqs = np.fft.rfftfreq(FFT_SIZE, 1 / RATE_HZ)
    toward = unit_vectors(np.array([70.0]), np.zeros(1))[0]
    first, then = (
        np.zeros((len(freqs), 4), complex),
        delay_and_sum(steering(geometry(), freqs, toward)),
    )
    first[:, 0] = 1.0
    turning, held = ArrayFrontEnd(geometry(), "off"), ArrayFrontEnd(geometry(), "off")
    turning.fix(first)
    held.fix(then)
    given, made = [], []
    for k in range(0, len(noise) - frame + 1, frame):
        if k == 2.5 * RATE_HZ // frame * frame:  # the talker took over half a second ago
            turning.fix(then)
        given.append(turning.process(0.1 * noise[k : k + frame]))
        made.append(held.process(0.1 * noise[k : k + frame]))
    second = RATE_HZ
    again = np.frombuffer(turning.rebeam(second), "<i2")
    want = np.frombuffer(float_to_s16(np.concatenate(made)[-second:]), "<i2")
    before = np.frombuffer(float_to_s16(np.concatenate(given)[-second:]), "<i2")
    assert np.abs(again.astype(int) - want).max() <= 1  # rounding to 16 bits
    assert np.abs(before.astype(int) - want).max() > 100  # the turn is within the second
    kept = len(turning.rebeam(len(noise))) // 2
    assert REBEAM_S - 0.05 <= kept / RATE_HZ <= REBEAM_S


@pytest.mark.parametrize("dereverb", ["wpe", "spectral"])
def test_dereverberation_runs_on_every_channel_before_the_beam(dereverb):
    config = config_with(dereverb=dereverb)
    out = list(front_end(config, frames_of(free_field(tone(0.5), 30.0)), array=build_array(config)))
    assert len(out) == 25 and all(isinstance(f, AudioFrame) for f in out)


def echoing_tone_frames() -> list[AudioFrame]:
    """A quiet room, half a second of tone, then its echo dying away as in a room of RT60
    0.6 s."""
    quiet = 1e-4 * np.random.default_rng(0).standard_normal(RATE_HZ // 2)
    said = tone(0.5)
    tail = tone(0.5) * np.exp(-3 * np.log(10) / 0.6 * np.arange(RATE_HZ // 2) / RATE_HZ)
    pcm = (np.concatenate([quiet, said, tail]) * 32767).astype("<i2").tobytes()
    return [AudioFrame(pcm[k : k + 640], k // 640 * 20_000_000) for k in range(0, len(pcm), 640)]


@pytest.mark.parametrize("dereverb", ["wpe", "spectral"])
def test_one_microphone_is_dereverberated_too(dereverb):
    frames = echoing_tone_frames()
    out = list(front_end(config_with(channels=1, dereverb=dereverb), frames))
    assert [f.start_ns for f in out] == [f.start_ns for f in frames]


def test_the_room_s_reverberation_time_reaches_the_spectral_suppressor():
    """The echo (the last 0.4 s out) comes out at least 6 dB quieter when the room's
    reverberation time is said to be 0.8 s than when it is said to be 0.2 s."""

    def echo_level(rt60_s: float) -> float:
        config = config_with(channels=1, dereverb="spectral", rt60_s=rt60_s)
        out = list(front_end(config, echoing_tone_frames()))
        echo = s16_to_float(b"".join(f.pcm for f in out))[-RATE_HZ * 2 // 5 :]
        return float(np.mean(echo**2))

    assert echo_level(0.8) < echo_level(0.2) / 4


def test_sori_s_own_voice_is_taken_out_of_every_channel():
    reply = tone(3.0) * 0.5
    played = PlayedAudio()
    played.add(0, (reply * 32767).astype("<i2").tobytes(), RATE_HZ)
    heard = np.repeat(0.6 * reply[:, None], 4, axis=1)  # each microphone hears the speaker
    out = list(array_frames(frames_of(heard), ArrayFrontEnd(geometry(), "off"), played, 0))
    assert out[-1].echo_energy > 0
    last_second = np.concatenate([s16_to_float(f.pcm) for f in out[-50:]])
    assert np.sqrt(np.mean(last_second**2)) < 0.1 * np.sqrt(np.mean(heard[:, 0] ** 2))
