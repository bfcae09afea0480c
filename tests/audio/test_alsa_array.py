"""A ReSpeaker USB array as ALSA and PortAudio show one, with no hardware: an ALSA PCM
named as the board's sound card ("ArrayUAC10"), six channels of ALSA's null device (a
`multi` plugin, so that PortAudio reports exactly six), in a HOME of its own. Through it
the real capture path runs: `sori setup` finds the board, `sori doctor` checks the config
hears through it, and `sori record` captures its six channels, or refuses to open the
first four of them (the chip's own mix would be microphone 0).

The null device gives silence as fast as it is read, so nothing here is heard; what is
heard through a board's layout is tests/audio/test_channel_layout.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import wave
from pathlib import Path

import pytest

from sori.core.config import load_config

REPO = Path(__file__).resolve().parents[2]
ASOUNDRC = """pcm.ArrayUAC10 {
    type multi
    slaves.a { pcm "null" channels 6 }
    bindings {
        0 { slave a channel 0 }
        1 { slave a channel 1 }
        2 { slave a channel 2 }
        3 { slave a channel 3 }
        4 { slave a channel 4 }
        5 { slave a channel 5 }
    }
    hint { show on description "a ReSpeaker USB array's six channels, silent" }
}
"""
USB = "respeaker-usb-4mic"


@pytest.fixture
def home(tmp_path) -> Path:
    (tmp_path / ".asoundrc").write_text(ASOUNDRC, encoding="utf-8")
    return tmp_path


def sori(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO / "device")}
    env.pop("SORI_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "sori", *args], env=env, cwd=home, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip


def array_config(home: Path, channels: int) -> Path:
    path = home / f"sori-{channels}.toml"
    path.write_text(
        f'[audio]\ndevice = "ArrayUAC10"\nchannels = {channels}\n\n'
        f'[audio.array]\ngeometry = "{USB}"\n',
        encoding="utf-8",
    )
    return path


def test_setup_finds_the_board_and_doctor_checks_the_config_hears_through_it(home):
    config = home / "sori.toml"
    done = sori(home, "setup", "--non-interactive", "--json", "-o", str(config))
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["array"] == {"board": USB, "channels": 6, "device": "ArrayUAC10", "unsure": ""}
    audio = load_config(str(config)).audio
    assert (audio.device, audio.channels, audio.array.geometry) == ("ArrayUAC10", 6, USB)

    def array_check(config_path: Path) -> dict:
        done = sori(home, "doctor", "--json", "--no-self-test", "--config", str(config_path))
        checks = [json.loads(line) for line in done.stdout.splitlines()]
        (check,) = [c for c in checks if c["name"] == "microphone array"]
        return check

    assert array_check(config)["ok"]
    mono = home / "mono.toml"
    mono.write_text("[audio]\nchannels = 1\n", encoding="utf-8")
    check = array_check(mono)
    assert not check["ok"] and f"sori setup --array {USB} --force" in check["fix"]


def test_record_captures_every_channel_and_refuses_the_first_four(home):
    manifest = home / "m.yaml"
    done = sori(
        home, "record", "--manifest", str(manifest), "--label", "six", "--seconds", "0.5",
        "--no-action", "--config", str(array_config(home, 6)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with wave.open(str(home / "clips" / "six.wav")) as wav:
        assert (wav.getnchannels(), wav.getframerate(), wav.getnframes()) == (6, 16000, 8000)

    done = sori(
        home, "record", "--manifest", str(manifest), "--label", "four", "--seconds", "0.5",
        "--no-action", "--config", str(array_config(home, 4)),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "microphones are channels 1, 2, 3, 4, but audio.channels = 4 opens channels 0-3" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr and not (home / "clips" / "four.wav").exists()


def test_record_refuses_a_fixture_it_could_not_append_before_anyone_speaks(home):
    """No expectation, or a label already recorded: refused before the microphone opens,
    not after the user has spoken."""
    manifest, config = home / "m.yaml", str(array_config(home, 6))
    (home / "clips").mkdir()
    (home / "clips" / "taken.wav").write_bytes(b"")
    for flags, says in (
        (["--label", "new"], "say what the recording must do"),
        (["--label", "taken", "--no-action"], "taken.wav exists; choose another --label"),
    ):
        done = sori(home, "record", "--manifest", str(manifest), *flags, "--config", config)
        assert done.returncode == 2 and says in done.stderr, done.stderr
        assert "speak now" not in done.stderr
