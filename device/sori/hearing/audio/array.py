"""Microphone arrays: where the microphones are, where the talker is, how to listen there.

Pure numpy over the bins of a short-time spectrum (sori.hearing.audio.front_end runs it
on the stream):

- `ArrayGeometry`: the microphones' positions, from a named board (`BOARDS`) or from
  `audio.array.mic_positions_m`, checked once.
- `DirectionFinder`: the talker's direction by SRP-PHAT. The speech frames' spatial
  covariance, less the noise's, is whitened per bin (PHAT) and scored against every
  direction of a grid (azimuth every `AZIMUTH_STEP_DEG`, a few elevations, because a
  talker stands above or below the array); the best azimuth wins. Subtracting the noise
  keeps a steady interferer (a television, a fan) from pulling the estimate to itself.
- `steering`, `delay_and_sum`, `mvdr`: beam weights for one direction. MVDR keeps the
  look direction undistorted and minimises everything else the noise covariance holds,
  so a point interferer heard between utterances gets a null.

Directions are far-field: a plane wave from azimuth θ (counter-clockwise from the
array's +x axis) and elevation φ. A two-microphone array cannot tell front from back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sori.core.errors import ConfigError
from sori.hearing.audio.format import RATE_HZ

SPEED_OF_SOUND_M_S = 343.0
"""Speed of sound in air at about 20 °C, in metres per second."""

BOARDS: dict[str, tuple[tuple[float, float, float], ...]] = {
    # ReSpeaker 2-Mics Pi HAT (Seeed 107100001): two MEMS microphones on the long edge of
    # the HAT. Seeed publishes no coordinates; 58 mm apart is read off the board drawing,
    # so measure yours and give mic_positions_m where it differs.
    "respeaker-2mic-hat": ((-0.029, 0.0, 0.0), (0.029, 0.0, 0.0)),
    # ReSpeaker 4-Mic Array for Raspberry Pi (Seeed 103030216): a square whose diagonal is
    # 81.27 mm (voice-engine's doa_respeaker_4mic_array.py, MIC_DISTANCE_4), so each
    # microphone sits 40.6 mm from the centre.
    "respeaker-4mic-hat": (
        (0.04064, 0.0, 0.0),
        (0.0, 0.04064, 0.0),
        (-0.04064, 0.0, 0.0),
        (0.0, -0.04064, 0.0),
    ),
    # ReSpeaker 6-Mic Circular Array kit for Raspberry Pi (Seeed 107990055): six
    # microphones on a circle of radius 46.3 mm, 60° apart (ODAS's
    # respeaker_6_mic_array.cfg from Seeed's wiki).
    "respeaker-6mic": tuple(
        (
            round(0.0463 * math.cos(math.radians(60 * k)), 5),
            round(0.0463 * math.sin(math.radians(60 * k)), 5),
            0.0,
        )
        for k in range(6)
    ),
    # ReSpeaker USB Mic Array v2.0 (XMOS XVF-3000, Seeed 107990053), raw-channel firmware
    # (channels 1-4 of 6_channels_firmware.bin, given in that order): four microphones on
    # a circle of radius 32 mm (ODAS's respeaker_usb_4_mic_array.cfg).
    "respeaker-usb-4mic": (
        (-0.032, 0.0, 0.0),
        (0.0, -0.032, 0.0),
        (0.032, 0.0, 0.0),
        (0.0, 0.032, 0.0),
    ),
}
"""Microphone positions of the boards `audio.array.geometry` names, in metres, channel
order, array frame."""

BOARD_CHANNELS: dict[str, dict[int, tuple[tuple[int, ...], tuple[int, ...]]]] = {
    # The Mic Array v2.0's 6_channels_firmware.bin (Seeed's wiki, respeaker/usb_4_mic_array):
    # channel 0 is the XMOS chip's own processed mono, 1-4 the raw microphones, 5 what the
    # array plays (merged playback).
    "respeaker-usb-4mic": {6: ((1, 2, 3, 4), (5,))},
    # The 6-Mic Circular Array kit's two AC108s give 8 input channels (Seeed's wiki): the
    # six microphones, then two echo channels of what its AC101 plays.
    "respeaker-6mic": {8: ((0, 1, 2, 3, 4, 5), (6, 7))},
}
"""How a board's driver lays out more channels than it has microphones, by the channels
captured: (the microphones' channels in the order of `BOARDS`, the playback's channels)."""

BOARD_DEVICES: dict[str, tuple[str, ...]] = {
    # The names a board's sound card goes by: ALSA's card name and id, as PortAudio lists
    # them, lower case.
    "respeaker-usb-4mic": ("respeaker 4 mic array", "arrayuac10"),
    "respeaker-2mic-hat": ("seeed-2mic-voicecard", "seeed2micvoicec"),
    "respeaker-4mic-hat": ("seeed-4mic-voicecard", "seeed4micvoicec"),
    "respeaker-6mic": ("seeed-8mic-voicecard", "seeed8micvoicec"),
}
"""How `sori setup` and `sori doctor` know a board among the sound devices. The USB
array's 1-channel firmware gives one channel, the chip's own beam: no array to Sori."""
UNSURE_BOARDS = {
    "respeaker-6mic": "the same driver serves the ReSpeaker 4-Mic Linear Array kit, whose "
    "microphone positions Sori does not know (give them as mic_positions_m)",
}
"""Why a board's sound card alone may not tell which board it is."""

