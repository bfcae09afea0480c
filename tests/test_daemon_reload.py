"""SIGHUP reload: the whole new config is checked before anything is swapped; a refused
reload keeps the running home and handlers, and /health tells the last result."""

from __future__ import annotations

import asyncio
import time

from daemon_kit import build, write_config


async def closing(daemon, coro):
    try:
        return await asyncio.wait_for(coro, 30)
    finally:
        await daemon.close()


def reload_then_command(daemon):
    async def main():
        ok = await daemon.reload()
        return ok, await daemon.say("거실 불 켜줘")

    return asyncio.run(closing(daemon, main()))


def test_health_reports_no_reload_before_the_first(tmp_path, mosquitto):
    daemon = build(write_config(tmp_path, mosquitto), tmp_path / "reply.wav")
    asyncio.run(daemon.close())
    health = daemon.health()
    assert health["status"] == "ok" and health["reload"] is None


def test_an_emptied_config_file_does_not_wipe_the_home(tmp_path, mosquitto, subscriber):
    config = write_config(tmp_path, mosquitto)
    daemon = build(config, tmp_path / "reply.wav")
    config.write_text("")
    ok, turn = reload_then_command(daemon)
    assert ok is False
    assert turn["actions"][0]["ok"] and turn["actions"][0]["target"] == "light.living_room"
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
    health = daemon.health()
    assert health["status"] == "ok"  # still serving on the running config
    assert health["reload"]["ok"] is False
    assert "no devices" in health["reload"]["error"] and str(config) in health["reload"]["error"]
    assert abs(health["reload"]["t"] - time.time()) < 60
    assert daemon.reloads == 0


def test_a_reload_that_changes_handlers_is_refused(tmp_path, mosquitto, subscriber):
    config = write_config(tmp_path, mosquitto)
    daemon = build(config, tmp_path / "reply.wav")
    text = config.read_text().replace('handler = "mqtt"', 'handler = "webhook"', 1)
    config.write_text(text + '\n[webhook]\nurl = "http://127.0.0.1:9/hook"\n')
    ok, turn = reload_then_command(daemon)
    assert ok is False
    error = daemon.health()["reload"]["error"]
    assert "handler webhook would be added" in error and "restart to change handlers" in error
    assert turn["actions"][0]["ok"]  # the light still goes through the running mqtt handler
    assert subscriber.next() == ("sori/light/living_room/set", "ON")


def test_a_reload_that_changes_handler_settings_is_refused(tmp_path, mosquitto):
    config = write_config(tmp_path, mosquitto)
    daemon = build(config, tmp_path / "reply.wav")
    config.write_text(config.read_text().replace(mosquitto, "mqtt://127.0.0.1:1"))
    ok, turn = reload_then_command(daemon)
    assert ok is False and turn["actions"][0]["ok"]
    assert "[mqtt] changes" in daemon.health()["reload"]["error"]


def test_a_bad_number_on_reload_is_refused_with_the_key(tmp_path, mosquitto):
    config = write_config(tmp_path, mosquitto)
    daemon = build(config, tmp_path / "reply.wav")
    config.write_text(config.read_text().replace("[intents]", "[intents]\nfuzzy_threshold = nan"))
    ok, turn = reload_then_command(daemon)
    assert ok is False and turn["actions"][0]["ok"]
    assert (
        "intents.fuzzy_threshold must be between 0 and 1, got nan"
        in (daemon.health()["reload"]["error"])
    )


def test_a_good_reload_is_reported_with_what_needs_a_restart(tmp_path, mosquitto):
    config = write_config(tmp_path, mosquitto)
    daemon = build(config, tmp_path / "reply.wav")
    config.write_text(config.read_text() + "\n[vad]\nstop_ms = 700\n")
    ok, turn = reload_then_command(daemon)
    assert ok is True and turn["actions"][0]["ok"]
    result = daemon.health()["reload"]
    assert result["ok"] is True and result["error"] == ""
    assert result["note"] == "restart to apply [vad]"
    assert daemon.reloads == 1


def test_sighup_with_an_emptied_file_shows_in_health(tmp_path, mosquitto):
    """The issue's case end to end: `sori run`, the file emptied, SIGHUP, GET /health."""
    import signal

    import httpx

    from test_run_command import LogReader, json_logs, sori_run

    config = write_config(tmp_path, mosquitto)
    json_logs(config)
    proc = sori_run(
        "--config", str(config), "--input", "none", "--output", str(tmp_path / "r.wav"),
        "--http", "127.0.0.1:0", cwd=tmp_path,
    )  # fmt: skip
    logs = LogReader(proc)
    try:
        url = logs.wait_for("ready")["http"]
        assert httpx.get(f"{url}/health", timeout=10).json()["reload"] is None
        config.write_text("")
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 60
        health = {}
        while time.monotonic() < deadline:
            health = httpx.get(f"{url}/health", timeout=10).json()
            if health["reload"] is not None:
                break
            time.sleep(0.1)
        assert health["status"] == "ok" and health["reloads"] == 0
        assert health["reload"]["ok"] is False
        assert "refusing to empty the home" in health["reload"]["error"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert any("reload refused" in e.get("msg", "") for e in logs.all)
