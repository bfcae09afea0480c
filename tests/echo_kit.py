"""Sori's own voice as the microphone hears it back, and a user's phrase said over it."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

from sori.hearing.audio.augment import said_over, voiced_rms

REPLY = (
    "거실 조명을 켰어요. 오늘 서울은 대체로 맑고 낮 최고 기온은 십오 도로 어제보다 조금 "
    "따뜻하겠습니다. 저녁에는 바람이 강하게 불 수 있으니 외출하실 때 겉옷을 챙기세요."
)
"""A long reply, about 15 s in the espeak-ng voice."""
LEAD_S = 0.5
"""Silence before the reply begins in `over_the_reply`'s audio."""


def sori_says(config, text: str) -> np.ndarray:
    """`text` in the config's voice (espeak-ng by default), 16 kHz, on the int16 scale."""
    from sori.assemble.speaking import build_voice
    from sori.hearing.audio.format import to_pipeline

    voice = build_voice(config)
    pcm = np.frombuffer(b"".join(voice.synthesize(text)), np.int16) / 32768
    return np.frombuffer(to_pipeline(pcm, voice.rate_hz), np.int16).astype(np.float32)


def over_the_reply(echo: np.ndarray, clip: Path, at_s: float, below_db: float) -> np.ndarray:
    """`LEAD_S` of silence, then the reply with the clip's opening said over it from
    `at_s`, the reply `below_db` quieter."""
    mixed = said_over(echo, opening(clip), at_s, above_db=below_db)
    return np.concatenate([np.zeros(int(LEAD_S * 16000), np.float32), mixed])


def said_to_the_room(speech: np.ndarray, at_s: float) -> np.ndarray:
    """What the microphone hears of the user alone (`with_echo` adds the speaker): `LEAD_S`
    of silence, then `speech` (a clip's `opening`) from `at_s` and a second of silence."""
    start = int((LEAD_S + at_s) * 16000)
    heard = np.zeros(start + len(speech) + 16000, np.float32)
    heard[start : start + len(speech)] = speech
    return heard


def echo_gain(echo: np.ndarray, speech: np.ndarray, below_db: float) -> float:
    """The gain at which the microphone hears the speaker play `echo` `below_db` quieter
    than `speech`, as `over_the_reply` mixes them."""
    return voiced_rms(speech) / voiced_rms(echo) / 10 ** (below_db / 20)


def opening(clip: Path) -> np.ndarray:
    """The first 2.5 s of a recording (its opening word or two), on the int16 scale."""
    with wave.open(str(clip)) as w:
        return np.frombuffer(w.readframes(int(2.5 * w.getframerate())), np.int16).astype(np.float32)


def with_echo(frame, played, gain: float, since_ns: int):
    """`frame` as a microphone in the room hears it: with what `played` (a PlayedAudio)
    says the speaker played from clock time `since_ns` for the frame's length, at `gain`
    (no echo cancellation)."""
    from sori.hearing.audio.format import AudioFrame

    echo = np.frombuffer(played.between(since_ns, since_ns + frame.duration_ns), np.int16)
    mixed = np.frombuffer(frame.pcm, np.int16) + echo * gain
    return AudioFrame(mixed.clip(-32768, 32767).astype(np.int16).tobytes(), frame.start_ns)