MAX_EXTENT_M = 1.0
"""Farthest a microphone may be from another (a board, or a bar under a television)."""
MIN_SPACING_M = 0.002
"""Closest two microphones may be: closer, they hear the same and a beam divides by zero."""

AZIMUTH_STEP_DEG = 2.0
"""Resolution of the direction grid in azimuth."""
ELEVATIONS_DEG = (0.0, 25.0, 50.0)
"""Elevations of the grid: a talker level with the array, standing over it, close above."""
BAND_HZ = (300.0, 4000.0)
"""Frequencies the direction is found in: speech's strongest, where the microphones'
phase differences are large enough to measure and small enough not to alias much."""
LOADING = 1e-3
"""Diagonal loading of the noise covariance before MVDR inverts it, as a share of its
mean power per microphone: small arrays are superdirective at low frequencies, and the
loading keeps their gain on uncorrelated noise (the microphones' own hiss) bounded."""


@dataclass(frozen=True)
class ArrayGeometry:
    """The microphones of an array."""

    positions_m: np.ndarray
    """Positions in metres, shaped (microphones, 3), in channel order."""

    @property
    def channels(self) -> int:
        return len(self.positions_m)


def array_geometry(geometry: str, mic_positions_m: list[list[float]]) -> ArrayGeometry:
    """The array `audio.array` describes, by board name or by positions, checked: a
    ConfigError names what is wrong (both or neither given, a position that is not three
    numbers, microphones on top of each other or metres apart)."""
    if geometry and mic_positions_m:
        raise ConfigError(
            "audio.array: give geometry or mic_positions_m, not both "
            f"(geometry = {geometry!r} already places the microphones)"
        )
    if geometry:
        if geometry not in BOARDS:
            raise ConfigError(
                f"audio.array.geometry {geometry!r} is not a known board; use one of "
                f"{', '.join(BOARDS)} or give mic_positions_m"
            )
        return ArrayGeometry(np.array(BOARDS[geometry], dtype=np.float64))
    if not mic_positions_m:
        raise ConfigError(
            "audio.channels > 1 needs [audio.array]: geometry = one of "
            f"{', '.join(BOARDS)}, or mic_positions_m = [[x, y, z], ...] in metres"
        )
    for k, position in enumerate(mic_positions_m):
        if len(position) != 3:
            raise ConfigError(
                f"audio.array.mic_positions_m[{k}] must be [x, y, z] in metres, "
                f"got {len(position)} number(s)"
            )
    positions = np.array(mic_positions_m, dtype=np.float64)
    if len(positions) < 2:
        raise ConfigError("audio.array.mic_positions_m needs at least 2 microphones")
    apart = np.linalg.norm(positions[:, None] - positions[None], axis=-1)
    if apart.max() > MAX_EXTENT_M:
        raise ConfigError(
            f"audio.array.mic_positions_m: microphones {apart.max():.2f} m apart; positions "
            f"are in metres (45 mm is 0.045) and an array spans at most {MAX_EXTENT_M} m"
        )
    np.fill_diagonal(apart, np.inf)
    if apart.min() < MIN_SPACING_M:
        a, b = np.unravel_index(np.argmin(apart), apart.shape)
        raise ConfigError(
            f"audio.array.mic_positions_m: microphones {a} and {b} are "
            f"{apart.min() * 1000:.1f} mm apart; each needs a place of its own (in metres)"
        )
    return ArrayGeometry(positions)


