"""Rooms heard by a microphone array, simulated with pyroomacoustics (image sources): a
talker and a point interferer at known directions, each one's sound at every microphone
kept apart so that a test can measure what the beam did to each."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from sori.hearing.audio.array import BOARDS, ArrayGeometry
from sori.hearing.audio.augment import make_noise
from sori.hearing.audio.format import RATE_HZ, read_file
from sori.hearing.audio.front_end import FFT_SIZE, ArrayFrontEnd

ROOM_M = (6.0, 5.0, 3.0)
"""A living room: 6 × 5 m, 3 m high."""
ARRAY_AT_M = np.array([3.0, 2.5, 1.0])
"""The array on a table in the middle of the room."""
BOARD = "respeaker-4mic-hat"
LEAD_S = 1.0
"""Interferer alone before the talker speaks: the noise the beam learns."""
FRAME = 320
"""Samples of one 20 ms pipeline frame."""


@dataclass(frozen=True)
class Room:
    """A talker and an interferer as the array's microphones hear them."""

    talker: np.ndarray
    """The talker's sound at each microphone (direct path and echoes), (samples, mics)."""
    interferer: np.ndarray
    """The interferer's, scaled to `below_db` under the talker at microphone 0."""

    @property
    def mixed(self) -> np.ndarray:
        return (self.talker + self.interferer).astype(np.float32)


def geometry(board: str = BOARD) -> ArrayGeometry:
    return ArrayGeometry(np.array(BOARDS[board]))


def at(azimuth_deg: float, distance_m: float, height_m: float) -> list[float]:
    a = np.radians(azimuth_deg)
    return [
        float(ARRAY_AT_M[0] + distance_m * np.cos(a)),
        float(ARRAY_AT_M[1] + distance_m * np.sin(a)),
        height_m,
    ]


@functools.cache
def read_clip(path: str, seconds: float) -> np.ndarray:
    """The first `seconds` of an audio file, float in [-1, 1) at 16 kHz (read once)."""
    pcm = np.frombuffer(read_file(path), "<i2")[: int(seconds * RATE_HZ)]
    return pcm.astype(np.float32) / 32768


def simulate(
    speech: np.ndarray,
    azimuth_deg: float,
    interferer_deg: float,
    below_db: float = 5.0,
    rt60_s: float = 0.4,
    board: str = BOARD,
    seed: int = 1,
    tail_s: float = 0.8,
    distance_m: float = 2.0,
    lead_s: float = LEAD_S,
    sound: np.ndarray | None = None,
) -> Room:
    """`speech` said `distance_m` from the array at `azimuth_deg` (mouth 1.5 m high) after
    `lead_s`, pink noise (or `sound`, as long as the mix at least) from a loudspeaker 1.8 m
    away at `interferer_deg` playing throughout, `below_db` under the talker at microphone
    0, in a room of `rt60_s` reverberation."""
    import pyroomacoustics as pra

    absorption, order = pra.inverse_sabine(rt60_s, ROOM_M)
    room = pra.ShoeBox(
        ROOM_M, fs=RATE_HZ, materials=pra.Material(absorption), max_order=min(order, 20)
    )
    lead = int(lead_s * RATE_HZ)
    talker = np.concatenate([np.zeros(lead), speech, np.zeros(int(tail_s * RATE_HZ))])
    if sound is None:
        noise = make_noise("pink", len(talker), np.random.default_rng(seed))
    else:
        noise = sound[: len(talker)]
    room.add_source(at(azimuth_deg, distance_m, 1.5), signal=talker)
    room.add_source(at(interferer_deg, 1.8, 1.2), signal=noise)
    room.add_microphone_array((ARRAY_AT_M + np.array(BOARDS[board])).T)
    heard = room.simulate(return_premix=True)[:, :, : len(talker)]
    said, other = heard[0].T, heard[1].T
    gain = np.sqrt(np.mean(said[lead:, 0] ** 2) / np.mean(other[:, 0] ** 2)) / 10 ** (below_db / 20)
    other = other * gain
    scale = 0.5 / np.abs(said + other).max()
    return Room(said * scale, other * scale)


def oracle_voice(talker: np.ndarray, start: int) -> bool:
    """What a voice detector says of the beam's frame that begins at input sample
    `start`: the beam's output is `FFT_SIZE` samples late, so the frame holds the
    talker's sound from then."""
    at_ = max(0, start - FFT_SIZE)
    frame = talker[at_ : at_ + FRAME, 0]
    return bool(np.mean(frame**2) > 1e-2 * np.mean(talker[:, 0] ** 2))


def beam_with_oracle(
    array: ArrayFrontEnd, room: Room, talker: np.ndarray | None = None
) -> np.ndarray:
    """`room` through `array`, frame by frame, told after each frame what a voice
    detector would (voice; an utterance from 6 voiced frames in a row, as the pipeline's
    120 ms start) of `talker` (the room's talker unless given): the beamed mono signal."""
    mixed, out = room.mixed, []
    talker = room.talker if talker is None else talker
    run, in_speech = 0, False
    for start in range(0, len(mixed) - FRAME + 1, FRAME):
        out.append(array.process(mixed[start : start + FRAME]))
        voiced = oracle_voice(talker, start)
        run = run + 1 if voiced else 0
        in_speech = in_speech or run >= 6
        array.heard(voiced, in_speech)
    return np.concatenate(out)


def beam_fixed(array: ArrayFrontEnd, signal: np.ndarray) -> np.ndarray:
    """`signal` (samples, mics) through the weights `array` holds now, unchanged."""
    fixed = ArrayFrontEnd(array.geometry, "off")
    fixed.fix(array.weights)
    usable = len(signal) - len(signal) % FRAME
    return np.concatenate([fixed.process(signal[k : k + FRAME]) for k in range(0, usable, FRAME)])


def free_field(signal: np.ndarray, azimuth_deg: float, board: str = BOARD) -> np.ndarray:
    """`signal` as a plane wave from `azimuth_deg` reaches each microphone of `board`
    with no room around: (samples, mics)."""
    from sori.hearing.audio.array import plane_wave

    return plane_wave(signal, geometry(board), azimuth_deg)


def speaker_echo(
    played: np.ndarray, board: str = "respeaker-usb-4mic", rt60_s: float = 0.4
) -> np.ndarray:
    """What the array's microphones hear of `played` from the device's own loudspeaker,
    8 cm under the array, in a living room: (samples, microphones)."""
    import pyroomacoustics as pra

    absorption, order = pra.inverse_sabine(rt60_s, ROOM_M)
    room = pra.ShoeBox(
        ROOM_M, fs=RATE_HZ, materials=pra.Material(absorption), max_order=min(order, 20)
    )
    room.add_source(ARRAY_AT_M - np.array([0.0, 0.0, 0.08]), signal=played)
    room.add_microphone_array((ARRAY_AT_M + np.array(BOARDS[board])).T)
    room.simulate()
    return room.mic_array.signals.T[: len(played)]
