"""A living room simulated: a talker across it, another sound source, and a microphone or
a small circular array on a shelf, as the image-source method of pyroomacoustics hears it.

`augment.room_impulse` makes one microphone's reverberation from decaying noise; here the
room has walls, so every microphone of an array hears the same reflections at its own
delays, which is what dereverberation, direction finding and beams need to be tested on.

    setup = RoomSetup(rt60_s=0.6, distance_m=2.0, mics=4)
    heard = simulate_room(speech, setup, interferer=make_noise("pink", len(speech), rng),
                          snr_db=5.0)
    heard.channels    # float32, (samples, 4), int16 scale: the array's recording
    heard.early       # mic 0's direct sound and first reflections: what to get back

The room is a 6 x 5 x 2.7 m box whose walls absorb evenly, chosen by Sabine's formula for
`rt60_s` (what it measures comes out somewhat longer: 0.54 s for 0.4). The array sits at
`ARRAY_CENTRE_M` (a speaker on a shelf), its microphones on a circle of `ARRAY_RADIUS_M`
(the ReSpeaker USB Mic Array's, in its channel order: `mic_positions`); the
talker's mouth is `distance_m` from the array's centre at `TALKER_BEARING_DEG`; the
interferer (a television, people talking) at `INTERFERER_BEARING_DEG`. pyroomacoustics is
imported when a room is first simulated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sori.core.errors import DependencyError
from sori.hearing.audio.format import RATE_HZ

ROOM_M = (6.0, 5.0, 2.7)
"""Length, width and height of the room, in metres: a Korean apartment's living room."""
ARRAY_CENTRE_M = (2.0, 1.5, 1.0)
"""Where the array's centre is, in metres from the room's corner."""
ARRAY_RADIUS_M = 0.032
"""Radius of the circle the microphones sit on (the ReSpeaker USB Mic Array v2.0's)."""
TALKER_HEIGHT_M = 1.5
"""Height of the talker's mouth: standing short or seated tall, above the array."""
TALKER_BEARING_DEG = 60.0
"""Direction of the talker from the array's centre, counter-clockwise from +x."""
INTERFERER_BEARING_DEG = 160.0
INTERFERER_RANGE_M = 1.5
"""Direction and horizontal distance of the interferer from the array's centre."""
INTERFERER_HEIGHT_M = 1.2
EARLY_MS = 50.0
"""The direct sound and the reflections this soon after it are heard as the voice itself
(the early part a dereverberator keeps); later ones are the reverberation."""
RT60_S = (0.15, 1.2)
"""Reverberation times the room can take: below 0.15 s the walls would have to absorb
more than everything; above 1.2 s the image sources take tens of seconds to compute."""
DISTANCE_M = (0.6, 3.5)
"""Talker distances that fit the room along its bearing, above the array."""
LEAD_S = (0, 30)
"""How long the interferer may play alone first: up to half a minute of television."""
MAX_MICS = 8


@dataclass(frozen=True)
class RoomSetup:
    """The room of one simulation (see the module for where things stand)."""

    rt60_s: float = 0.4
    """Reverberation time the walls are chosen for, in seconds."""
    distance_m: float = 2.0
    """From the array's centre to the talker's mouth, in metres."""
    mics: int = 1
    """Microphones: 1 at the array's centre, or that many on its circle."""
    lead_s: float = 0.0
    """Seconds the interferer plays alone before the talker begins (a television on
    before the command); the recording starts with them."""


@dataclass(frozen=True)
class RoomRecording:
    """What the microphones heard."""

    channels: np.ndarray
    """Float32 samples at 16 kHz, shaped (samples, mics), at the dry speech's scale (the
    talker's reverberant voice at microphone 0 has the dry speech's RMS)."""
    early: np.ndarray
    """Microphone 0's direct sound and first `EARLY_MS` of reflections of the talker, on
    the same scale and time line: the target of dereverberation."""