@dataclass(frozen=True)
class ChannelLayout:
    """What each captured channel carries: a board's driver can give more channels than it
    has microphones (its own processed mix, what it plays)."""

    captured: int
    """Channels captured from the device (`audio.channels`), or in a replayed file."""
    microphones: tuple[int, ...]
    """The captured channel of each microphone, in the order of the positions."""
    playback: tuple[int, ...] = ()
    """Captured channels that carry what the board plays (a hardware loopback): sampled
    on the microphones' clock, the best reference an echo canceller can have."""

    @property
    def first_channels(self) -> bool:
        """Whether the microphones are the first channels, in order, and nothing else is
        captured: the frames pass to the front end as they are."""
        return self.microphones == tuple(range(self.captured))

    def as_captured(self, microphones: np.ndarray) -> np.ndarray:
        """The channels the board would give for its microphones' signals (samples,
        microphones): each in its channel, the others silent (a simulated room hears no
        playback and makes no chip's mix)."""
        if self.first_channels:
            return microphones
        out = np.zeros((len(microphones), self.captured), microphones.dtype)
        out[:, list(self.microphones)] = microphones
        return out

    def channel_name(self, microphone: int) -> str:
        """How a person finds `microphone` (an index into the positions) in `arecord`."""
        if self.first_channels:
            return f"microphone {microphone}"
        return f"microphone {microphone} (channel {self.microphones[microphone]})"


def channel_layout(
    captured: int,
    geometry: ArrayGeometry,
    board: str = "",
    mic_channels: list[int] | None = None,
    playback_channels: list[int] | None = None,
) -> ChannelLayout:
    """Which of `captured` channels are the microphones of `geometry` and which carry the
    board's playback: as `audio.array.mic_channels` and `playback_channels` say, else as
    the named `board`'s driver lays that many out (`BOARD_CHANNELS`), else the first
    channels, one per microphone. A ConfigError says what to set where they disagree."""
    known = BOARD_CHANNELS.get(board, {}).get(captured)
    if mic_channels:
        microphones = _channels("mic_channels", mic_channels, captured)
    elif known is not None:
        microphones = known[0]
    elif captured == geometry.channels:
        microphones = tuple(range(captured))
    else:
        raise ConfigError(_count_error(captured, geometry, board))
    if len(microphones) != geometry.channels:
        raise ConfigError(
            f"audio.array.mic_channels names {len(microphones)} channel(s) but [audio.array] "
            f"places {geometry.channels} microphones; give one channel per microphone, in "
            "the order of their positions"
        )
    if playback_channels:
        playback = _channels("playback_channels", playback_channels, captured)
    else:
        playback = known[1] if known is not None and not mic_channels else ()
    both = sorted(set(microphones) & set(playback))
    if both:
        raise ConfigError(
            f"audio.array.playback_channels: channel {both[0]} is also a microphone's; the "
            "playback channels carry what the board plays, not what a microphone hears"
        )
    return ChannelLayout(captured, microphones, playback)


def _channels(key: str, channels: list[int], captured: int) -> tuple[int, ...]:
    for channel in channels:
        if not 0 <= channel < captured:
            raise ConfigError(
                f"audio.array.{key}: channel {channel} is not captured; audio.channels = "
                f"{captured} counts them from 0 to {captured - 1}"
            )
    twice = [c for c in set(channels) if channels.count(c) > 1]
    if twice:
        raise ConfigError(f"audio.array.{key}: channel {twice[0]} is given twice")
    return tuple(channels)


def _count_error(captured: int, geometry: ArrayGeometry, board: str) -> str:
    """What to set when `captured` channels do not match the microphones."""
    layouts = BOARD_CHANNELS.get(board, {})
    if layouts:
        counts = " or ".join(str(n) for n in (geometry.channels, *layouts))
        return (
            f"audio.channels is {captured} but the {board} gives {counts} channels "
            f"(its {geometry.channels} microphones, or all its driver records); set "
            "audio.channels to one of those"
        )
    if captured < geometry.channels:
        return (
            f"audio.channels is {captured} but [audio.array] places {geometry.channels} "
            f"microphones; capture one channel per microphone (audio.channels = "
            f"{geometry.channels})"
        )
    return (
        f"audio.channels is {captured} but [audio.array] places {geometry.channels} "
        "microphones; say which captured channels are the microphones with "
        f"audio.array.mic_channels = {list(range(geometry.channels))} (counted from 0, in "
        "the order of the positions)"
    )


