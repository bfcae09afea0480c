"""`sori replay -` refuses absurd raw rates and channel counts at once, exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--rate", "10000000000000000"],
            "sample rate 10000000000000000 Hz is outside 8000-192000",
        ),
        (["--rate", "1"], "sample rate 1 Hz is outside 8000-192000 Hz"),
        (["--rate", "0"], "sample rate 0 Hz is outside"),
        (["--channels", "0"], "0 channels is outside 1-32"),
        (["--channels", "1000"], "1000 channels is outside 1-32"),
    ],
)
def test_absurd_raw_input_is_refused_before_anything_runs(args, message):
    done = subprocess.run(
        [sys.executable, "-m", "sori", "replay", "-", *args],
        input=b"\0" * 64_000, capture_output=True, timeout=60,
    )  # fmt: skip
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "Traceback" not in err
    assert "sori replay: stdin (--" in err and message in err
    assert done.stdout == b""
