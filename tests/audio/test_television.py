"""A television across the room. The array's front end takes a source that talks from one
place for seconds as the room's (sori.hearing.audio.standing), nulls it, looks for the
talker away from it, and keeps its babble from opening utterances; a fan, or a user who
speaks again and again from one place, is no such source. A television that was on when
an utterance began holds the beam until a louder talker elsewhere takes it over
(sori.hearing.audio.takeover), who gets an utterance of their own; a quieter television
that starts while the user speaks takes nothing over.

The rooms are pyroomacoustics' (tests/audio/array_rooms.py), heard through the pipeline
with its real voice detector (Silero), so the babble is called voice as it would be."""

from __future__ import annotations

import numpy as np
import pytest
from array_rooms import LEAD_S, geometry, read_clip, simulate

from sori.assemble.hearing import build_hearing
from sori.core.config import Config
from sori.core.events import SpeechStarted
from sori.hearing.audio.augment import babble
from sori.hearing.audio.format import RATE_HZ
from sori.hearing.audio.front_end import ArrayFrontEnd, array_frames
from sori.hearing.audio.sources import ChannelChunker
from sori.hearing.audio.standing import STANDING_S, angle_apart_deg
from sori.hearing.pacing import ReplayClock, replay

READ = "audio/ko-read"
TALKER = "zeroth_104_003_0294.wav"
TALKER_DEG, TV_DEG = 60.0, 160.0


def heard_through(room_mix: np.ndarray) -> tuple[ArrayFrontEnd, list[SpeechStarted]]:
    """`room_mix` (samples, 4 microphones) through the array's front end and the
    pipeline's voice detector (no recognizer): the front end, and the utterances begun."""
    array = ArrayFrontEnd(geometry(), "mvdr")
    clock = ReplayClock()
    hearing = build_hearing(Config(), None, None, clock, steering=array)
    chunker = ChannelChunker(20, room_mix.shape[1])
    frames = array_frames([*chunker.push(room_mix), *chunker.flush()], array)
    starts = [e for e in replay(frames, hearing, clock) if isinstance(e, SpeechStarted)]
    return array, starts


def voice_onset_s(speech: np.ndarray) -> float:
    """Where a clean recording's voice begins: its first 20 ms as loud as a tenth of its
    loudest (in RMS)."""
    frames = speech[: len(speech) // 320 * 320].reshape(-1, 320)
    rms = np.sqrt(np.mean(frames**2, axis=1))
    return float(np.argmax(rms >= 0.1 * rms.max())) * 0.02


@pytest.fixture(scope="module")
def voices(shared_dir) -> list[np.ndarray]:
    names = sorted(p.name for p in (shared_dir / READ).glob("*.wav") if p.name != TALKER)
    return [read_clip(str(shared_dir / READ / name), 20.0) for name in names[:12]]


def test_a_television_on_for_seconds_is_nulled_and_the_talker_found_away_from_it(
    shared_dir, voices
):
    """Babble of four voices from a loudspeaker at 160°, on for 12 s and 5 dB under the
    talker, then a read sentence from 60° (RT60 0.4 s). Before, the babble's first
    utterance held the beam on the television for the 20 s an utterance may last, and the
    talker was heard inside it, from 160°."""
    lead_s = 12.0
    speech = read_clip(str(shared_dir / READ / TALKER), 4.0)
    samples = int((lead_s + 6) * RATE_HZ)
    tv = babble(voices, samples, np.random.default_rng(3))
    room = simulate(speech, TALKER_DEG, TV_DEG, lead_s=lead_s, sound=tv, tail_s=1.0)
    array, starts = heard_through(room.mixed)

    assert array.standing_deg is not None and angle_apart_deg(array.standing_deg, TV_DEG) <= 15
    # once the television stood, nothing but the talker opened an utterance
    later = [s.audio_start_ns / 1e9 for s in starts if s.audio_start_ns / 1e9 > STANDING_S + 2]
    assert len(later) == 1 and lead_s <= later[0] < lead_s + 1.0, later
    assert angle_apart_deg(array.direction_deg, TALKER_DEG) <= 10


def test_a_fan_and_a_user_speaking_again_and_again_from_one_place_are_no_standing_source(
    shared_dir,
):
    """Pink noise from 160° 15 dB under the talker (a fan: steady, no voice), and three
    read sentences from 60° with two seconds between them: more voice from one place
    than a standing source needs, but a user's, each time found and held."""
    names = ("zeroth_104_003_0294.wav", "zeroth_104_003_0374.wav", "zeroth_104_003_0253.wav")
    gap = np.zeros(2 * RATE_HZ, np.float32)
    said = [read_clip(str(shared_dir / READ / name), 4.0) for name in names]
    speech = np.concatenate([part for clip in said for part in (clip, gap)][:-1])
    assert len(speech) / RATE_HZ - 4 >= STANDING_S  # more voice than a standing source needs
    room = simulate(speech, TALKER_DEG, TV_DEG, below_db=15.0, lead_s=3.0)
    array, starts = heard_through(room.mixed)

    assert array.standing_deg is None
    assert len(starts) >= 3
    assert angle_apart_deg(array.direction_deg, TALKER_DEG) <= 10
    assert array.takeovers == 0  # one talker, louder and softer: never someone new


def test_a_louder_talker_takes_over_the_utterance_a_television_began(shared_dir, voices):
    """Babble from 160° 5 dB under the talker, on 1 s before a read sentence from 60°: the
    babble opens the utterance and holds the beam; the talker takes it over and is heard
    in an utterance of their own, from their direction."""
    speech = read_clip(str(shared_dir / READ / TALKER), 4.0)
    tv = babble(voices, int(7 * RATE_HZ), np.random.default_rng(4))
    room = simulate(speech, TALKER_DEG, TV_DEG, sound=tv)
    array, starts = heard_through(room.mixed)

    assert array.takeovers == 1  # once: the talker's own syllables never take it back
    assert angle_apart_deg(starts[0].doa_deg, TV_DEG) <= 15  # the television's
    talker = [
        s for s in starts if s.doa_deg is not None and angle_apart_deg(s.doa_deg, TALKER_DEG) <= 15
    ]
    # their utterance begins where their voice does: before it, by no more than a breath
    began_s = LEAD_S + voice_onset_s(speech)
    assert talker and began_s - 0.4 <= talker[0].audio_start_ns / 1e9 <= began_s + 0.05
    assert angle_apart_deg(array.direction_deg, TALKER_DEG) <= 10


def test_a_quieter_television_that_starts_while_the_user_speaks_takes_nothing_over(
    shared_dir, voices
):
    speech = read_clip(str(shared_dir / READ / TALKER), 4.0)
    tv = babble(voices, int(7 * RATE_HZ), np.random.default_rng(5))
    tv[: int(2.0 * RATE_HZ)] = 0.0  # on a second into the sentence
    room = simulate(speech, TALKER_DEG, TV_DEG, below_db=10.0, sound=tv)
    array, starts = heard_through(room.mixed)

    assert array.takeovers == 0
    assert angle_apart_deg(array.direction_deg, TALKER_DEG) <= 10