@dataclass(frozen=True)
class BoardFound:
    """A known microphone array among the sound devices."""

    board: str
    """Its `audio.array.geometry`."""
    channels: int
    """The `audio.channels` its driver gives."""
    device: str
    """The `audio.device` that names it: its name without the card's number, which can
    change from one boot to the next."""
    unsure: str = ""
    """Why its name alone may not tell the board (`UNSURE_BOARDS`); empty when it does."""


def driver_channels(board: str) -> int:
    """The channels the named board's driver gives: all it records (`BOARD_CHANNELS`),
    else one per microphone."""
    return max(BOARD_CHANNELS.get(board, {}), default=len(BOARDS[board]))


def boards_among(devices: Iterable[Mapping[str, Any]]) -> list[BoardFound]:
    """The known arrays among `devices` (sounddevice.query_devices() entries) that give
    their driver's channels, in the order listed."""
    found = []
    for info in devices:
        name = str(info.get("name", ""))
        for board, names in BOARD_DEVICES.items():
            channels = driver_channels(board)
            if (
                any(n in name.lower() for n in names)
                and info.get("max_input_channels", 0) >= channels
            ):
                device = name.split(" (hw:")[0]
                found.append(BoardFound(board, channels, device, UNSURE_BOARDS.get(board, "")))
    return found


def boards_plugged_in(
    query: Callable[[], Iterable[Mapping[str, Any]]] | None = None,
) -> list[BoardFound] | None:
    """The known arrays among this machine's sound devices (`boards_among`; `query`
    lists them, default sounddevice's); None where PortAudio is missing or cannot list
    them."""
    try:
        if query is None:
            from sori.hearing.audio.sources import import_sounddevice

            query = import_sounddevice().query_devices
        return boards_among(list(query()))
    except Exception:  # no PortAudio, no devices: nothing to tell, as on a server
        return None


def unit_vectors(azimuth_deg: np.ndarray, elevation_deg: np.ndarray) -> np.ndarray:
    """Unit vectors towards the given directions, shaped (directions, 3)."""
    az, el = np.radians(azimuth_deg), np.radians(elevation_deg)
    return np.stack((np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)), axis=-1)


def steering(geometry: ArrayGeometry, freqs_hz: np.ndarray, toward: np.ndarray) -> np.ndarray:
    """Far-field steering vectors of a source in direction `toward` (a unit vector), one
    per frequency: shaped (frequencies, microphones). A microphone nearer the source hears
    the wave earlier, by (position · direction) / c."""
    lead_s = geometry.positions_m @ toward / SPEED_OF_SOUND_M_S
    return np.exp(2j * np.pi * freqs_hz[:, None] * lead_s[None, :])


def plane_wave(signal: np.ndarray, geometry: ArrayGeometry, azimuth_deg: float = 0.0) -> np.ndarray:
    """`signal` as a plane wave from `azimuth_deg` (level with the array) reaches each
    microphone, with no room around: each channel shifted by its exact, fractional lead;
    shaped (samples, microphones). How a recording without a room of its own is heard by
    an array (`sori test`'s clean original)."""
    padded = len(signal) + 64
    spectrum = np.fft.rfft(signal, padded)
    freqs = np.fft.rfftfreq(padded, 1 / RATE_HZ)
    toward = unit_vectors(np.array([azimuth_deg]), np.zeros(1))[0]
    shifted = spectrum[:, None] * steering(geometry, freqs, toward)
    return np.fft.irfft(shifted, padded, axis=0)[: len(signal)]


def outer(spectrum: np.ndarray) -> np.ndarray:
    """A spectrum's spatial covariance, x xᴴ per bin: (bins, microphones) → (bins,
    microphones, microphones)."""
    return np.einsum("fm,fn->fmn", spectrum, spectrum.conj())


def power(covariance: np.ndarray) -> float:
    """The power a covariance (bins, microphones, microphones) holds: its diagonal,
    summed over bins and microphones."""
    return float(np.real(np.einsum("fmm->", covariance)))


def beam_power(weights: np.ndarray, covariance: np.ndarray) -> float:
    """The power a beam (`weights`, (bins, microphones)) gives out of the sound whose
    covariance is `covariance` (bins, microphones, microphones): w^H R w, summed over
    bins."""
    return float(np.real(np.einsum("fm,fmn,fn->", weights.conj(), covariance, weights)))


