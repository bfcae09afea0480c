"""Which microphones of an array carry sound, and how loud. A board's microphone can be
dead: a cracked solder joint, a driver that maps fewer slots than the HAT has, a ribbon
cable half in. Its channel then reads zeros (or a constant, or a hiss far under the
room), and a beam that weighs it in loses its share of the talker; the front end, which
listens through the first microphone until it has a direction, would hear nothing at all.

`ChannelWatch` measures each channel's power (its mean taken out, as a stuck channel
holds a constant) over windows of `WINDOW_S`, against a reference: the upper median of
the channels' powers, so that one channel gone loud (a crackling microphone, a finger on
it) does not make the others look dead. A channel that reads no sound at all
(`SILENT_DBFS`), or lies `DEAD_BELOW_DB` under the reference, for `DEAD_WINDOWS` windows
in a row is dead; one back within `ALIVE_WITHIN_DB` for as long is alive again. When
every channel is too quiet to tell (under `JUDGE_ABOVE_DBFS`), nothing is decided; when
most are silent, the others are alive whatever their levels. Healthy microphones of a
small array hear a room within a few decibels of each other, far from these margins.

A live microphone can also be loud or soft by many decibels: a mixer control set apart
from the others, a different part soldered in. Delay-and-sum then hears mostly that one,
and MVDR, which takes the microphones as alike, cancels part of the talker. Each live
channel's offset from the live channels' median level, averaged over the last
`OFFSET_WINDOWS`, is evened out (`ChannelChange.gains_db`) once it reaches `UNEVEN_DB`;
the spread of real parts (a few decibels) is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sori.hearing.audio.format import RATE_HZ

WINDOW_S = 0.1
"""Length of one measurement, in seconds."""
DEAD_WINDOWS = 5
"""Windows in a row a channel must be dead in to be left out (half a second: longer
than a tap or a click on one microphone)."""
DEAD_BELOW_DB = 30.0
"""How far under the reference a dead channel lies. Healthy microphones a few
centimetres apart hear a talker 30 cm away within 3 dB of each other; a microphone
whose gain is set 20 dB wrong still carries the talker."""
ALIVE_WITHIN_DB = 10.0
"""How close to the reference a dead channel must come back to be alive again."""
SILENT_DBFS = -100.0
"""Power under which a channel carries nothing, in dB of full scale: 16-bit samples
that move by one step are at about -92 dBFS; a microphone in a quiet room, -80 or more."""
JUDGE_ABOVE_DBFS = -90.0
"""Some channel must be over this for any verdict: digital silence on every channel
(a file's lead-in, a muted source) says nothing of the microphones."""
UNEVEN_DB = 6.0
"""Offset from the others at which a live channel's gain is evened out: MEMS parts of
one type are within ±1-3 dB of each other."""
OFFSET_WINDOWS = 30
"""Windows a channel's offset is averaged over (3 s; fewer at the start)."""
RE_EVEN_DB = 3.0
"""How far the averaged offset must move from the correction in use to change it (each
change makes the beam learn the room again)."""


@dataclass(frozen=True)
class ChannelChange:
    """Which channels are live after a verdict, and the levels that led to it."""

    live: tuple[int, ...]
    """Indices of the channels that carry sound, ascending."""
    level_dbfs: tuple[float, ...]
    """Each channel's power in the last window, in dB of full scale."""
    reference_dbfs: float
    """The reference the levels were held against, in dB of full scale."""
    gains_db: tuple[float, ...]
    """The gain that evens out each channel, in dB (0 for those within `UNEVEN_DB`)."""

    def describe(self, channel: int) -> str:
        """What `channel`'s level says, for a person: "digital silence" or how far under
        the others it lies."""
        level = self.level_dbfs[channel]
        if level < SILENT_DBFS:
            return "digital silence"
        return f"{self.reference_dbfs - level:.0f} dB under the others"


class ChannelWatch:
    """The health of `channels` microphones, from the frames they give (see the module).
    Not thread-safe: the audio loop calls `hear` on each frame."""

    def __init__(self, channels: int) -> None:
        self.live = tuple(range(channels))
        """The channels that carry sound, as last decided."""
        self._window = round(WINDOW_S * RATE_HZ)
        self._count = 0
        self._sum = np.zeros(channels)
        self._squares = np.zeros(channels)
        self._dead_run = np.zeros(channels, np.int64)
        self._alive_run = np.zeros(channels, np.int64)
        self.gains_db = np.zeros(channels)
        """The gains in use, as last decided (see `ChannelChange.gains_db`)."""
        self._offset_db = np.zeros(channels)
        self._offset_windows = np.zeros(channels, np.int64)

    def hear(self, block: np.ndarray) -> ChannelChange | None:
        """One frame (float, shaped (samples, channels), as the microphones give it); a
        `ChannelChange` when a window it ends changes which channels are live or their
        gains, else None."""
        change = None
        taken = 0
        while taken < len(block):
            step = min(self._window - self._count, len(block) - taken)
            part = block[taken : taken + step]
            self._sum += part.sum(axis=0)
            self._squares += np.einsum("sc,sc->c", part, part)
            self._count += step
            taken += step
            if self._count == self._window:
                change = self._judge() or change
        return change

    def _judge(self) -> ChannelChange | None:
        mean = self._sum / self._count
        power = np.maximum(self._squares / self._count - mean**2, 0.0)
        self._count = 0
        self._sum[:] = 0.0
        self._squares[:] = 0.0
        level_db = 10 * np.log10(power + 1e-30)
        if level_db.max() < JUDGE_ABOVE_DBFS:
            return None
        reference_db = float(np.sort(level_db)[::-1][(len(level_db) - 1) // 2])
        # with most channels silent there is no level to hold the rest against
        compared = reference_db >= JUDGE_ABOVE_DBFS
        silent = level_db < SILENT_DBFS
        dead = silent | (compared & (level_db <= reference_db - DEAD_BELOW_DB))
        alive = ~silent & (~compared | (level_db >= reference_db - ALIVE_WITHIN_DB))
        self._dead_run = np.where(dead, self._dead_run + 1, 0)
        self._alive_run = np.where(alive, self._alive_run + 1, 0)
        live = set(self.live)
        live -= set(np.flatnonzero(self._dead_run >= DEAD_WINDOWS).tolist())
        live |= set(np.flatnonzero(self._alive_run >= DEAD_WINDOWS).tolist())
        live_now = tuple(sorted(live)) if live else self.live
        heard = np.zeros(len(level_db), bool)
        heard[list(live_now)] = True
        heard &= ~dead
        gains = self._even_out(level_db, heard) if compared else self.gains_db
        if live_now == self.live and np.array_equal(gains, self.gains_db):
            return None
        self.live, self.gains_db = live_now, gains
        return ChannelChange(live_now, tuple(level_db.tolist()), reference_db, tuple(gains))

    def _even_out(self, level_db: np.ndarray, heard: np.ndarray) -> np.ndarray:
        """The gains that even out the channels `heard` (a mask: live, and not dead in
        this window) given one window's levels: the ones in use unless some channel's
        averaged offset moved `RE_EVEN_DB` from them."""
        self._offset_windows[~heard] = 0  # a channel back from the dead starts afresh
        if heard.sum() < 2:
            return np.zeros_like(self.gains_db)
        self._offset_windows[heard] = np.minimum(self._offset_windows[heard] + 1, OFFSET_WINDOWS)
        offset = level_db[heard] - np.median(level_db[heard])
        self._offset_db[heard] += (offset - self._offset_db[heard]) / self._offset_windows[heard]
        settled = self._offset_windows >= DEAD_WINDOWS
        wanted = np.where(settled & (np.abs(self._offset_db) >= UNEVEN_DB), -self._offset_db, 0.0)
        wanted = np.where(settled, wanted, self.gains_db)
        if np.all(np.abs(wanted - self.gains_db) < RE_EVEN_DB):
            return self.gains_db
        return np.round(wanted, 1)
