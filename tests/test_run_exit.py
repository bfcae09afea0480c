"""Every way `sori run` ends: exit 0 (or the error's code), never a crash, within 5 s.

The local model loads on a background thread for seconds after "ready"; a crash at exit
(exit 139/132 while llama.cpp computes) or a shutdown held by a stuck action shows here.
scripts/exit_soak.py runs the same paths 50 times each.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time

import httpx
import pytest

from daemon_kit import build, write_config
from test_run_command import (
    SORI,
    LogReader,
    bearer,
    espeak_wav,
    json_logs,
    run_file,
    sori_run,
)

pytestmark = pytest.mark.slow

SHUTDOWN_S = 5.0

THINKING_SHELL = """
[[home.devices]]
id = "switch.heater"
name = "히터"
area = "living_room"
handler = "shell"

[shell]
allow = ["/bin/sh"]
commands = { "switch.heater" = ["/bin/sh", "-c", "sleep 30 & sleep 30"] }
timeout_s = 60

[actions]
timeout_s = 60
"""


def thinking_config(tmp_path, mosquitto, extra: str = ""):
    config = write_config(tmp_path, mosquitto, THINKING_SHELL + extra)
    json_logs(config)
    config.write_text(config.read_text().replace("thinking = false", "thinking = true"))
    return config


def stop_and_time(proc: subprocess.Popen, sig: int) -> tuple[int, float]:
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, time.monotonic() - sent


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGTERM, signal.SIGINT])
def test_a_stop_while_the_model_loads_exits_0_in_time(tmp_path, mosquitto, sig):
    config = thinking_config(tmp_path, mosquitto)
    proc = sori_run(
        "--config", str(config), "--input", "none", "--output", str(tmp_path / "r.wav"),
        "--http", "off", cwd=tmp_path,
    )  # fmt: skip
    logs = LogReader(proc)
    logs.wait_for("ready")  # the local model is still loading then
    code, took_s = stop_and_time(proc, sig)
    assert code == 0, logs.all[-5:]
    assert took_s < SHUTDOWN_S


def test_a_stuck_action_does_not_hold_the_shutdown(tmp_path, mosquitto, private_home):
    """The shell program sleeps 30 s and leaves a child holding its output; the turn is
    cancelled, the process still exits 0 within the deadline."""
    config = thinking_config(tmp_path, mosquitto)
    proc = sori_run(
        "--config", str(config), "--input", "none", "--output", str(tmp_path / "r.wav"),
        "--http", "127.0.0.1:0", cwd=tmp_path,
    )  # fmt: skip
    logs = LogReader(proc)
    url = logs.wait_for("ready")["http"]
    with pytest.raises(httpx.TimeoutException):  # the action is still running
        httpx.post(
            f"{url}/say", json={"text": "히터 켜줘"}, headers=bearer(private_home), timeout=1.5
        )
    code, took_s = stop_and_time(proc, signal.SIGTERM)
    assert code == 0, logs.all[-5:]
    assert took_s < SHUTDOWN_S


def test_the_end_of_a_file_exits_0_while_the_model_loads(tmp_path, mosquitto, subscriber):
    command = espeak_wav(tmp_path / "command.wav", "에어컨 꺼줘")
    config = thinking_config(tmp_path, mosquitto, '[stt.vosk]\nmode = "grammar"\n')
    for _ in range(2):
        out = run_file(config, command, timeout_s=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert subscriber.next(timeout_s=5) == ("sori/climate/bedroom/set", "OFF")


@pytest.mark.parametrize("name", ["missing.wav", "broken.wav"])
def test_a_startup_error_while_the_model_loads_is_reported_cleanly(tmp_path, mosquitto, name):
    """A missing file is refused before anything loads; a broken one once it is read, while
    the local model loads on its thread."""
    config = thinking_config(tmp_path, mosquitto)
    (tmp_path / "broken.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot audio at all")
    out = subprocess.run(
        [*SORI, "run", "--config", str(config), "--input", str(tmp_path / name),
         "--output", str(tmp_path / "reply.wav"), "--http", "off"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr[-2000:]
    assert name in out.stderr
    assert "Traceback" not in out.stderr


def test_close_gives_up_on_a_turn_that_ignores_cancellation(tmp_path, mosquitto):
    daemon = build(write_config(tmp_path, mosquitto), tmp_path / "reply.wav")

    stubborn_for = [True]

    async def stubborn() -> None:
        while stubborn_for[0]:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                continue  # a handler that will not stop (until the test is done)

    async def main() -> tuple[list[str], float]:
        turn = daemon.spawn(stubborn())
        await asyncio.sleep(0.05)
        started = time.monotonic()
        left = await asyncio.wait_for(daemon.close(1.0), 10)
        took_s = time.monotonic() - started
        turn.remove_done_callback(daemon._done)
        stubborn_for[0] = False  # let it end, so no pending task outlives the loop
        turn.cancel()
        await asyncio.wait([turn], timeout=5)
        return left, took_s

    left, took_s = asyncio.run(main())
    assert left and left[0].startswith("turn")
    assert took_s < 2.0


def test_shutdown_s_out_of_range_is_refused(tmp_path):
    bad = tmp_path / "sori.toml"
    bad.write_text("[daemon]\nshutdown_s = 60\n")
    out = subprocess.run(
        [*SORI, "run", "--config", str(bad), "--input", "none"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2
    assert "daemon.shutdown_s" in out.stderr


@pytest.mark.parametrize("after_s", [0.0, 0.1, 0.25])
def test_a_stop_while_the_daemon_is_built_exits_cleanly(tmp_path, mosquitto, after_s):
    """SIGTERM `after_s` after "building", with daemon.shutdown_s = 0.5: the packs, voice
    and handlers are still loading on their thread, and past the deadline the build is
    left behind. Exit 0 within the deadline, never a traceback (it was exit 1 with
    AttributeError: 'NoneType' object has no attribute 'start')."""
    config = write_config(tmp_path, mosquitto)
    json_logs(config)
    config.write_text(config.read_text().replace("[daemon]\n", "[daemon]\nshutdown_s = 0.5\n"))
    proc = sori_run(
        "--config", str(config), "--input", "none", "--output", str(tmp_path / "r.wav"),
        "--http", "127.0.0.1:0", cwd=tmp_path,
    )  # fmt: skip
    logs = LogReader(proc)
    logs.wait_for("building")
    time.sleep(after_s)
    code, took_s = stop_and_time(proc, signal.SIGTERM)
    time.sleep(0.2)  # the reader thread takes the last lines
    shown = "\n".join(str(e) for e in logs.all)
    assert code == 0, shown[-2000:]
    assert "Traceback" not in shown and "Error" not in shown, shown[-2000:]
    assert took_s < SHUTDOWN_S


def test_the_end_of_a_file_leaves_no_thread_of_the_recognizer_running(tmp_path, mosquitto):
    """The recognizer's second-pass thread, started by the warm-up (so a daemon thread),
    outlived every stop: the shutdown waited for it until its deadline, then left with
    "exiting without teardown". Stopping releases it."""
    command = espeak_wav(tmp_path / "command.wav", "에어컨 꺼줘")
    config = write_config(tmp_path, mosquitto, '[stt.vosk]\nmode = "grammar"\n')
    json_logs(config)
    out = run_file(config, command, timeout_s=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "of speech-like sound in" in out.stderr  # the warm-up ran: it started the thread
    assert "without teardown" not in out.stderr, out.stderr[-2000:]
