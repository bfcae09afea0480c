"""The fuzzy threshold holds on simulated recognition errors: no wrong device fires."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from sori.core.config import IntentsConfig

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "calibrate_fuzzy.py"


def test_default_threshold_fires_no_wrong_device_and_recovers_most_errors(monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("calibrate_fuzzy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", ["calibrate_fuzzy.py", "--seed", "11", "--json"])
    assert module.main() == 0
    report = json.loads(capsys.readouterr().out)
    assert report["positives"] > 150 and report["negatives"] > 50
    row = next(r for r in report["rows"] if r["threshold"] == IntentsConfig().fuzzy_threshold)
    assert row["wrong_fires"] == 0
    assert row["false_fires"] == 0
    # Edits are licensed inside words of three syllables or more, and in the predicate
    # by a sound-alike jamo when it is the only edit (issue 9): one-jamo errors in short
    # nouns (안방 → 암방) are no longer guessed at. Measured 0.317 at seeds 7 and 11.
    assert row["recall"] >= 0.3


def test_corruption_changes_one_syllable_at_most():
    spec = importlib.util.spec_from_file_location("calibrate_fuzzy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import random

    rng = random.Random(3)
    original = "거실 불 켜줘"
    changed = 0
    for _ in range(50):
        noisy = module.corrupt(original, rng)
        if len(noisy) == len(original):
            assert sum(a != b for a, b in zip(noisy, original, strict=True)) <= 1
        else:
            assert len(noisy) == len(original) - 1  # one syllable dropped
        changed += noisy != original
    assert changed >= 40