def mic_positions(mics: int) -> np.ndarray:
    """The microphones' positions relative to the array's centre, in metres, shaped
    (mics, 3): one at the centre, or `mics` on a circle of `ARRAY_RADIUS_M`, the first on
    -x and the next counter-clockwise, so that 4 are the ReSpeaker USB Mic Array's in its
    channel order (sori.hearing.audio.array.BOARDS["respeaker-usb-4mic"])."""
    if mics == 1:
        return np.zeros((1, 3))
    angles = np.pi + 2 * np.pi * np.arange(mics) / mics
    return np.stack(
        [ARRAY_RADIUS_M * np.cos(angles), ARRAY_RADIUS_M * np.sin(angles), np.zeros(mics)], axis=1
    )


def talker_position(distance_m: float) -> np.ndarray:
    """Where the talker's mouth is, `distance_m` from the array's centre, in room metres."""
    return _around_array(TALKER_BEARING_DEG, distance_m, TALKER_HEIGHT_M)


def simulate_room(
    speech: np.ndarray,
    setup: RoomSetup,
    interferer: np.ndarray | None = None,
    snr_db: float = 0.0,
) -> RoomRecording:
    """`speech` (float, mono, 16 kHz) said in the room of `setup`, with `interferer` (cut
    or looped to the recording's length) playing at its place `snr_db` below the talker,
    both as microphone 0 hears them while the talker speaks. The interferer plays alone
    for `setup.lead_s` first; the recording is longer than `speech` by that and by the
    room's reverberation."""
    try:
        import pyroomacoustics as pra
    except ImportError:
        raise DependencyError(
            "a simulated room needs pyroomacoustics: pip install pyroomacoustics"
        ) from None
    lead = round(setup.lead_s * RATE_HZ) if interferer is not None else 0
    speech = np.concatenate([np.zeros(lead), np.asarray(speech, dtype=np.float64)])
    absorption, max_order = pra.inverse_sabine(setup.rt60_s, ROOM_M)
    room = pra.ShoeBox(ROOM_M, fs=RATE_HZ, materials=pra.Material(absorption), max_order=max_order)
    room.add_microphone_array((np.asarray(ARRAY_CENTRE_M) + mic_positions(setup.mics)).T)
    room.add_source(talker_position(setup.distance_m), signal=speech)
    if interferer is not None:
        noise = np.resize(np.asarray(interferer, dtype=np.float64), speech.shape)
        place = _around_array(INTERFERER_BEARING_DEG, INTERFERER_RANGE_M, INTERFERER_HEIGHT_M)
        room.add_source(place, signal=noise)
    room.compute_rir()
    heard = room.simulate(return_premix=True)  # (sources, mics, samples)
    level = _rms(speech[lead:])  # the talker's, at microphone 0, from when they speak
    scale = level / (_rms(heard[0][0][lead:]) or 1.0)
    channels = heard[0] * scale
    if interferer is not None and _rms(heard[1][0][lead:]):
        channels = channels + heard[1] * (level / _rms(heard[1][0][lead:]) / 10 ** (snr_db / 20))
    impulse = room.rir[0][0]
    direct = int(np.argmax(np.abs(impulse)))
    early_taps = impulse[: direct + int(EARLY_MS * RATE_HZ / 1000)]
    early = np.zeros(channels.shape[1])
    voiced = np.convolve(speech, early_taps)[: len(early)] * scale
    early[: len(voiced)] = voiced
    return RoomRecording(channels.T.astype(np.float32), early.astype(np.float32))


def _around_array(bearing_deg: float, distance_m: float, height_m: float) -> np.ndarray:
    """A point `distance_m` (straight line) from the array's centre, at `height_m` above
    the floor, seen at `bearing_deg`."""
    centre = np.asarray(ARRAY_CENTRE_M)
    rise = height_m - centre[2]
    across = math.sqrt(max(distance_m**2 - rise**2, 0.0))
    bearing = math.radians(bearing_deg)
    return centre + np.array([across * math.cos(bearing), across * math.sin(bearing), rise])


def _rms(signal: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(signal)))) if signal.size else 0.0
