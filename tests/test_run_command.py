"""`sori run` as a process: end to end from a WAV file, signals, bad configs."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import wave
from pathlib import Path

import httpx
import pytest

from daemon_kit import write_config

SORI = [sys.executable, "-m", "sori"]


def bearer(home: Path) -> dict[str, str]:
    """The Authorization header for the API token `sori run` made in `home`."""
    token = (home / ".config" / "sori" / "api-token").read_text().strip()
    return {"Authorization": f"Bearer {token}"}


def run_file(
    config: Path, audio: Path, *flags: str, timeout_s: float = 240
) -> subprocess.CompletedProcess:
    """`sori run` on `audio` to its end, in the config's folder (the reply goes to
    reply.wav there, no HTTP API); its output captured."""
    return subprocess.run(
        [*SORI, "run", "--config", str(config), "--input", str(audio),
         "--output", str(config.parent / "reply.wav"), "--http", "off", *flags],
        capture_output=True, text=True, timeout=timeout_s, cwd=config.parent,
    )  # fmt: skip


def sori_run(*args: str, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [*SORI, "run", *args], cwd=cwd, env=env, stderr=subprocess.PIPE, text=True
    )


class LogReader:
    """Collects the JSON log lines of a running daemon on a thread."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: queue.Queue[dict] = queue.Queue()
        self.all: list[dict] = []

        def read():
            for line in proc.stderr:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    entry = {"msg": line.rstrip()}
                self.all.append(entry)
                self.lines.put(entry)

        threading.Thread(target=read, daemon=True).start()

    def wait_for(self, msg: str, timeout_s: float = 90) -> dict:
        while True:
            entry = self.lines.get(timeout=timeout_s)
            if entry.get("msg") == msg:
                return entry


def json_logs(config: Path) -> None:
    config.write_text(config.read_text().replace('log_format = "text"', 'log_format = "json"'))


def test_bad_config_is_refused_with_the_key_named(tmp_path):
    bad = tmp_path / "sori.toml"
    bad.write_text('[mqtt]\nqos = 5\n[[home.devices]]\nid = "light.x"\nname = "x"\n')
    out = subprocess.run(
        [*SORI, "run", "--config", str(bad), "--input", "none"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2
    assert "mqtt.qos" in out.stderr
    assert "Traceback" not in out.stderr


def test_http_turns_sighup_reload_and_sigterm(tmp_path, mosquitto, subscriber, private_home):
    config = write_config(tmp_path, mosquitto)
    json_logs(config)
    proc = sori_run(
        "--config", str(config), "--input", "none", "--output", str(tmp_path / "r.wav"),
        "--http", "127.0.0.1:0", cwd=tmp_path,
    )  # fmt: skip
    logs = LogReader(proc)
    try:
        url = logs.wait_for("ready")["http"]
        auth = bearer(private_home)
        turn = httpx.post(f"{url}/say", json={"text": "거실 불 켜줘"}, headers=auth, timeout=30)
        turn = turn.json()
        assert turn["actions"][0]["ok"]
        assert subscriber.next() == ("sori/light/living_room/set", "ON")
        config.write_text(
            config.read_text()
            + '\n[[home.devices]]\nid = "fan.bedroom"\nname = "선풍기"\nhandler = "mqtt"\n'
        )
        proc.send_signal(signal.SIGHUP)
        logs.wait_for("reloaded packs and home")
        turn = httpx.post(f"{url}/say", json={"text": "선풍기 켜줘"}, headers=auth, timeout=30)
        turn = turn.json()
        assert turn["actions"][0]["target"] == "fan.bedroom"
        assert subscriber.next() == ("sori/fan/bedroom/set", "ON")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    traces = [e for e in logs.all if e.get("logger") == "sori.trace"]
    assert len(traces) == 2
    assert {"understand", "act", "first_audio", "total"} <= traces[0]["turn"]["stages_ms"].keys()
    assert any(e.get("msg") == "stopping" for e in logs.all)


def espeak_wav(path: Path, *sentences: str, gap_s: float = 1.0) -> Path:
    """Korean command audio from espeak-ng (the "ko+f3" variant at 160 wpm is the one the
    Korean vosk model, constrained to the presets' phrases, understands), with a pause
    between sentences."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.fail("espeak-ng is not installed; run 'bash scripts/install.sh --test'")
    audio, rate = b"", 22050
    for i, text in enumerate(sentences):
        part = path.with_name(f"{path.stem}-{i}.wav")
        subprocess.run([exe, "-v", "ko+f3", "-s", "160", "-w", str(part), text], check=True)
        with wave.open(str(part)) as wav:
            rate = wav.getframerate()
            audio += wav.readframes(wav.getnframes()) + b"\0\0" * int(rate * gap_s)
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(audio)
    return path


def test_spoken_command_file_end_to_end(tmp_path, mosquitto, subscriber):
    """The acceptance test: Korean command audio in, the MQTT message and the spoken reply
    out, and the process exits once the file's last turn has finished. ("에어컨 꺼줘" is
    the command espeak-ng says clearly enough for vosk across voice variants and speeds.)"""
    command = espeak_wav(tmp_path / "command.wav", "에어컨 꺼줘")
    config = write_config(tmp_path, mosquitto, '[stt.vosk]\nmode = "grammar"\n')
    json_logs(config)
    reply = tmp_path / "reply.wav"
    out = run_file(config, command, timeout_s=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert subscriber.next(timeout_s=5) == ("sori/climate/bedroom/set", "OFF")
    turns = [json.loads(line)["turn"] for line in out.stderr.splitlines() if '"sori.trace"' in line]
    assert [(t["intent"], t["slots"].get("name")) for t in turns] == [("HassTurnOff", "에어컨")]
    assert turns[0]["actions"][0]["ok"]
    with wave.open(str(reply)) as wav:
        said_s = wav.getnframes() / wav.getframerate()
    assert said_s > 0.5
    assert turns[0]["stages_ms"]["speak"] == pytest.approx(said_s * 1000, rel=0.05)
