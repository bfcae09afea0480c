"""Room conditions of `sori test`: each augmentation does what its name says, measured."""

from __future__ import annotations

import numpy as np
import pytest

from sori.hearing.audio.augment import snr_db
from sori.hearing.audio.format import RATE_HZ
from sori.testing.harness import conditions
from sori.testing.harness.manifest import Augmentation


@pytest.fixture(scope="module")
def speech(shared_dir) -> np.ndarray:
    return conditions.clip(shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav")


@pytest.mark.parametrize("kind", ["white", "pink", "babble"])
@pytest.mark.parametrize("snr", [20.0, 10.0, 0.0])
def test_noise_is_mixed_within_half_a_db_of_the_requested_snr(speech, shared_dir, kind, snr):
    voices = [conditions.clip(shared_dir / "audio" / "ko-read" / "zeroth_104_003_0294.wav")]
    augmentation = Augmentation(f"{kind} {snr}", noise=kind, snr_db=snr)
    noisy = conditions.apply(speech, augmentation, np.random.default_rng(1), voices)
    assert noisy.shape == speech.shape
    assert abs(snr_db(speech, noisy) - snr) <= 0.5


def test_gain_changes_the_level_by_the_requested_db(speech):
    quieter = conditions.apply(speech, Augmentation("g", gain_db=-12), np.random.default_rng(0))
    ratio_db = 20 * np.log10(np.sqrt(np.mean(quieter**2)) / np.sqrt(np.mean(speech**2)))
    assert ratio_db == pytest.approx(-12, abs=0.05)


def test_speed_shortens_the_recording_by_its_factor(speech):
    faster = conditions.apply(speech, Augmentation("s", speed=1.25), np.random.default_rng(0))
    assert len(faster) / len(speech) == pytest.approx(1 / 1.25, abs=0.002)


def test_reverb_lengthens_by_the_room_tail_and_smears_the_speech(speech):
    wet = conditions.apply(speech, Augmentation("r", reverb="room"), np.random.default_rng(0))
    tail_s = (len(wet) - len(speech)) / RATE_HZ
    assert tail_s == pytest.approx(0.4, abs=0.01)  # the room's RT60, plus the direct path
    assert np.sqrt(np.mean(wet**2)) == pytest.approx(np.sqrt(np.mean(speech**2)), rel=1e-3)
    # speech cut off mid-word rings on in the room for a while after the cut
    cut = 2 * RATE_HZ
    dry = np.concatenate([speech[:cut], np.zeros(RATE_HZ, np.float32)])
    wet = conditions.apply(dry, Augmentation("r", reverb="room"), np.random.default_rng(0))
    level = np.sqrt(np.mean(dry[:cut] ** 2))
    after = wet[cut + RATE_HZ // 20 : cut + RATE_HZ // 5]  # 50-200 ms after the cut
    assert np.sqrt(np.mean(after**2)) > 0.05 * level
    assert np.corrcoef(wet[:cut], dry[:cut])[0, 1] < 0.95


def test_conditions_repeat_exactly_for_the_same_seed(speech):
    a = Augmentation("white 10", noise="white", snr_db=10)
    one = conditions.apply(speech, a, np.random.default_rng(5))
    two = conditions.apply(speech, a, np.random.default_rng(5))
    assert np.array_equal(one, two)
