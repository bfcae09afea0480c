"""`sori doctor`: each check on boards without devices, models or memory, and the CLI's
exit codes and JSON."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path

import pytest

from faults import Relay
from sori.cli import main
from sori.core.config import Config, parse_config
from sori.provisioning import doctor

pytestmark = pytest.mark.slow

PI5_CPUINFO = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 asimddp\n"
AMX_CPUINFO = "flags\t\t: fpu avx2 fma avx512f amx_tile amx_int8\n"


def test_missing_audio_devices_are_reported_not_crashed():
    def broken():
        raise OSError("PortAudio library not found")

    checks = doctor.check_audio(broken)
    assert [c.ok for c in checks] == [False, False]
    assert "PortAudio library not found" in checks[0].detail and "libportaudio2" in checks[0].fix
    only_output = doctor.check_audio(lambda: [
        {"name": "hdmi", "max_input_channels": 0, "max_output_channels": 2,
         "default_samplerate": 48000.0}])  # fmt: skip
    assert not only_output[0].ok and "microphone" in only_output[0].fix
    assert only_output[1].ok and "48000 Hz" in only_output[1].detail


def test_amx_fault_fails_the_cpu_check_with_the_installer_fix():
    check = doctor.check_cpu(AMX_CPUINFO, "x86_64", llama_probe=lambda: False)
    assert not check.ok and "install.sh" in check.fix
    assert doctor.check_cpu(AMX_CPUINFO, "x86_64", llama_probe=lambda: True).ok
    arm = doctor.check_cpu(PI5_CPUINFO, "aarch64")
    assert arm.ok and "asimddp" in arm.detail


def test_low_memory_fails():
    check = doctor.check_memory("MemTotal: 4000000 kB\nMemAvailable: 300000 kB\n")
    assert not check.ok and "292 MB available" in check.detail


def test_missing_and_damaged_models_fail(tmp_path):
    config = parse_config({"stt": {"backend": "sherpa",
                                   "sherpa": {"model_dir": str(tmp_path / "gone")}}})  # fmt: skip
    check = doctor.check_models(config, tmp_path / "models")
    assert not check.ok and "stt.sherpa.model_dir" in check.detail
    assert "sori models fetch" in check.fix
    assert doctor.check_models(Config(), tmp_path / "models").ok


def test_unreachable_broker_fails_quickly():
    config = parse_config({"mqtt": {"url": "mqtt://127.0.0.1:1"}})
    (check,) = doctor.check_reachable(config, {"mqtt"})
    assert not check.ok and "127.0.0.1:1" in check.detail


@pytest.mark.parametrize(
    "uses_the_broker",
    [{"mqtt": {"discovery": True}}, {"wake": {"arbitrate": True}}],
    ids=["discovery", "wake arbitration"],
)
def test_the_broker_is_checked_when_no_device_but_the_speaker_itself_uses_it(uses_the_broker):
    url = {"url": "mqtt://127.0.0.1:1"}
    assert doctor.check_reachable(parse_config({"mqtt": url}), set()) == []
    settings = {**uses_the_broker, "mqtt": {**uses_the_broker.get("mqtt", {}), **url}}
    (check,) = doctor.check_reachable(parse_config(settings), set())
    assert check.name == "mqtt" and not check.ok and "127.0.0.1:1" in check.detail


@pytest.mark.parametrize(
    ("delay_s", "window_ms", "ok"),
    [(0.0, 250, True), (0.015, 150, False)],
    ids=["a broker at hand", "15 ms each way at a 150 ms window"],
)
def test_arbitration_times_the_broker_against_an_eighth_of_the_window(
    mosquitto, delay_s, window_ms, ok
):
    """A claim that takes over an eighth of the window to travel can make two speakers
    answer one phrase: the broker is timed, here behind a relay that delays each way."""
    port = int(mosquitto.rsplit(":", 1)[1])
    relay = Relay(port, delay_s)
    try:
        config = parse_config({
            "mqtt": {"url": relay.url},
            "wake": {"arbitrate": True, "arbitrate_window_ms": window_ms},
        })  # fmt: skip
        check = doctor.check_arbitration(config, probes=3)
    finally:
        relay.close()
    assert check is not None and check.name == "wake arbitration"
    assert check.ok is ok, check.detail
    assert f"an eighth of the {window_ms} ms window is {window_ms / 8:.0f} ms" in check.detail
    if not ok:
        assert "set_tcp_nodelay" in check.fix and "arbitrate_window_ms" in check.fix
    assert doctor.check_arbitration(parse_config({"mqtt": {"url": relay.url}})) is None


def test_arbitration_with_the_broker_down_fails_once(tmp_path, capsys):
    config = tmp_path / "sori.toml"
    config.write_text('[mqtt]\nurl = "mqtt://127.0.0.1:1"\n\n[wake]\narbitrate = true\n')
    main(["doctor", "--json", "--no-self-test", "--config", str(config),
          "--dir", str(tmp_path / "models")])  # fmt: skip
    rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert not rows["mqtt"]["ok"]
    assert "wake arbitration" not in rows  # the broker's own check says it
    (check,) = [doctor.check_arbitration(parse_config(tomllib.loads(config.read_text())))]
    assert not check.ok and "127.0.0.1:1" in check.detail and "[mqtt] url" in check.fix


def test_self_test_times_the_pipeline_on_a_synthetic_clip(tmp_path):
    clip = doctor.synthetic_clip(tmp_path / "s.wav", seconds=2.0)
    check = doctor.self_test(Config(), clip)
    assert "RTF" in check.detail and "2.0 s of audio" in check.detail


def test_cli_json_and_exit_code(tmp_path, capsys):
    bad = tmp_path / "sori.toml"
    bad.write_text('[intents]\nfuzzy_threshold = "high"\n')
    code = main(["doctor", "--json", "--no-self-test", "--config", str(bad),
                 "--dir", str(tmp_path / "models")])  # fmt: skip
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1
    names = {r["name"]: r for r in rows}
    assert {"python", "packages", "cpu", "memory", "disk", "audio input", "audio output",
            "config"} <= set(names)  # fmt: skip
    assert not names["config"]["ok"] and "fuzzy_threshold" in names["config"]["detail"]
    assert all(r["fix"] for r in rows if not r["ok"])
    assert Path(tmp_path / "models").exists() is False  # doctor never creates folders


def test_self_test_fails_when_nothing_was_heard(tmp_path):
    clip = doctor.synthetic_clip(tmp_path / "s.wav", seconds=2.0)
    check = doctor.self_test(Config(), clip)
    assert not check.ok
    assert "0 utterance(s)" in check.detail and "nothing was heard" in check.detail
    assert "--clip" in check.fix


def test_self_test_fails_when_speech_commits_nothing_and_passes_on_a_command(tmp_path, shared_dir):
    from daemon_kit import HOME_TOML
    from test_run_command import espeak_wav

    config = parse_config(tomllib.loads(HOME_TOML + '[stt.vosk]\nmode = "grammar"\n'))
    read = doctor.self_test(config, shared_dir / "audio" / "ko-read" / "zeroth_104_003_0193.wav")
    assert not read.ok and ("nothing committed" in read.detail or "no words" in read.detail)
    command = doctor.self_test(config, espeak_wav(tmp_path / "command.wav", "에어컨 꺼줘"))
    # heard and committed (whether it is fast enough depends on the machine, not checked)
    assert "1 utterance(s)" in command.detail and "nothing" not in command.detail
    assert "--clip" not in command.fix


USB_ARRAY = {"name": "ReSpeaker 4 Mic Array (UAC1.0): USB Audio (hw:2,0)", "max_input_channels": 6}
HEADPHONES = {"name": "bcm2835 Headphones: - (hw:0,0)", "max_input_channels": 0}


def test_an_array_plugged_in_that_the_config_does_not_hear_through_fails_with_the_fix():
    mono = Config()
    check = doctor.check_array(mono, lambda: [HEADPHONES, USB_ARRAY])
    assert not check.ok and "one microphone" in check.detail
    assert check.fix.startswith("sori setup --array respeaker-usb-4mic --force")
    assert 'device = "ReSpeaker 4 Mic Array (UAC1.0): USB Audio", channels = 6' in check.fix
    array = dataclasses.replace(mono.audio.array, geometry="respeaker-usb-4mic")
    four = dataclasses.replace(mono, audio=dataclasses.replace(mono.audio, channels=4, array=array))
    assert not doctor.check_array(four, lambda: [USB_ARRAY]).ok  # the chip's mix as a mic
    six = dataclasses.replace(four, audio=dataclasses.replace(four.audio, channels=6))
    assert doctor.check_array(six, lambda: [USB_ARRAY]).ok
    assert doctor.check_array(mono, lambda: [HEADPHONES]) is None  # no array: no check


def test_a_failing_device_list_leaves_the_array_to_the_audio_check():
    def broken():
        raise OSError("PortAudio library not found")

    assert doctor.check_array(Config(), broken) is None


def test_a_board_the_config_names_that_is_not_listed_fails_with_its_card():
    """A HAT whose driver did not load after an upgrade lists no card: the config's board
    is missing, said with the card to look for."""
    base = Config()
    array = dataclasses.replace(base.audio.array, geometry="respeaker-4mic-hat")
    hat = dataclasses.replace(base, audio=dataclasses.replace(base.audio, channels=4, array=array))
    check = doctor.check_array(hat, lambda: [HEADPHONES])
    assert not check.ok and "no sound card of one is listed" in check.detail
    assert "'seeed-4mic-voicecard'" in check.fix and "arecord -l" in check.fix
    own = dataclasses.replace(hat.audio.array, geometry="")  # placed by mic_positions_m
    own_board = dataclasses.replace(hat, audio=dataclasses.replace(hat.audio, array=own))
    assert doctor.check_array(own_board, lambda: [HEADPHONES]) is None  # no card to look for


def test_the_echo_path_check_says_what_the_next_start_begins_from(tmp_path, monkeypatch):
    """None kept, kept for this setup, for another, unusable or unreadable: said, and
    nothing is touched (the start, not the doctor, sets a bad file aside)."""
    from sori.assemble.hearing import echo_path_store

    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))
    config = Config()
    assert "none kept yet" in doctor.check_echo_path(config).detail
    store = echo_path_store(config)
    store.path.write_text(json.dumps({"version": 1, "setup": store.setup, "paths": ["AA=="]}))
    check = doctor.check_echo_path(config)
    assert check.ok and "kept for this setup (1 microphone(s)" in check.detail
    other = parse_config({"audio": {"device": "hw:2"}})
    assert "learned for another setup" in doctor.check_echo_path(other).detail
    store.path.write_text("{not json")
    assert "the next start sets it aside" in doctor.check_echo_path(config).detail
    assert [p.name for p in tmp_path.iterdir()] == ["echo-path.json"]
    off = parse_config({"audio": {"echo_cancel": "off"}})
    assert doctor.check_echo_path(off) is None
    monkeypatch.setenv("STATE_DIRECTORY", str(store.path))  # a file where the folder should be
    check = doctor.check_echo_path(config)
    assert check.ok and "cannot be read" in check.detail and "every start learns" in check.detail
