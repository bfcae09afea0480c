"""Exit soak: run each way `sori run` ends N times; exit codes and shutdown times per path.

A crash at exit (exit 139, a segmentation fault while llama.cpp still computes on a worker
thread) or a shutdown past `daemon.shutdown_s` shows up here. Paths:

  sigterm-early    SIGTERM 0.2-2 s after the start (the model loads, or sori still starts)
  sigterm-ready    SIGTERM right after "ready" (the local model still loads)
  sigint-ready     the same with SIGINT (Ctrl-C)
  file-end         --input FILE with a spoken command and MQTT: exits at the file's end
  stuck-shell      SIGTERM while a shell action runs (its program sleeps, a child lingers)
  startup-error    --input with a broken file while the model loads: exit 2, clear message

Shutdown time is from the signal (or the "stopping" line for file-end) to the exit. Needs
mosquitto and espeak-ng (scripts/install.sh --test). Progress on stderr; --json for a report.

    PYTHONPATH=device .venv/bin/python scripts/exit_soak.py -n 50 --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import wave
from pathlib import Path

from loopback_broker import start_mosquitto

PATHS = (
    "sigterm-early",
    "sigterm-ready",
    "sigint-ready",
    "file-end",
    "stuck-shell",
    "startup-error",
)

CONFIG = """
[intents]
home_assistant = false

[home]
area = "living_room"
areas = [{{ id = "living_room", name = "거실" }}, {{ id = "bedroom", name = "안방" }}]

[[home.devices]]
id = "light.living_room"
name = "거실 조명"
area = "living_room"
aliases = ["거실 불"]
handler = "mqtt"

[[home.devices]]
id = "climate.bedroom"
name = "에어컨"
area = "bedroom"
handler = "mqtt"

[[home.devices]]
id = "switch.heater"
name = "히터"
area = "living_room"
handler = "shell"

[shell]
allow = ["/bin/sh"]
commands = {{ "switch.heater" = ["/bin/sh", "-c", "sleep 30 & sleep 30"] }}
timeout_s = 60

[actions]
timeout_s = 60

[stt.vosk]
mode = "grammar"

[tts]
backend = "espeak"

[mqtt]
url = "{mqtt}"

[daemon]
log_format = "json"
thinking = true
"""


def spoken_command(path: Path, text: str) -> Path:
    """A WAV of `text` by espeak-ng (the voice the Korean vosk grammar understands), with a
    second of silence after it."""
    raw = path.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", "-v", "ko+f3", "-s", "160", "-w", str(raw), text], check=True)
    with wave.open(str(raw)) as src:
        params, audio = src.getparams(), src.readframes(src.getnframes())
    with wave.open(str(path), "wb") as dst:
        dst.setparams(params)
        dst.writeframes(audio + b"\0\0" * params.framerate)
    return path


class Run:
    """One `sori run` process with its log lines read on a thread."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sori", "run", *args],
            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.lines: list[tuple[float, str]] = []
        self.seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            with self.seen:
                self.lines.append((time.monotonic(), line.rstrip()))
                self.seen.notify_all()

    def wait_for(self, message: str, timeout_s: float) -> float | None:
        """Monotonic time of the first log line whose msg is `message`."""
        end = time.monotonic() + timeout_s
        with self.seen:
            while True:
                for at, line in self.lines:
                    if f'"msg": "{message}"' in line or f'"msg":"{message}"' in line:
                        return at
                if self.proc.poll() is not None or time.monotonic() > end:
                    return None
                self.seen.wait(0.1)

    def finish(self, timeout_s: float) -> tuple[int | None, float]:
        try:
            code = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        return code, time.monotonic()


def say_over_http(url: str, text: str) -> None:
    """POST /say without waiting for the answer (the action does not end)."""
    import httpx

    def post() -> None:
        with contextlib.suppress(Exception):  # the daemon is stopped under it
            httpx.post(f"{url}/say", json={"text": text}, timeout=60)

    threading.Thread(target=post, daemon=True).start()


def one(path: str, folder: Path, config: Path, wav: Path, rng: random.Random) -> dict:
    base = ["--config", str(config), "--output", str(folder / "out.wav")]
    expect = 0
    if path == "startup-error":
        broken = folder / "broken.wav"  # exists, so it is read after the model began to load
        broken.write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot audio at all")
        run = Run([*base, "--input", str(broken), "--http", "off"], folder)
        code, ended = run.finish(60)
        stop_at, expect = run.started, 2
    elif path == "file-end":
        run = Run([*base, "--input", str(wav), "--http", "off"], folder)
        code, ended = run.finish(120)
        stop_at = run.wait_for("stopping", 0) or ended
    else:
        http = ["--http", "127.0.0.1:0"] if path == "stuck-shell" else ["--http", "off"]
        run = Run([*base, "--input", "none", *http], folder)
        sig = signal.SIGINT if path == "sigint-ready" else signal.SIGTERM
        if path == "sigterm-early":
            time.sleep(rng.uniform(0.2, 2.0))
        else:
            run.wait_for("ready", 90)
        if path == "stuck-shell":
            line = next((ln for _, ln in run.lines if '"ready"' in ln), "{}")
            say_over_http(json.loads(line).get("http", ""), "히터 켜줘")
            time.sleep(1.0)  # the shell action has started by then
        stop_at = time.monotonic()
        run.proc.send_signal(sig)
        code, ended = run.finish(60)
    tail = [ln for _, ln in run.lines[-3:]]
    return {"code": code, "expect": expect, "shutdown_s": round(ended - stop_at, 3), "tail": tail}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=50, help="runs per path (default 50)")
    parser.add_argument("--paths", default=",".join(PATHS), help="comma-separated subset")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    paths = [p for p in args.paths.split(",") if p]
    unknown = set(paths) - set(PATHS)
    if unknown:
        parser.error(f"unknown paths {sorted(unknown)}; choose from {', '.join(PATHS)}")
    rng = random.Random(args.seed)
    report = {}
    with tempfile.TemporaryDirectory(prefix="sori-soak-") as tmp:
        folder = Path(tmp)
        broker, url = start_mosquitto(folder)
        try:
            config = folder / "sori.toml"
            config.write_text(CONFIG.format(mqtt=url), encoding="utf-8")
            wav = spoken_command(folder / "command.wav", "에어컨 꺼줘")
            for path in paths:
                runs = []
                for i in range(args.n):
                    result = one(path, folder, config, wav, rng)
                    runs.append(result)
                    bad = result["code"] != result["expect"]
                    print(
                        f"{path} {i + 1}/{args.n}: exit {result['code']} "
                        f"in {result['shutdown_s']:.2f} s" + (f"  {result['tail']}" if bad else ""),
                        file=sys.stderr,
                    )
                codes: dict[str, int] = {}
                for r in runs:
                    codes[str(r["code"])] = codes.get(str(r["code"]), 0) + 1
                times = sorted(r["shutdown_s"] for r in runs)
                report[path] = {
                    "runs": len(runs),
                    "expected_code": runs[0]["expect"] if runs else 0,
                    "exit_codes": codes,
                    "unexpected": sum(r["code"] != r["expect"] for r in runs),
                    "max_shutdown_s": times[-1] if times else None,
                    "median_shutdown_s": times[len(times) // 2] if times else None,
                }
        finally:
            broker.terminate()
            broker.wait(timeout=10)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for path, r in report.items():
            print(
                f"{path:14} runs {r['runs']:3}  codes {r['exit_codes']}  "
                f"max {r['max_shutdown_s']} s  median {r['median_shutdown_s']} s"
            )
    return 1 if any(r["unexpected"] for r in report.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
