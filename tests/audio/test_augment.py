"""Noise, hum and babble at a chosen level or SNR, the same for the same seed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from sori.hearing.audio.augment import (
    NOISE_KINDS,
    at_dbfs,
    babble,
    change_speed,
    gain_db,
    make_noise,
    mix_at_snr,
    to_pcm16,
)

SECOND = 16_000


def band_power(signal: np.ndarray, low_hz: float, high_hz: float) -> float:
    spectrum = np.abs(np.fft.rfft(signal)) ** 2
    freqs = np.fft.rfftfreq(len(signal), 1 / SECOND)
    return float(spectrum[(freqs >= low_hz) & (freqs < high_hz)].sum())


@pytest.mark.parametrize("kind", NOISE_KINDS)
def test_noises_have_unit_rms_and_repeat_with_the_seed(kind):
    a = make_noise(kind, SECOND, np.random.default_rng(3))
    b = make_noise(kind, SECOND, np.random.default_rng(3))
    assert np.sqrt(np.mean(a**2)) == pytest.approx(1.0, rel=1e-6)
    assert np.array_equal(a, b)


def test_colours_tilt_the_spectrum_and_hum_sits_at_the_mains_frequency():
    rng = np.random.default_rng(0)
    tilt = {
        kind: band_power(noise := make_noise(kind, 4 * SECOND, rng), 100, 400)
        / band_power(noise, 2000, 8000)
        for kind in ("white", "pink", "brown")
    }
    assert tilt["white"] < tilt["pink"] < tilt["brown"]
    hum = make_noise("hum", SECOND, rng)
    assert band_power(hum, 45, 55) > 0.5 * band_power(hum, 0, 8000)


def test_mixing_at_an_snr_sets_the_noise_level_below_the_speech():
    rng = np.random.default_rng(1)
    speech = 3000 * np.sin(np.linspace(0, 2000, 2 * SECOND))
    for snr_db in (20, 10, 5):
        noisy = mix_at_snr(speech, make_noise("white", SECOND, rng), snr_db)
        added = noisy - speech
        measured = 20 * np.log10(np.sqrt(np.mean(speech**2)) / np.sqrt(np.mean(added**2)))
        assert measured == pytest.approx(snr_db, abs=0.01)
        assert len(noisy) == len(speech)  # the noise was looped to the speech's length


def test_levels_gain_babble_and_pcm():
    rng = np.random.default_rng(2)
    quiet = at_dbfs(make_noise("pink", SECOND, rng), -30)
    assert 20 * np.log10(np.sqrt(np.mean(quiet.astype(np.float64) ** 2)) / 32768) == (
        pytest.approx(-30, abs=0.01)
    )
    assert np.allclose(gain_db(quiet, -6), quiet * 10 ** (-6 / 20), rtol=1e-5)
    voices = [np.sin(np.linspace(0, f, SECOND)) for f in (500, 900, 1300)]
    crowd = babble(voices, 3 * SECOND, rng)
    assert len(crowd) == 3 * SECOND and np.sqrt(np.mean(crowd**2)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="voice"):
        babble([], SECOND, rng)
    with pytest.raises(ValueError, match="white"):
        make_noise("purple", SECOND, rng)
    pcm = to_pcm16(np.array([40000.0, -40000.0, 1.4]))
    assert np.frombuffer(pcm, "<i2").tolist() == [32767, -32768, 1]


def test_a_speed_that_is_nan_or_out_of_range_is_refused_before_resampling():
    """In a child with a short timeout: nan once sent the resampler into an endless loop."""
    script = (
        "import numpy as np\n"
        "from sori.hearing.audio.augment import change_speed\n"
        "for factor in (float('nan'), float('inf'), 0.0, -1.0, 1e-300, 1e300, True):\n"
        "    try:\n"
        "        change_speed(np.zeros(1600, np.float32), factor)\n"
        "    except ValueError as exc:\n"
        "        print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert done.stdout.splitlines() == [
        "speed must be between 0.1 and 10.0, got nan",
        "speed must be between 0.1 and 10.0, got inf",
        "speed must be between 0.1 and 10.0, got 0.0",
        "speed must be between 0.1 and 10.0, got -1.0",
        "speed must be between 0.1 and 10.0, got 1e-300",
        "speed must be between 0.1 and 10.0, got 1e+300",
        "speed must be a number, got a boolean",
    ], done.stderr


def test_speed_changes_the_length_by_the_factor():
    faster = change_speed(np.zeros(SECOND, np.float32), 1.25)
    assert len(faster) == pytest.approx(SECOND / 1.25, abs=2)