def delay_and_sum(look: np.ndarray) -> np.ndarray:
    """Weights that align and average the microphones for the steering vectors `look`
    (frequencies, microphones); the output is w^H x per bin."""
    return look / look.shape[1]


def mvdr(look: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Minimum-variance distortionless weights: unit gain towards `look` (frequencies,
    microphones), least power from `noise` (frequencies, microphones, microphones), the
    noise covariance, loaded on its diagonal (`LOADING`)."""
    channels = look.shape[1]
    per_microphone = np.real(np.trace(noise, axis1=1, axis2=2)) / channels
    loading = (LOADING * per_microphone + 1e-12)[:, None, None] * np.eye(channels)
    solved = np.linalg.solve(noise + loading, look[..., None])[..., 0]
    gain = np.einsum("fm,fm->f", look.conj(), solved)
    return solved / gain[:, None]


class DirectionFinder:
    """SRP-PHAT over a grid of directions (see the module), for spectra of `fft_size`
    points at `rate_hz`. The grid's phase table is built once: directions × bins of
    `BAND_HZ` × microphone pairs."""

    def __init__(self, geometry: ArrayGeometry, fft_size: int, rate_hz: int) -> None:
        freqs = np.fft.rfftfreq(fft_size, 1 / rate_hz)
        self.band = np.flatnonzero((freqs >= BAND_HZ[0]) & (freqs <= BAND_HZ[1]))
        """Indices of the bins the direction is found in."""
        self._geometry, self._band_hz = geometry, freqs[self.band]
        azimuths = np.arange(0.0, 360.0, AZIMUTH_STEP_DEG)
        self.azimuth_deg = np.tile(azimuths, len(ELEVATIONS_DEG))
        """Azimuth of each grid direction, in degrees."""
        elevation_deg = np.repeat(ELEVATIONS_DEG, len(azimuths))
        self.directions = unit_vectors(self.azimuth_deg, elevation_deg)
        """Unit vector of each grid direction, shaped (directions, 3)."""
        first, second = np.triu_indices(geometry.channels, k=1)
        self._pairs = (first, second)
        baseline = geometry.positions_m[second] - geometry.positions_m[first]
        lag_s = self.directions @ baseline.T / SPEED_OF_SOUND_M_S  # (directions, pairs)
        phase = 2 * np.pi * freqs[self.band][None, :, None] * lag_s[:, None, :]
        self._table = np.exp(1j * phase).astype(np.complex64).reshape(len(lag_s), -1)
        """exp(j 2π f Δτ) per direction, flattened over (bin, pair)."""

    def look(self, direction: int) -> np.ndarray:
        """Steering vectors towards the grid direction `direction`, over the bins of
        `band`: shaped (bins, microphones)."""
        return steering(self._geometry, self._band_hz, self.directions[direction])

    def find(
        self,
        speech: np.ndarray,
        noise: np.ndarray | None = None,
        allowed: np.ndarray | None = None,
    ) -> int:
        """Index of the grid direction the talker is in, from the speech frames' mean
        covariance `speech` (bins of `band`, microphones, microphones), less `noise`'s;
        among the directions `allowed` (a mask over the grid) when given, the highest that
        is a peak along the azimuth."""
        first, second = self._pairs
        cross = speech[:, first, second]
        whitened = cross / (np.abs(cross) + 1e-20)
        if noise is not None:
            cross = cross - noise[:, first, second]
            # each bin counts by the share of its power that is the talker's: bins the
            # noise drowns would otherwise vote as much as the clear ones
            heard = np.real(np.trace(speech, axis1=1, axis2=2))
            left = heard - np.real(np.trace(noise, axis1=1, axis2=2))
            share = np.clip(left / (heard + 1e-20), 0.0, 1.0)
            whitened = share[:, None] * cross / (np.abs(cross) + 1e-20)
        response = np.real(self._table @ whitened.astype(np.complex64).reshape(-1))
        if allowed is None:
            return int(np.argmax(response))
        # where a source is avoided, its skirt rises towards the avoided sector: the
        # highest allowed direction would be the sector's edge. A talker is a peak.
        around = response.reshape(len(ELEVATIONS_DEG), -1)
        peaks = (around >= np.roll(around, 1, axis=1)) & (around >= np.roll(around, -1, axis=1))
        chosen = allowed & peaks.reshape(-1)
        return int(np.argmax(np.where(chosen if chosen.any() else allowed, response, -np.inf)))
