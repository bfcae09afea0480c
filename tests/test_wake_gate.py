"""The wake gate's own-voice decision while Sori speaks, with a detector that hears a
phrase in every stream's second second: what echo cancellation took out of the phrase's
frames says whether the phrase was Sori's, and what Sori was saying then is checked with
the next frame, after `WakeHeard` has let the daemon duck the reply. And a phrase inside
an utterance that what the board plays opened, with Sori silent."""

from __future__ import annotations

import numpy as np
import pytest

from sori.core.clock import FakeClock
from sori.core.events import WakeDetected, WakeDismissed, WakeHeard, WakeListenEnded
from sori.hearing.audio.format import AudioFrame
from sori.hearing.audio.played import PlayedAudio
from sori.hearing.wake.base import Detection
from sori.hearing.wake_gate import ECHO_SHARE_DB, NeverOpen, WakeGate, Woken

S = 1_000_000_000
FRAME_NS = 20_000_000


class SecondSecond:
    """A stream that hears "소리야" from 1.0 to 1.4 s of its audio."""

    def __init__(self):
        self.fed_ns = 0
        self.done = False

    def feed(self, pcm):
        self.fed_ns += len(pcm) // 2 * S // 16000
        if self.done or self.fed_ns < int(1.5 * S):
            return []
        self.done = True
        return [Detection("소리야", 1.0, 1.4, 5.0)]

    def finish(self):
        return []

    def close(self):
        self.done = True


class Detector:
    name, phrases, rearm_s = "stub", ["소리야"], 1.0

    def __init__(self, sori_said_it: bool = False):
        self.sori_said_it = sori_said_it
        self.checked: list[int] = []
        """Bytes of Sori's audio each own-voice check heard."""

    def open_stream(self, within=False):
        return SecondSecond()

    def heard_in(self, phrase, pcm, heard_score):
        self.checked.append(len(pcm))
        return self.sori_said_it  # whether Sori's record sounds like the phrase


class Speaking:
    """A gate whose speaker plays all along, so every frame may hold Sori's echo."""

    muted = False

    def __init__(self):
        self.echo = PlayedAudio()
        self.echo.add(0, np.full(16000 * 10, 3000, "<i2").tobytes(), 16000)

    def is_open(self, t_ns):
        return False


