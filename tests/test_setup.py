"""`sori setup` writes a commented sori.toml that loads, from flags or from a few answers on
a terminal, refuses to overwrite without --force, and prints the next command."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tomllib
from pathlib import Path

from sori.core.config import load_config, parse_config
from sori.core.config.starter import node_id

REPO = Path(__file__).resolve().parents[1]


def sori(*args: str, home: Path, cwd: Path):
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO / "device")}
    env.pop("SORI_CONFIG", None)
    env.pop("SORI_HA_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "sori", *args], env=env, cwd=cwd, text=True,
        capture_output=True, timeout=60,
    )  # fmt: skip


def test_flags_write_a_config_that_loads_and_round_trips(tmp_path):
    out = tmp_path / "etc" / "sori.toml"
    done = sori(
        "setup", "--area", "거실", "--ha-url", "http://ha.local:8123", "--ha-token-env",
        "MY_HA", "--mqtt-url", "mqtt://10.0.0.2:1883", "--wake", "소리야", "--across-room",
        "--non-interactive", "-o", str(out), home=tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# sori.toml, written by `sori setup`")
    config = load_config(str(out))  # validates
    assert config.home.area == "living_room" and config.home.areas[0].name == "거실"
    assert config.home.source == "home_assistant"
    assert config.home_assistant.url == "http://ha.local:8123"
    assert config.home_assistant.token_env == "MY_HA"
    assert config.mqtt.url == "mqtt://10.0.0.2:1883"
    assert config.mqtt.node_id == "sori_living_room"  # one per room's speaker
    assert config.actions.default_handler == "home_assistant"
    assert config.audio.dereverb == "spectral"
    assert config.http.token_file == str(tmp_path / ".config" / "sori" / "api-token")
    assert (tmp_path / ".config" / "sori" / "api-token").stat().st_mode & 0o077 == 0
    assert "소리야" in text  # [wake] phrases (commented out until Sori has [wake])
    assert "export MY_HA=" in done.stdout and f"sori run --config {out}" in done.stdout
    # Round trip: the written TOML read back is the same document.
    assert tomllib.loads(text) == tomllib.loads(out.read_text(encoding="utf-8"))


def test_each_room_s_speaker_gets_its_own_node_id_that_discovery_can_read():
    rooms = ["거실", "안방", "주방", "다락방", "2층 거실", "Garage"]
    ids = [node_id(room) for room in rooms]
    assert ids[:3] == ["sori_living_room", "sori_bedroom", "sori_kitchen"]
    assert ids[5] == "sori_Garage"
    assert len(set(ids)) == len(ids)
    assert node_id("다락방") == ids[3]  # the same room, the same id, on every setup
    for id_ in ids:
        assert parse_config({"mqtt": {"node_id": id_}}).mqtt.node_id == id_


def test_a_microphone_spoken_into_from_close_by_keeps_dereverberation_off(tmp_path):
    """Dereverberation is the default (any speaker in a room is talked to from a step away
    or more); --no-across-room leaves it out, and that alone is a config flag, not the
    token-only mode."""
    close, default = tmp_path / "close.toml", tmp_path / "default.toml"
    for out, flags in ((close, ["--no-across-room"]), (default, [])):
        done = sori(
            "setup", *flags, "--token-file", str(tmp_path / "token"), "--non-interactive",
            "-o", str(out), home=tmp_path, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert load_config(str(close)).audio.dereverb == "off"
    assert load_config(str(default)).audio.dereverb == "spectral"


def test_a_speaker_that_shares_its_broker_with_another_arbitrates_its_wake_phrase(tmp_path):
    """--arbitrate: the kitchen's and the living room's speakers on one broker each answer
    only the wake phrases they heard clearest; each has its own node id to tell them apart.
    Without a broker there is no one to tell: refused, nothing written."""
    configs = []
    for room in ("거실", "주방"):
        out = tmp_path / f"{room}.toml"
        done = sori(
            "setup", "--area", room, "--mqtt-url", "mqtt://10.0.0.2:1883", "--arbitrate",
            "--wake", "소리야", "--non-interactive", "-o", str(out), home=tmp_path, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        configs.append(load_config(str(out)))
    assert all(c.wake.arbitrate and c.wake.phrases == ["소리야"] for c in configs)
    assert [c.mqtt.node_id for c in configs] == ["sori_living_room", "sori_kitchen"]
    alone = tmp_path / "alone.toml"
    done = sori(
        "setup", "--area", "거실", "--mqtt-url", "mqtt://10.0.0.2:1883", "--non-interactive",
        "-o", str(alone), home=tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0 and not load_config(str(alone)).wake.arbitrate
    nowhere = tmp_path / "nowhere.toml"
    done = sori(
        "setup", "--arbitrate", "--non-interactive", "-o", str(nowhere), home=tmp_path,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "--mqtt-url" in done.stderr and not nowhere.exists()


def test_default_path_is_found_by_every_command_and_not_overwritten(tmp_path):
    done = sori("setup", "--area", "안방", "--non-interactive", home=tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = tmp_path / ".config" / "sori" / "sori.toml"
    assert written.is_file()
    assert 'sori intent "불 켜줘"' in done.stdout
    first = written.read_text(encoding="utf-8")
    # `sori intent` finds it (no first-run note) and "불 켜줘" means 안방.
    check = sori("intent", "--json", "불 켜줘", home=tmp_path, cwd=tmp_path)
    assert "example home" not in check.stderr
    assert json.loads(check.stdout)["slots"].get("area") == "안방"
    again = sori("setup", "--area", "거실", "--non-interactive", home=tmp_path, cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr
    assert written.read_text(encoding="utf-8") == first
    forced = sori(
        "setup", "--area", "거실", "--non-interactive", "--force", home=tmp_path, cwd=tmp_path
    )
    assert forced.returncode == 0 and 'area = "living_room"' in written.read_text()


def test_bad_urls_are_refused_and_nothing_written(tmp_path):
    out = tmp_path / "sori.toml"
    done = sori(
        "setup", "--ha-url", "ha.local:8123", "--non-interactive", "-o", str(out),
        home=tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "--ha-url" in done.stderr and "http://" in done.stderr
    assert not out.exists()


def setup_on_a_terminal(tmp_path: Path, out: Path, answers: list[bytes]) -> bytes:
    """Run `sori setup -o OUT` on a pseudo-terminal, typing `answers` one per question;
    what it printed."""
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(REPO / "device")}
    pid, fd = pty.fork()
    if pid == 0:  # the child: sori setup on a pseudo-terminal
        os.execve(sys.executable, [sys.executable, "-m", "sori", "setup", "-o", str(out)], env)
    seen = b""
    questions, answers = len(answers), list(answers)
    while True:
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if seen.count(b": ") > questions - len(answers) and answers:
            os.write(fd, answers.pop(0))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, seen.decode(errors="replace")
    return seen


def test_questions_on_a_terminal(tmp_path):
    """On a terminal setup asks; Enter keeps the default (거실, no HA, no MQTT, 소리야,
    talked to from a step away or more: dereverberation on)."""
    out = tmp_path / "sori.toml"
    seen = setup_on_a_terminal(tmp_path, out, [b"\n"] * 5)
    assert b"Which room" in seen
    config = load_config(str(out))
    assert config.home.areas[0].name == "거실"
    assert config.actions.default_handler == "dry_run"
    assert b"a step away or more (Y/n)" in seen and config.audio.dereverb == "spectral"
    assert b"another Sori speaker" not in seen and not config.wake.arbitrate  # no broker


def test_with_a_broker_the_terminal_asks_about_other_speakers_on_it(tmp_path):
    out = tmp_path / "sori.toml"
    answers = [b"\n", b"\n", b"mqtt://10.0.0.2:1883\n", b"y\n", b"\n", b"\n"]
    seen = setup_on_a_terminal(tmp_path, out, answers)
    assert b"another Sori speaker in this home on that broker (y/N)" in seen
    config = load_config(str(out))
    assert config.wake.arbitrate and config.wake.phrases == ["소리야"]
    assert config.mqtt.url == "mqtt://10.0.0.2:1883" and config.mqtt.node_id == "sori_living_room"


def test_a_config_holding_a_password_is_written_0600(tmp_path):
    """`--mqtt-url mqtt://u:pw@…` put the password into a 0644 file."""
    out = tmp_path / "sori.toml"
    done = sori(
        "setup", "--mqtt-url", "mqtt://sori:hunter2@10.0.0.2:1883", "--non-interactive",
        "-o", str(out), home=tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "hunter2" in out.read_text() and out.stat().st_mode & 0o777 == 0o600
    plain = tmp_path / "plain.toml"
    done = sori(
        "setup", "--mqtt-url", "mqtt://10.0.0.2:1883", "--non-interactive", "-o", str(plain),
        home=tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert plain.stat().st_mode & 0o077 == 0o044 & ~current_umask()  # nothing secret: as before


def test_force_replaces_a_symlinked_config_through_the_link(tmp_path):
    real = tmp_path / "etc" / "sori.toml"
    real.parent.mkdir()
    real.write_text("# old\n")
    link = tmp_path / "sori.toml"
    link.symlink_to(real)
    done = sori(
        "setup", "--mqtt-url", "mqtt://u:pw@10.0.0.2:1883", "--non-interactive", "--force",
        "-o", str(link), home=tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and "mqtt://u:pw@" in real.read_text()
    assert real.stat().st_mode & 0o777 == 0o600


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_an_array_named_is_written_with_its_channels_and_geometry(tmp_path):
    """--array names the board: its driver's channels and geometry are written, and the
    config hears the microphones' channels of it; with the board not plugged in, setup
    says to set audio.device. --array none keeps one microphone."""
    from sori.assemble.hearing import build_array

    out = tmp_path / "array.toml"
    done = sori(
        "setup", "--array", "respeaker-usb-4mic", "--token-file", str(tmp_path / "token"),
        "--non-interactive", "--json", "-o", str(out), home=tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["array"] == {
        "board": "respeaker-usb-4mic", "channels": 6, "device": "", "unsure": "",
    }  # fmt: skip
    assert record["notes"] == [
        "no respeaker-usb-4mic is plugged in: set audio.device in the config once it is"
    ]
    config = load_config(str(out))
    assert (config.audio.channels, config.audio.array.geometry) == (6, "respeaker-usb-4mic")
    assert config.audio.dereverb == "spectral"  # the [audio] table holds both
    layout = build_array(config).layout
    assert (layout.microphones, layout.playback) == ((1, 2, 3, 4), (5,))
    mono = tmp_path / "mono.toml"
    done = sori(
        "setup", "--array", "none", "--token-file", str(tmp_path / "token"),
        "--non-interactive", "-o", str(mono), home=tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert load_config(str(mono)).audio.channels == 1
    wrong = sori("setup", "--array", "respeaker-9mic", "--non-interactive", "-o",
                 str(tmp_path / "x.toml"), home=tmp_path, cwd=tmp_path)  # fmt: skip
    assert wrong.returncode == 2 and "invalid choice" in wrong.stderr


def test_an_array_found_plugged_in_is_heard_through_unless_its_name_could_be_another():
    from sori.commands.setup import choose_array
    from sori.hearing.audio.array import BoardFound

    usb = BoardFound("respeaker-usb-4mic", 6, "ReSpeaker 4 Mic Array (UAC1.0): USB Audio")
    kit = BoardFound("respeaker-6mic", 8, "seeed-8mic-voicecard", unsure="the Linear kit")
    chosen, notes = choose_array(None, [usb])
    assert chosen == usb and "--array none" in notes[0]
    assert choose_array("none", [usb]) == (None, [])
    chosen, notes = choose_array(None, [kit])
    assert chosen is None and "--array respeaker-6mic --force if it is" in notes[0]
    assert choose_array("respeaker-6mic", [kit]) == (kit, [])  # named: its device kept
    assert choose_array(None, []) == (None, [])


def test_on_a_terminal_an_array_found_is_asked_about(monkeypatch):
    import argparse

    from sori.commands.setup import ask
    from sori.hearing.audio.array import BoardFound

    usb = BoardFound("respeaker-usb-4mic", 6, "ReSpeaker 4 Mic Array (UAC1.0): USB Audio")
    asked = []
    for answer, array in (("", "respeaker-usb-4mic"), ("n", "none")):
        monkeypatch.setattr("builtins.input", lambda prompt, a=answer: asked.append(prompt) or a)
        args = argparse.Namespace(
            area="거실", ha_url="", ha_token_env=None, mqtt_url="", wake=["소리야"],
            across_room=True, array=None,
        )  # fmt: skip
        ask(args, [usb])
        assert args.array == array
    assert asked[0] == (
        "Hear through the respeaker-usb-4mic (ReSpeaker 4 Mic Array (UAC1.0): USB Audio) "
        "(Y/n) [y]: "
    )
