"""Turns gated by a wake phrase, end to end: `sori run --input FILE` and `sori replay` on
a file made of a shared clip's opening word (the wake phrase) and spoken commands."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from daemon_kit import write_config

SORI = [sys.executable, "-m", "sori"]
RATE = 22050  # espeak-ng's rate; the clip is resampled up to it
WAKE = "현재"  # opens zeroth_104_003_0253.wav, 0.66-1.05 s
WAKE_TOML = '\n[wake]\nenabled = true\nphrases = ["현재"]\nlisten_s = 5.0\nfollow_up_s = 4.0\n'


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(RATE * seconds), np.int16)


def espeak(tmp: Path, text: str) -> np.ndarray:
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.fail("espeak-ng is not installed; run 'bash scripts/install.sh --test'")
    out = tmp / "cmd.wav"
    subprocess.run([exe, "-v", "ko+f3", "-s", "160", "-w", str(out), text], check=True)
    with wave.open(str(out)) as w:
        assert w.getframerate() == RATE
        return np.frombuffer(w.readframes(w.getnframes()), np.int16)


def wake_word(shared: Path) -> np.ndarray:
    """The clip's first 1.1 s: leading silence and "현재", resampled to `RATE`."""
    with wave.open(str(shared / "audio" / "ko-read" / "zeroth_104_003_0253.wav")) as w:
        clip = np.frombuffer(w.readframes(int(1.1 * w.getframerate())), np.int16)
    t = np.arange(int(len(clip) * RATE / 16000)) * 16000 / RATE
    return np.interp(t, np.arange(len(clip)), clip).astype(np.int16)


@pytest.fixture(scope="module")
def session(tmp_path_factory, shared_dir) -> Path:
    """Utterances 0-5: a command with no wake phrase (ignored); the phrase alone, then a
    command in its listening window (turn 2); after a long pause, the phrase and a command
    in one breath (turn 3); a follow-up command without the phrase (turn 4); after the
    follow-up window, a command (ignored)."""
    tmp = tmp_path_factory.mktemp("wake-session")
    cmd, wake = espeak(tmp, "에어컨 꺼줘"), wake_word(shared_dir)
    parts = [
        silence(1.0), cmd, silence(2.0),  # 0: ignored
        wake, silence(1.5),  # 1: the phrase alone
        cmd, silence(6.0),  # 2: in the listening window
        wake, silence(0.15), cmd, silence(1.5),  # 3: phrase + command, one breath
        cmd, silence(6.0),  # 4: a follow-up
        cmd, silence(1.0),  # 5: ignored
    ]  # fmt: skip
    path = tmp / "session.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(np.concatenate(parts).tobytes())
    return path


def test_run_turns_come_from_the_wake_phrase_its_window_and_the_follow_up(
    session, tmp_path, mosquitto, subscriber
):
    config = write_config(tmp_path, mosquitto, '[stt.vosk]\nmode = "grammar"\n', WAKE_TOML)
    config.write_text(config.read_text().replace('log_format = "text"', 'log_format = "json"'))
    out = subprocess.run(
        [*SORI, "run", "--config", str(config), "--input", str(session),
         "--output", str(tmp_path / "reply.wav"), "--http", "off"],
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    turns = [json.loads(line)["turn"] for line in out.stderr.splitlines() if '"sori.trace"' in line]
    assert [(t["turn"], t["intent"], t["slots"].get("name")) for t in turns] == [
        (2, "HassTurnOff", "에어컨"),
        (3, "HassTurnOff", "에어컨"),  # the command after the phrase, the phrase stripped
        (4, "HassTurnOff", "에어컨"),
    ]
    assert all(WAKE not in t["text"] for t in turns)
    for _ in turns:
        assert subscriber.next(timeout_s=5) == ("sori/climate/bedroom/set", "OFF")


def test_replay_honours_wake(session, tmp_path, mosquitto):
    """The same three commands, and only those (the `--no-wake` replay of plain commands
    is tests/test_replay.py's)."""
    config = write_config(tmp_path, mosquitto, '[stt.vosk]\nmode = "grammar"\n', WAKE_TOML)
    done = subprocess.run(
        [*SORI, "replay", "--config", str(config), str(session), "--json"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    heard = [json.loads(line) for line in done.stdout.splitlines()]
    heard = [r for r in heard if r["transcript"]]  # the phrase alone: nothing after it
    assert [(r["transcript"], r["intent"]) for r in heard] == [("에어컨 꺼 줘", "HassTurnOff")] * 3
