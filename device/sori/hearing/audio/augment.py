"""Room conditions made on purpose: noise of a few colours, hum, babble, mixed at an SNR.

Benchmarks, tests and fixture runs hear clean recordings as a home would: with a fan
(white), a fridge or traffic (pink, brown), mains hum, or people talking (babble). Every
generator is deterministic for a given `numpy.random.Generator`, so a figure can be
reproduced and nothing needs to be stored.

    rng = np.random.default_rng(7)
    noisy = mix_at_snr(speech, make_noise("pink", len(speech), rng), snr_db=10)
    room = at_dbfs(make_noise("hum", 16_000 * 60, rng), -30)   # a minute of hum alone

Signals are float32 numpy arrays at the pipeline's 16 kHz; `to_pcm16` turns one into the
bytes the sources produce.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sori.core.config.schema import NumberError, limits, read_number
from sori.hearing.audio.format import RATE_HZ

NOISE_KINDS = ("white", "pink", "brown", "hum")
"""Noises made from nothing; babble needs voices (`babble`)."""
HUM_HZ = 50.0
"""Mains frequency of the hum (50 Hz in Korea and Europe; 60 Hz in the Americas)."""
FULL_SCALE = 32768.0


def make_noise(kind: str, samples: int, rng: np.random.Generator) -> np.ndarray:
    """`samples` of noise of `kind` (see NOISE_KINDS) with an RMS of 1."""
    if kind == "white":
        noise = rng.standard_normal(samples)
    elif kind in ("pink", "brown"):
        noise = _coloured(samples, rng, exponent=1.0 if kind == "pink" else 2.0)
    elif kind == "hum":
        t = np.arange(samples) / RATE_HZ
        harmonics = (1, 3, 5)  # the mains tone and its first odd harmonics
        phases = rng.uniform(0, 2 * np.pi, len(harmonics))
        noise = sum(
            np.sin(2 * np.pi * HUM_HZ * k * t + p) / k
            for k, p in zip(harmonics, phases, strict=True)
        )
    else:
        raise ValueError(f"noise kind must be one of {', '.join(NOISE_KINDS)}, got {kind!r}")
    return _unit_rms(np.asarray(noise, dtype=np.float64))


def _coloured(samples: int, rng: np.random.Generator, exponent: float) -> np.ndarray:
    """Noise whose power falls as 1/f**exponent (1: pink, 2: brown), shaped in frequency."""
    spectrum = np.fft.rfft(rng.standard_normal(samples))
    freqs = np.fft.rfftfreq(samples, 1 / RATE_HZ)
    freqs[0] = freqs[1] if samples > 1 else 1.0  # no infinite gain at DC
    spectrum /= freqs ** (exponent / 2)
    spectrum[freqs < 20] = 0  # below hearing and below any microphone
    return np.fft.irfft(spectrum, samples)


def babble(
    voices: Sequence[np.ndarray], samples: int, rng: np.random.Generator, talkers: int = 4
) -> np.ndarray:
    """`talkers` voices at once, each a random stretch of `voices` (looped), RMS 1."""
    if not voices:
        raise ValueError("babble needs at least one voice recording")
    mixed = np.zeros(samples)
    for _ in range(talkers):
        voice = np.asarray(voices[rng.integers(len(voices))], dtype=np.float64)
        start = int(rng.integers(len(voice)))
        repeats = samples // len(voice) + 2
        mixed += _unit_rms(np.tile(voice, repeats)[start : start + samples])
    return _unit_rms(mixed)


def mix_at_snr(speech: np.ndarray, noise: np.ndarray, snr_db: float) -> np.ndarray:
    """`speech` with `noise` added at `snr_db` below the speech's RMS (noise is cut or
    looped to the speech's length); float32 at the speech's scale."""
    speech = np.asarray(speech, dtype=np.float64)
    noise = np.resize(np.asarray(noise, dtype=np.float64), speech.shape)
    speech_rms = _rms(speech)
    noise_rms = _rms(noise)
    if speech_rms == 0 or noise_rms == 0:
        return speech.astype(np.float32)
    gain = speech_rms / noise_rms / 10 ** (snr_db / 20)
    return (speech + gain * noise).astype(np.float32)


def said_over(
    background: np.ndarray, speech: np.ndarray, at_s: float, above_db: float
) -> np.ndarray:
    """`background` (Sori's own reply, as the microphone hears it) with `speech` said over
    it from `at_s` seconds, the speech's voiced parts `above_db` louder than the
    background's; float32 at the speech's scale, as long as the longer of the two."""
    background = np.asarray(background, dtype=np.float64)
    speech = np.asarray(speech, dtype=np.float64)
    start = int(at_s * RATE_HZ)
    mixed = np.zeros(max(len(background), start + len(speech)))
    speech_rms, background_rms = voiced_rms(speech), voiced_rms(background)
    if background_rms:
        mixed[: len(background)] = background * speech_rms / background_rms / 10 ** (above_db / 20)
    mixed[start : start + len(speech)] += speech
    return mixed.astype(np.float32)


def at_dbfs(signal: np.ndarray, dbfs: float) -> np.ndarray:
    """`signal` scaled to an RMS of `dbfs` decibels relative to 16-bit full scale."""
    signal = np.asarray(signal, dtype=np.float64)
    rms = _rms(signal)
    target = FULL_SCALE * 10 ** (dbfs / 20)
    return (signal * (target / rms if rms else 0.0)).astype(np.float32)


def gain_db(signal: np.ndarray, db: float) -> np.ndarray:
    """`signal` made louder (db > 0) or quieter."""
    return (np.asarray(signal, dtype=np.float64) * 10 ** (db / 20)).astype(np.float32)


SPEEDS = limits(0.1, 10.0)
"""Speed factors `change_speed` takes: its output is 1/factor as long, so a tiny factor
asks for unbounded memory, and nan sends the resampler into an endless loop."""


def change_speed(signal: np.ndarray, factor: float) -> np.ndarray:
    """`signal` played `factor` times faster, like tape: shorter by `factor` and higher in
    pitch (a talker in a hurry, or a recording made at a slightly different clock)."""
    try:
        factor = read_number(factor, SPEEDS)
    except NumberError as exc:
        raise ValueError(f"speed {exc}") from None
    import soxr  # the audio extra; resampling is the whole of a speed change

    x = np.asarray(signal, dtype=np.float32)
    return soxr.resample(x, RATE_HZ * factor, RATE_HZ, quality="HQ").astype(np.float32)


ROOMS_RT60_S = {"room": 0.4, "hall": 1.2}
"""Reverberation times (RT60, seconds: a 60 dB decay) of the synthetic rooms."""


def room_impulse(
    rt60_s: float, rng: np.random.Generator, direct_ms: float = 2.0, drr_db: float = 0.0
) -> np.ndarray:
    """A synthetic room impulse response: the direct sound, then a tail of noise that
    decays by 60 dB in `rt60_s`, starting `direct_ms` later (the first reflections), with
    `drr_db` more energy in the direct sound than in the tail (0 dB: a talker a couple of
    metres away in a living room)."""
    tail = int(RATE_HZ * rt60_s)
    start = int(RATE_HZ * direct_ms / 1000)
    t = np.arange(tail) / RATE_HZ
    decay = 10 ** (-3 * t / rt60_s)  # -60 dB at rt60
    ir = np.zeros(start + tail)
    ir[0] = 1.0
    reflections = rng.standard_normal(tail) * decay
    ir[start:] = reflections / np.sqrt(np.sum(reflections**2)) * 10 ** (-drr_db / 20)
    return ir


def reverberate(signal: np.ndarray, impulse: np.ndarray) -> np.ndarray:
    """`signal` heard in the room of `impulse`: convolved (so longer by the impulse's
    length less one sample) and scaled back to the dry signal's RMS."""
    x = np.asarray(signal, dtype=np.float64)
    n = len(x) + len(impulse) - 1
    size = 1 << (n - 1).bit_length()
    wet = np.fft.irfft(np.fft.rfft(x, size) * np.fft.rfft(impulse, size), size)[:n]
    dry_rms, wet_rms = _rms(x), _rms(wet)
    return (wet * (dry_rms / wet_rms if wet_rms else 0.0)).astype(np.float32)


def snr_db(speech: np.ndarray, noisy: np.ndarray) -> float:
    """The measured signal-to-noise ratio of `noisy` against the clean `speech`, in dB."""
    speech = np.asarray(speech, dtype=np.float64)
    noise = np.asarray(noisy, dtype=np.float64) - speech
    return float(20 * np.log10(_rms(speech) / _rms(noise)))


def to_pcm16(signal: np.ndarray) -> bytes:
    """16-bit little-endian PCM of a signal on the int16 scale, clipped at full scale."""
    return np.clip(np.rint(signal), -32768, 32767).astype("<i2").tobytes()


def _rms(signal: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(signal)))) if signal.size else 0.0


def voiced_rms(signal: np.ndarray) -> float:
    """RMS of the samples above a twentieth of the peak: the voice, not its pauses."""
    if not signal.size:
        return 0.0
    return _rms(signal[np.abs(signal) > 0.05 * np.abs(signal).max()])


def _unit_rms(signal: np.ndarray) -> np.ndarray:
    rms = _rms(signal)
    return signal / rms if rms else signal