def heard(echo_db: float, detector: Detector | None = None, seconds: float = 2.0) -> list:
    """(frame index, what the gate made of it) through an utterance of `seconds` whose
    frames lost `echo_db` more echo energy to the canceller than was left in them; its
    end as index -1."""
    gate = WakeGate(Speaking(), detector or Detector(), FakeClock())
    left = np.full(320, 100, "<i2")
    removed = float(left.astype(np.float64) @ left) * 10 ** (echo_db / 10)
    count = int(seconds * S // FRAME_NS)
    frames = [AudioFrame(left.tobytes(), i * FRAME_NS, removed) for i in range(count)]
    gate.begin(0, frames[0])
    made = [(i, w) for i, f in enumerate(frames) for w in gate.feed(f)]
    return made + [(-1, e) for e in gate.finish()]


def wakes(echo_db: float) -> list:
    """Wake events of a 2 s utterance (see `heard`)."""
    return [w.event for _, w in heard(echo_db) if isinstance(w, Woken)]


def test_a_phrase_heard_in_what_echo_cancellation_left_of_sori_is_ignored():
    assert wakes(ECHO_SHARE_DB + 6) == []


def test_a_phrase_said_over_sori_as_loud_as_its_echo_wakes():
    (event,) = wakes(0.0)
    assert event.phrase == "소리야" and event.start_ns == 1 * S


def test_a_phrase_over_sori_is_heard_first_and_woken_with_the_next_frame():
    """The check of Sori's own audio comes a frame after `WakeHeard`: the daemon has
    ducked the reply by then. The command after the phrase loses nothing."""
    detector = Detector()
    (first, was_heard), (second, woken) = heard(0.0, detector)
    assert isinstance(was_heard, WakeHeard) and was_heard.phrase == "소리야"
    assert second == first + 1 and isinstance(woken, Woken)
    assert detector.checked  # Sori's audio was checked, after WakeHeard
    assert woken.after[0].start_ns <= int(1.4 * S) <= woken.after[0].end_ns
    assert woken.after[-1].start_ns == second * FRAME_NS


def test_a_phrase_in_sori_s_own_voice_is_dismissed_with_the_next_frame():
    (first, was_heard), (second, dismissed) = heard(0.0, Detector(sori_said_it=True))
    assert isinstance(was_heard, WakeHeard)
    assert second == first + 1 and isinstance(dismissed, WakeDismissed)
    assert dismissed.phrase == "소리야" and dismissed.utterance_id == was_heard.utterance_id


def test_a_phrase_heard_as_the_utterance_ends_is_settled_at_once():
    """Heard in the last frame: no next frame comes, so the end settles it."""
    made = heard(0.0, Detector(), seconds=1.5)
    assert [type(w) for _, w in made] == [WakeHeard, WakeDetected]
    assert made[-1][0] == -1


# -- while the board plays something else ------------------------------------------------

SAID = 7777
"""The sample value of the frames in which "소리야" is said."""


class Spotter:
    """A stream that hears "소리야" in the frames of `SAID`, as a spotter does: only when
    the stream began at most `rearm_s` before the phrase; with `spot_s`, it hears only
    that much audio."""

    def __init__(self, rearm_s: float, spot_s: float | None = None):
        self.rearm_ns = int(rearm_s * S)
        self.spot_ns = None if spot_s is None else int(spot_s * S)
        self.fed_ns = 0
        self.said_ns: int | None = None
        self.done = False

    def feed(self, pcm):
        saying = np.frombuffer(pcm, "<i2")[0] == SAID
        if saying and self.said_ns is None:
            self.said_ns = self.fed_ns
        self.fed_ns += len(pcm) // 2 * S // 16000
        self.done = self.done or (self.spot_ns is not None and self.fed_ns >= self.spot_ns)
        if self.done or self.said_ns is None or saying:
            return []
        self.done = True  # the phrase has ended
        if self.said_ns > self.rearm_ns:
            return []
        return [Detection("소리야", self.said_ns / S, (self.fed_ns - FRAME_NS) / S, 5.0)]

    def finish(self):
        return []

    def close(self):
        self.done = True


class SpotterDetector:
    name, phrases, rearm_s = "stub", ["소리야"], 1.0

    def __init__(self, spot_s: float | None = None):
        self.spot_s = spot_s

    def open_stream(self, within=False):
        return Spotter(self.rearm_s, self.spot_s)


def song_frames(echo_energy: float) -> list[AudioFrame]:
    """A 4 s utterance, "소리야" said 2.5-2.9 s into it, `echo_energy` taken out of every
    frame."""
    return [
        AudioFrame(np.full(320, SAID if 125 <= i < 145 else 100, "<i2").tobytes(), i * FRAME_NS,
                   echo_energy)
        for i in range(200)
    ]  # fmt: skip


def woken_in_song(echo_energy: float) -> list[WakeDetected]:
    """Wake phrases found in `song_frames`, with Sori silent (no record of anything
    played)."""
    gate = WakeGate(NeverOpen(), SpotterDetector(), FakeClock())
    frames = song_frames(echo_energy)
    gate.begin(0, frames[0])
    made = [w for f in frames for w in gate.feed(f)] + gate.finish()
    return [w.event if isinstance(w, Woken) else w for w in made]


def test_a_phrase_inside_an_utterance_the_board_s_playback_opened_wakes():
    """Another program plays a song through the board: what echo cancellation leaves of it
    opened the utterance 2.5 s before the user's "소리야". While the speaker sounds,
    streams begin within the utterance, as while Sori speaks, and the phrase wakes at once
    (no check against Sori's voice: Sori said nothing)."""
    (event,) = woken_in_song(echo_energy=1e6)
    assert isinstance(event, WakeDetected) and event.phrase == "소리야"
    assert 2.5 * S <= event.start_ns <= 2.5 * S + FRAME_NS


def test_with_the_speaker_silent_only_the_utterance_s_start_is_listened_to():
    """Nothing cancelled: the utterance is the user's, and a phrase starts it or is no
    wake phrase. Once its stream is done, the gate says it listens no more."""
    assert woken_in_song(echo_energy=0.0) == [WakeListenEnded(0, 0)]


@pytest.mark.parametrize(("sounded_s", "ended_s"), [(0.0, 1.5), (2.5, 3.5), (6.0, None)])
def test_the_gate_says_when_no_stream_listens_any_more(sounded_s, ended_s):
    """A 5 s utterance with no phrase (streams that hear 1.5 s each), the board's
    speaker sounding for its first `sounded_s`: while it sounds, a stream opens every
    second, so the utterance is listened to until the last of them is done; then the gate
    says so, once. It never does while the speaker sounds."""
    gate = WakeGate(NeverOpen(), SpotterDetector(spot_s=1.5), FakeClock())
    pcm = np.full(320, 100, "<i2").tobytes()
    frames = [
        AudioFrame(pcm, i * FRAME_NS, 1e6 if i * FRAME_NS < sounded_s * S else 0.0)
        for i in range(250)
    ]
    gate.begin(7, frames[0])
    said = [(i, e) for i, f in enumerate(frames) for e in gate.feed(f)] + [
        (-1, e) for e in gate.finish()
    ]
    expected = (
        [] if ended_s is None else [(round(ended_s * S / FRAME_NS) - 1, WakeListenEnded(0, 7))]
    )
    assert said == expected


def test_a_phrase_from_where_another_talker_took_the_utterance_over_is_left_to_theirs():
    """The beam turned to a new talker at `until_ns`: a phrase heard over Sori's voice
    from there on is theirs, heard again in their utterance, so this one dismisses it
    (the daemon unducks) instead of waking; one that began before is settled."""
    for until_s, expected in ((0.9, WakeDismissed), (1.2, WakeDetected)):
        gate = WakeGate(Speaking(), Detector(), FakeClock())
        left = np.full(320, 100, "<i2").tobytes()
        frames = [AudioFrame(left, i * FRAME_NS, 1e3) for i in range(75)]  # to 1.5 s
        gate.begin(0, frames[0])
        made = [w for f in frames for w in gate.feed(f)]
        assert [type(w) for w in made] == [WakeHeard]  # at 1.5 s, checked with the next
        (settled,) = gate.finish(until_ns=int(until_s * S))
        assert isinstance(settled, expected) and settled.phrase == "소리야"


def test_a_phrase_heard_again_after_a_takeover_opens_the_command_without_a_second_event():
    """The song's utterance woke at 2.5 s; the beam turned to the user late and split it
    at 1.5 s, and the user's utterance hears the same frames again: the phrase opens its
    command (`Woken.again`), and the daemon, told once, is not told twice."""
    gate = WakeGate(NeverOpen(), SpotterDetector(), FakeClock())
    frames = song_frames(echo_energy=1e6)
    gate.begin(0, frames[0])
    (first,) = [w for f in frames[:150] for w in gate.feed(f)]
    assert isinstance(first, Woken) and not first.again
    assert gate.finish(until_ns=int(1.5 * S)) == []
    gate.begin(1, frames[75])
    (second,) = [w for f in frames[75:150] for w in gate.feed(f)]
    assert isinstance(second, Woken) and second.again
    assert (second.event.start_ns, second.event.end_ns) == (
        first.event.start_ns,
        first.event.end_ns,
    )
    assert second.after[0].end_ns > second.event.end_ns  # the command after it is heard
