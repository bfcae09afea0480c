"""What the speaker played, and when: the record the wake gate looks in for Sori's own voice."""

from __future__ import annotations

import numpy as np

from sori.hearing.audio.played import ECHO_TAIL_S, KEEP_S, PlayedAudio

S = 1_000_000_000


def tone(seconds: float, rate_hz: int = 16000, level: int = 8000) -> bytes:
    t = np.arange(int(seconds * rate_hz)) / rate_hz
    return (level * np.sin(2 * np.pi * 440 * t)).astype("<i2").tobytes()


def test_sori_is_speaking_while_a_piece_plays_and_its_echo_dies_away():
    played = PlayedAudio()
    played.add(10 * S, tone(1.0), 16000)
    played.add(20 * S, tone(1.0), 16000)  # a second reply, after a pause
    assert not played.speaking(9 * S)
    assert played.speaking(10 * S) and played.speaking(11 * S)
    assert played.speaking(11 * S + int(ECHO_TAIL_S * S) - 1)
    assert not played.speaking(15 * S)  # between the replies
    assert played.speaking(int(20.5 * S))
    assert not played.speaking(22 * S)


def test_pieces_handed_over_early_play_one_after_another():
    played = PlayedAudio()
    first, second = tone(0.5, level=1000), tone(0.5, level=2000)
    played.add(1 * S, first, 16000)
    played.add(1 * S, second, 16000)  # queued: it plays when the first has played
    assert played.between(1 * S, 2 * S) == first + second
    assert played.between(int(1.5 * S), int(1.75 * S)) == second[: len(second) // 2]


def test_between_is_silence_where_nothing_played_and_16_khz_whatever_the_voice_rate():
    played = PlayedAudio()
    played.add(2 * S, tone(1.0, rate_hz=22050), 22050)
    out = np.frombuffer(played.between(1 * S, 4 * S), "<i2")
    assert len(out) == 3 * 16000
    assert not out[:16000].any() and not out[2 * 16000 :].any()
    voiced = out[16000 : 2 * 16000].astype(float)
    assert 4000 < np.sqrt(np.mean(voiced**2)) < 7000  # the tone, resampled (RMS 8000/√2)


def test_only_the_latest_seconds_are_kept():
    played = PlayedAudio()
    for second in range(int(KEEP_S) + 10):
        played.add(second * S, tone(1.0), 16000)
    assert not any(played.between(0, 5 * S))
    assert any(played.between(int(KEEP_S + 5) * S, int(KEEP_S + 6) * S))


def test_what_sori_said_is_none_where_it_was_silent():
    played = PlayedAudio()
    played.add(1 * S, tone(1.0), 16000)
    played.add(2 * S, bytes(16000 * 2), 16000)  # a pause between sentences
    assert played.said(int(1.2 * S), int(1.8 * S)) == played.between(int(1.2 * S), int(1.8 * S))
    assert played.said(int(2.2 * S), int(2.8 * S)) is None
    assert played.said(4 * S, 5 * S) is None
