"""Which utterances the recognizer hears: mute, and the wake phrase.

Turn logic between the voice detector and the recognizer (floor 3); the hearing pipeline
(`sori.hearing.pipeline.Hearing`) asks it at each utterance. The gate (`Gate`, such as
`sori.serving.conversation.listening.Conversation`) says whether audio is heard at all (muted:
nothing is) and whether an utterance that begins now is a command without a wake phrase
(a listening or follow-up window is open). With a wake detector as well, every utterance
also goes through the detector; the phrase it finds opens the utterance, and the audio
after the phrase is handed back for the recognizer, so "소리야 불 켜줘" is understood as
"불 켜줘".

A wake phrase follows a pause, so a detector may hear only an utterance's start. While
Sori speaks there is no pause: the voice detector hears what echo cancellation leaves of
the reply and a user's "소리야" over it as one utterance. So while the gate's `echo` says
Sori is speaking, a fresh detector stream begins every `WakeDetector.rearm_s` of the
utterance (their windows overlap), and a phrase anywhere in it stops the reply (barge-in,
the daemon's part). A phrase heard then is Sori's own voice, and ignored, when echo
cancellation took much more of Sori's echo out of its frames than it left in them
(`ECHO_SHARE_DB`), or when it is in what Sori itself was saying (`WakeDetector.heard_in`
on the player's record). That second check decodes again, so it waits for the next frame:
the phrase comes first as `WakeHeard`, on which the daemon ducks the reply, then as
`WakeDetected` or `WakeDismissed`. The same goes for the rest of a woken utterance once Sori
answers its command (`listen_again`): the answer often begins before the pause that would
end the utterance.

A board that captures its own playback has every sound it plays cancelled, not only
Sori's: music another program plays through it too (`AudioFrame.speaker_sounded`). What
cancellation leaves of a song with words in it is speech to the voice detector, above all
in the first seconds while the filters learn, so a "소리야" said over the song may fall
inside an utterance the song opened. Streams begin every `rearm_s` while the speaker
sounds, as while Sori speaks; a phrase heard while Sori is silent wakes at once, since the
own-voice checks are about Sori's voice.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from sori.core.clock import Clock
from sori.core.events import WakeDetected, WakeDismissed, WakeHeard, WakeListenEnded
from sori.hearing.audio.denoise_decision import SILENCE_DBFS, band_levels
from sori.hearing.audio.format import AudioFrame
from sori.hearing.audio.played import PlayedAudio
from sori.hearing.wake.base import Detection, WakeDetector, WakeStream

log = logging.getLogger(__name__)

ECHO_LATENCY_S = 0.3
"""How late the microphone may hear what the speaker was handed, in seconds (the output's
and the input's buffers): Sori's audio that long before a phrase is looked in too."""
ECHO_SHARE_DB = 6.0
"""A phrase whose frames lost this much more of Sori's echo to echo cancellation than was
left in them (in dB; 6: four times as much) was said by Sori: what the spotter heard is
the canceller's residue of Sori's voice. A user heard over the reply loses about as much
echo as is left of the user's voice (0 dB) when the two are equally loud."""
MAX_WAKE_FRAMES = 500
"""Latest frames of an utterance kept for the command after a wake phrase (10 s of 20 ms)."""


class Gate(Protocol):
    """Who is listened to (`sori.serving.conversation.listening.Conversation`): whether audio
    reaches the recognizer at all, and whether an utterance is a command without a wake phrase."""

    muted: bool
    echo: PlayedAudio | None
    """What Sori's speaker played, which the microphone hears back; None: nothing."""

    def is_open(self, t_ns: int) -> bool:
        """Whether an utterance beginning at stream time `t_ns` (clock-comparable) is
        heard as a command without a wake phrase."""
        ...


class NeverOpen:
    """A gate that hears commands only after a wake phrase (`sori wake`, benchmarks)."""

    muted = False
    echo = None

    def is_open(self, t_ns: int) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Woken:
    """A wake phrase found inside an utterance."""

    event: WakeDetected
    """The detection, in clock-comparable stream times."""
    after: list[AudioFrame]
    """The utterance's frames so far that end after the phrase: the command's start."""
    again: bool = False
    """The phrase was reported before, in the utterance another talker took over (the
    array's beam turned to them late): this one opens the command, with no new event."""


@dataclass(slots=True)
class _Spot:
    """One detector stream over part of an utterance."""

    stream: WakeStream
    first_ns: int
    """Stream time of its first frame, without the origin."""


@dataclass
class _Utterance:
    """Bookkeeping of one utterance heard by the wake detector."""

    utterance_id: int
    spots: list[_Spot]
    """Its detector streams still listening, oldest first."""
    last_spot_ns: int
    """Stream time where the newest stream began."""
    room_dbfs: float = SILENCE_DBFS
    """The room's speech-band level before the utterance (`heard_estimate`)."""
    frames: deque[AudioFrame] = field(default_factory=lambda: deque(maxlen=MAX_WAKE_FRAMES))
    """Its latest frames: the command after a wake phrase is fed from here."""
    woken: bool = False
    """A wake phrase has opened it: no stream listens for another (until Sori answers
    the command, `WakeGate.listen_again`)."""
    pending: tuple[_Spot, WakeDetected] | None = None
    """A phrase heard over Sori's voice, told from Sori's own with the next frame; one at
    a time (a stream's detection meanwhile is not listened to)."""


class WakeGate:
    """Mute and the wake phrase for one hearing stream (see the module docstring).

    Without a gate nothing is muted and every utterance is heard; without a detector the
    gate only mutes, and every utterance is heard too."""

    def __init__(
        self, gate: Gate | None, detector: WakeDetector | None, clock: Clock, origin_ns: int = 0
    ) -> None:
        self.gate = gate
        self.detector = detector
        self.clock = clock
        self.origin_ns = origin_ns
        """Clock time of stream time 0; detection times are shifted by it."""
        self.busy_ns = 0
        """Processing time spent in the wake detector, in nanoseconds."""
        self._utt: _Utterance | None = None
        self._reported: tuple[int, int] = (0, 0)
        """Clock times where the last phrase reported began and ended."""

    @property
    def muted(self) -> bool:
        return self.gate is not None and self.gate.muted

    @property
    def gated(self) -> bool:
        """Utterances need the wake phrase or an open window."""
        return self.detector is not None and self.gate is not None

    @property
    def listening(self) -> bool:
        """An utterance is open with the detector."""
        return self._utt is not None

    def hears(self, audio_start_ns: int) -> bool:
        """Whether the recognizer hears an utterance beginning at `audio_start_ns` from its
        start (ungated, or a window is open then)."""
        return not self.gated or self.gate.is_open(audio_start_ns)  # type: ignore[union-attr]

    def sori_speaks(self, frame: AudioFrame) -> bool:
        """Whether the microphone may hear Sori's own voice in `frame` (the gate's echo:
        live, while the speaker plays and just after)."""
        echo = self.gate.echo if self.gate is not None else None
        return echo is not None and echo.speaking(self.origin_ns + frame.start_ns)

    def listen_again(self) -> None:
        """The open utterance's command is over and Sori answers it: listen for a phrase
        through the rest of the utterance, as in one that began while Sori spoke."""
        if self._utt is not None:
            self._utt.woken = False

    def begin(self, utterance_id: int, first: AudioFrame, room_dbfs: float = SILENCE_DBFS) -> None:
        """An utterance began with frame `first` (the pre-roll's), in a room of speech-band
        level `room_dbfs`: the detector hears it (feed it that frame and the rest).
        Nothing happens when ungated."""
        if not self.gated:
            return
        spot = self._spot(first, within=False)
        self._utt = _Utterance(utterance_id, [spot], first.start_ns, room_dbfs)

    def feed(self, frame: AudioFrame) -> list[Woken | WakeHeard | WakeDismissed | WakeListenEnded]:
        """One more frame of the open utterance: the wake phrase if it ends here (`Woken`);
        one heard over Sori's voice first comes as `WakeHeard`, and is told from Sori's own
        voice with the next frame (`Woken` or `WakeDismissed`). `WakeListenEnded` when no
        stream listens any more, with no phrase heard and none to open again."""
        utt = self._utt
        assert utt is not None
        utt.frames.append(frame)
        heard: list[Woken | WakeHeard | WakeDismissed | WakeListenEnded] = []
        if utt.pending is not None:
            t0 = time.perf_counter_ns()
            settled = self._settle(utt)
            self.busy_ns += time.perf_counter_ns() - t0
            if isinstance(settled, Woken):
                return [settled]
            heard.append(settled)
        if self._rearms(utt, frame):
            utt.spots.append(self._spot(frame, within=True))
            utt.last_spot_ns = frame.start_ns
        t0 = time.perf_counter_ns()
        for spot in utt.spots:
            found = spot.stream.feed(frame.pcm)
            event = self._heard(utt, spot, found) if utt.pending is None else None
            if isinstance(event, WakeDetected):
                heard.append(self._woken(utt, spot, event))
                break
            if event is not None:
                heard.append(event)
        else:
            listened = bool(utt.spots)
            utt.spots = [spot for spot in utt.spots if not spot.stream.done]
            if listened and not utt.spots and self._stops_listening(utt, frame):
                heard.append(WakeListenEnded(self.clock.now_ns(), utt.utterance_id))
        self.busy_ns += time.perf_counter_ns() - t0
        return heard

    def finish(self, until_ns: int | None = None) -> list[WakeDetected | WakeHeard | WakeDismissed]:
        """The utterance ended: a wake phrase found at its very end (nothing follows it),
        and one heard over Sori's voice told from Sori's own at once. With `until_ns`
        (clock time), another talker took the utterance over there: a phrase that begins
        there or later is theirs, heard again in their utterance, and left out of this one
        (one already `WakeHeard` is dismissed here)."""
        utt = self._utt
        assert utt is not None
        self._utt = None
        t0 = time.perf_counter_ns()
        events: list[WakeDetected | WakeHeard | WakeDismissed] = []
        woke = False
        if utt.pending is not None:
            _, pending = utt.pending
            if until_ns is not None and pending.start_ns >= until_ns:
                utt.pending = None
                events.append(WakeDismissed(self.clock.now_ns(), utt.utterance_id, pending.phrase))
            else:
                woke = self._report_settled(utt, events)
        for spot in utt.spots:
            found = spot.stream.finish()  # every stream finishes: its spotter is free again
            if woke:
                continue
            if until_ns is not None:
                found = [d for d in found if self._clock_ns(spot, d.start_s) < until_ns]
            event = self._heard(utt, spot, found)
            if isinstance(event, WakeHeard):
                events.append(event)
                woke = self._report_settled(utt, events)
            elif event is not None:  # heard with Sori silent: it wakes
                woke = True
                if not self._again(event):
                    events.append(event)
        self.busy_ns += time.perf_counter_ns() - t0
        return events

    def drop(self) -> None:
        """Muted: forget the open utterance."""
        if self._utt is not None:
            for spot in self._utt.spots:
                spot.stream.close()
        self._utt = None

    def _spot(self, first: AudioFrame, within: bool) -> _Spot:
        t0 = time.perf_counter_ns()
        stream = self.detector.open_stream(within=within)  # type: ignore[union-attr]
        self.busy_ns += time.perf_counter_ns() - t0
        return _Spot(stream, first.start_ns)

    def _rearms(self, utt: _Utterance, frame: AudioFrame) -> bool:
        """Whether a fresh stream begins with `frame`: the speaker sounds (Sori speaks, or
        the board plays), nothing has woken the utterance yet, and no stream hears a phrase
        beginning here."""
        if utt.woken or not self._speaker_sounds(frame):
            return False
        if not utt.spots:
            return True
        rearm_s = self.detector.rearm_s  # type: ignore[union-attr]
        return rearm_s is not None and frame.start_ns - utt.last_spot_ns >= int(rearm_s * 1e9)

    def _stops_listening(self, utt: _Utterance, frame: AudioFrame) -> bool:
        """Whether the utterance, its last stream done with `frame`, is listened to no more:
        nothing woke it, no phrase waits to be told from Sori's voice, and the speaker is
        silent (while it sounds, a fresh stream opens with the next frame)."""
        return not (utt.woken or utt.pending is not None or self._speaker_sounds(frame))

    def _speaker_sounds(self, frame: AudioFrame) -> bool:
        """Whether the speaker sounds in `frame`: Sori speaks, or the board plays."""
        return frame.speaker_sounded or self.sori_speaks(frame)

    def _heard(
        self, utt: _Utterance, spot: _Spot, found: list[Detection]
    ) -> WakeDetected | WakeHeard | None:
        """The first of `spot`'s detections. Heard while Sori speaks, it may be Sori's own
        voice: ignored when it is mostly echo that echo cancellation took out
        (`ECHO_SHARE_DB`), else `WakeHeard`, and whether Sori itself said it is decided
        with the next frame (`_settle`), after the daemon has ducked the reply."""
        if not found:
            return None
        event = self._detected(utt, spot, found[0])
        echo = self.gate.echo if self.gate is not None else None
        if echo is None or not echo.speaking(event.start_ns):
            return event
        if self._mostly_echo(utt, event):
            log.info("wake phrase %r heard in what echo cancellation left of Sori's voice; "
                     "ignored", event.phrase)  # fmt: skip
            return None
        utt.pending = (spot, event)
        return WakeHeard(self.clock.now_ns(), utt.utterance_id, event.phrase)

    def _settle(self, utt: _Utterance) -> Woken | WakeDismissed:
        """The pending phrase: Sori's own voice when what Sori was saying then (the
        speaker's latency allowed for before it), at the level the microphone heard,
        checks as the phrase too; else it wakes the utterance."""
        assert utt.pending is not None
        spot, event = utt.pending
        utt.pending = None
        echo, detector = self.gate.echo, self.detector  # type: ignore[union-attr]
        assert detector is not None  # a phrase was detected
        start_ns = event.start_ns - int(ECHO_LATENCY_S * 1e9)
        heard = b"".join(f.pcm for f in self._frames(utt, start_ns, event.end_ns))
        said = echo.said_as_heard(start_ns, event.end_ns, heard) if echo is not None else None
        if said is not None and detector.heard_in(event.phrase, said, event.score):
            log.info("wake phrase %r heard in Sori's own voice; ignored", event.phrase)
            return WakeDismissed(self.clock.now_ns(), utt.utterance_id, event.phrase)
        return self._woken(utt, spot, replace(event, t_ns=self.clock.now_ns()))

    def _report_settled(
        self, utt: _Utterance, events: list[WakeDetected | WakeHeard | WakeDismissed]
    ) -> bool:
        """Settle the pending phrase (`_settle`) and add the event it reports to `events`:
        none for one reported before (`Woken.again`). Whether it woke the utterance."""
        settled = self._settle(utt)
        if isinstance(settled, WakeDismissed):
            events.append(settled)
            return False
        if not settled.again:
            events.append(settled.event)
        return True

    def _mostly_echo(self, utt: _Utterance, event: WakeDetected) -> bool:
        """Whether echo cancellation took `ECHO_SHARE_DB` more echo out of the phrase's
        frames than is left in them."""
        frames = list(self._frames(utt, event.start_ns, event.end_ns))
        removed = sum(f.echo_energy for f in frames)
        if not removed:
            return False
        left = sum(float(np.square(np.frombuffer(f.pcm, "<i2"), dtype=np.float64).sum())
                   for f in frames)  # fmt: skip
        return removed >= left * 10 ** (ECHO_SHARE_DB / 10)

    def _frames(self, utt: _Utterance, start_ns: int, end_ns: int) -> Iterator[AudioFrame]:
        """The utterance's kept frames that overlap clock times `start_ns` to `end_ns`."""
        for f in utt.frames:
            if self.origin_ns + f.end_ns > start_ns and self.origin_ns + f.start_ns < end_ns:
                yield f

    def _woken(self, utt: _Utterance, spot: _Spot, event: WakeDetected) -> Woken:
        """`spot` heard a phrase: the utterance is woken, the other streams stop."""
        for other in utt.spots:
            if other is not spot:
                other.stream.close()
        utt.spots = [spot] if not spot.stream.done else []
        utt.woken = True
        after = [f for f in utt.frames if self.origin_ns + f.end_ns > event.end_ns]
        utt.frames.clear()
        return Woken(event, after, self._again(event))

    def _again(self, event: WakeDetected) -> bool:
        """Whether `event` is the phrase reported last, heard again: an utterance another
        talker took over ends where their voice began, and theirs hears it from there.
        Else it is the one reported last from now on."""
        start, end = self._reported
        if event.start_ns < end and event.end_ns > start:
            return True
        self._reported = (event.start_ns, event.end_ns)
        return False

    def _detected(self, utt: _Utterance, spot: _Spot, found: Detection) -> WakeDetected:
        start_ns, end_ns = self._clock_ns(spot, found.start_s), self._clock_ns(spot, found.end_s)
        return WakeDetected(
            self.clock.now_ns(), utt.utterance_id, found.phrase, start_ns, end_ns, found.score,
            self._level_dbfs(utt, start_ns, end_ns) - utt.room_dbfs,
        )  # fmt: skip

    def _level_dbfs(self, utt: _Utterance, start_ns: int, end_ns: int) -> float:
        """The phrase's mean power in the speech band, in dBFS (as the room is measured)."""
        pcm = b"".join(f.pcm for f in self._frames(utt, start_ns, end_ns))
        levels = band_levels(pcm)
        if not len(levels):
            return SILENCE_DBFS
        return float(10 * np.log10(np.mean(np.power(10.0, levels / 10))))

    def _clock_ns(self, spot: _Spot, seconds: float) -> int:
        """Clock time `seconds` into `spot`'s stream."""
        return self.origin_ns + spot.first_ns + int(seconds * 1e9)
