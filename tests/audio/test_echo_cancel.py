"""Sori's own voice taken out of the microphone: Sori's real voice (espeak-ng) through a
synthetic room, with and without a user talking over it."""

from __future__ import annotations

import wave
from dataclasses import replace

import numpy as np
import pytest

from sori.core.config import Config
from sori.hearing.audio.augment import reverberate, room_impulse, said_over, to_pcm16
from sori.hearing.audio.echo_cancel import cancel_echo
from sori.hearing.audio.format import AudioFrame
from sori.hearing.audio.played import PlayedAudio
from sori.hearing.audio.ring import FrameChunker

S = 1_000_000_000
ORIGIN_NS = 7 * S
"""Clock time the microphone's stream starts at: the record is in clock times."""
RATE = 16000


@pytest.fixture(scope="module")
def reply() -> np.ndarray:
    from echo_kit import REPLY, sori_says

    return sori_says(Config(), REPLY)


def through_room(reply: np.ndarray, rt60_s: float) -> np.ndarray:
    """The speaker as the microphone hears it: 40 ms late, through a room, 6 dB of
    direct sound over the tail, at half the level."""
    impulse = room_impulse(rt60_s, np.random.default_rng(3), drr_db=6.0)
    late = np.concatenate([np.zeros(640), reply])
    return 0.5 * reverberate(late, impulse)[: len(reply)]


def cancelled(mic: np.ndarray, reply: np.ndarray) -> np.ndarray:
    """`mic` through the canceller, the speaker having played `reply` from the start."""
    played = PlayedAudio()
    played.add(ORIGIN_NS, to_pcm16(reply), RATE)
    frames = FrameChunker(20).push(to_pcm16(mic))
    out = b"".join(f.pcm for f in cancel_echo(frames, played, ORIGIN_NS))
    return np.frombuffer(out, np.int16).astype(np.float64)


def energy_db(x: np.ndarray) -> float:
    return 10 * np.log10(max(float(x @ x), 1e-9))


@pytest.mark.parametrize("rt60_s", [0.0, 0.4])
def test_sori_s_voice_heard_through_a_room_is_taken_out_of_the_microphone(reply, rt60_s):
    """Once the filter has heard a few seconds of Sori, its echo is 20 dB and more below
    what it was (measured: 37 dB dry, 24 dB at RT60 0.4 s)."""
    mic = through_room(reply, rt60_s)
    out = cancelled(mic, reply)
    after = slice(5 * RATE, len(out))
    raw = np.frombuffer(to_pcm16(mic), np.int16)[after].astype(np.float64)
    assert energy_db(raw) - energy_db(out[after]) > 20


def test_a_user_talking_over_sori_is_kept_and_the_filter_holds(reply, shared_dir):
    """A clip said over the reply, as loud as the reply (double talk): what is left while
    the user talks is the user, the echo 15 dB below it (measured 21); after the user,
    the echo is still cancelled (the filter did not learn the user's voice as echo)."""
    with wave.open(str(shared_dir / "audio" / "ko-read" / "zeroth_104_003_0253.wav")) as w:
        speech = np.frombuffer(w.readframes(int(2.5 * RATE)), np.int16).astype(np.float32)
    echo = through_room(reply, 0.4)
    mic = said_over(echo, speech, at_s=5.5, above_db=0)
    out = cancelled(mic, reply)
    user = np.zeros(len(mic))
    user[int(5.5 * RATE) :][: len(speech)] = speech
    talk = slice(int(5.5 * RATE), int(8.0 * RATE))
    left = out[talk] - user[talk]
    assert energy_db(user[talk]) - energy_db(left) > 15
    after = slice(int(8.5 * RATE), len(reply))
    raw = np.frombuffer(to_pcm16(mic), np.int16)[after].astype(np.float64)
    assert energy_db(raw) - energy_db(out[after]) > 20


def test_while_sori_is_silent_frames_pass_untouched(reply):
    """Before Sori speaks and once its echo has died away (the filter's reach), the
    microphone's frames are the very frames it gave."""
    played = PlayedAudio()
    played.add(ORIGIN_NS + 2 * S, to_pcm16(reply[: RATE // 2]), RATE)
    noise = np.random.default_rng(0).normal(0, 300, 4 * RATE)
    frames = list(FrameChunker(20).push(to_pcm16(noise)))
    out = list(cancel_echo(frames, played, ORIGIN_NS))
    same = [a is b for a, b in zip(frames, out, strict=True)]
    assert all(same[:100]) and not any(same[100:125])  # 0-2 s; 2-2.5 s Sori speaks
    assert all(same[140:])  # 256 ms after, nothing of it is left in the filter's reach
    assert all(isinstance(f, AudioFrame) and len(f.pcm) == 640 for f in out)


def test_the_front_end_cancels_only_with_a_record_and_not_when_off(reply):
    from sori.assemble.hearing import front_end

    played = PlayedAudio()
    played.add(0, to_pcm16(reply[:RATE]), RATE)
    frames = list(FrameChunker(20).push(to_pcm16(through_room(reply[:RATE], 0.0))))
    config = Config()
    off = replace(config, audio=replace(config.audio, echo_cancel="off"))
    assert list(front_end(config, frames)) == frames  # no record: a file, no speaker
    assert list(front_end(off, frames, played)) == frames
    assert list(front_end(config, frames, played)) != frames
