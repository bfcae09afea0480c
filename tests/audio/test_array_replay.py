"""A microphone array end to end: `sori replay` of a 4-channel recording hears the
command its mono close-talk recording says, puts the talker's direction on the events,
and acts on none of the read (non-command) speech heard through a reverberant room.

The command is espeak-ng's, which the small vosk model hears only just: a room's echoes,
or even the fractional delay of a simulated direct path, turn "에어컨 꺼 줘" into other
words on one microphone as on the beam (docs/hearing.md, "Across the room: arrays"). So
the command reaches the array as a plane wave with a noise 10 dB under it from another
direction, which the beam must take out while leaving the command as it was said."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from array_rooms import LEAD_S, free_field, read_clip, simulate

from daemon_kit import write_config
from sori.assemble.hearing import build_array, build_hearing, front_end, source_frames
from sori.core.config import load_config
from sori.core.events import SpeechStarted
from sori.hearing.audio.augment import make_noise
from sori.hearing.audio.format import RATE_HZ, read_channels, write_wav
from sori.hearing.audio.sources import FileSource
from sori.hearing.pacing import ReplayClock, replay
from test_run_command import espeak_wav

pytestmark = pytest.mark.slow

COMMAND = "에어컨 꺼줘"
TALKER_DEG = 60.0
QUICK_TOML = "\n[stt]\nwarm_up_s = 0.0\n"
MONO_TOML = QUICK_TOML + '\n[audio]\ndenoise = "off"\n'
ARRAY_TOML = MONO_TOML + 'channels = 4\n\n[audio.array]\ngeometry = "respeaker-4mic-hat"\n'
"""The array's path alone: the denoiser's decisions are tests/audio/test_denoise*.py's."""
READ_CLIPS = ("zeroth_104_003_0294.wav", "zeroth_104_003_0374.wav")


def espeak(folder: Path, text: str) -> np.ndarray:
    return read_clip(str(espeak_wav(folder / "said.wav", text, gap_s=0.0)), 10.0)


def write_channels(path: Path, samples: np.ndarray) -> Path:
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    write_wav(path, pcm.tobytes(), channels=samples.shape[1])
    return path


@pytest.fixture(scope="module")
def recordings(tmp_path_factory, shared_dir) -> dict[str, Path]:
    """The command close-talk (mono) and at the array (4 channels, pink noise 10 dB
    under it from 100° away), and two read sentences through a room (RT60 0.4 s)."""
    folder = tmp_path_factory.mktemp("array-replay")
    said = espeak(folder, COMMAND)
    lead = np.zeros(int(LEAD_S * RATE_HZ), np.float32)
    close = np.concatenate([lead, said, lead])
    files = {"close": write_channels(folder / "close.wav", close[:, None])}
    noise = make_noise("pink", len(close), np.random.default_rng(5))
    noise *= np.sqrt(np.mean(said**2)) / 10 ** (10 / 20)
    heard = free_field(close, TALKER_DEG) + free_field(noise, TALKER_DEG + 100)
    files["room"] = write_channels(folder / "room.wav", heard)
    for k, name in enumerate(READ_CLIPS):
        speech = read_clip(str(shared_dir / "audio" / "ko-read" / name), 4.0)
        read = simulate(speech, 200.0 + 60 * k, 330.0, below_db=10.0, seed=2 + k)
        files[f"read{k}"] = write_channels(folder / f"read{k}.wav", read.mixed)
    return files


def sori_replay(config: Path, *files: Path) -> list[dict]:
    return replayed(config, *files)[0]


def replayed(config: Path, *files: Path) -> tuple[list[dict], str]:
    """`sori replay --json` of `files`: its records, and what it said on stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "sori", "replay", "--no-wake", "--json", "--config",
         str(config), *map(str, files)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_the_array_hears_the_command_its_close_talk_says_and_no_other(recordings, tmp_path):
    mono = write_config(tmp_path, "mqtt://127.0.0.1:1", MONO_TOML)
    close_talk = sori_replay(mono, recordings["close"])
    close = [(r["transcript"], r["intent"]) for r in close_talk]
    assert [intent for _, intent in close] == ["HassTurnOff"]
    assert [r["doa_deg"] for r in close_talk] == [None]  # one microphone: no direction

    array = tmp_path / "array"
    array.mkdir()
    config = write_config(array, "mqtt://127.0.0.1:1", ARRAY_TOML)
    heard = sori_replay(config, recordings["room"], recordings["read0"], recordings["read1"])
    by_file = {Path(r["file"]).stem: r for r in heard if r["intent"]}
    assert list(by_file) == ["room"], heard  # the read sentences: no action
    assert (by_file["room"]["transcript"], by_file["room"]["intent"]) == close[0]
    assert abs((by_file["room"]["doa_deg"] - TALKER_DEG + 180) % 360 - 180) <= 10


def test_a_command_the_phrase_sample_lacks_commits_at_the_pause(recordings, tmp_path):
    """The grammar holds a sample of the home's phrases, and "에어컨 꺼 줘" is not in it
    with no home configured, yet its decoder hears it from the words of others ("알람 을
    꺼 줘"). At the pause the two passes are cut together, since the words end in a
    phrase's closing words, so the command commits from the partial hypothesis, before
    the final transcript: close-talk, and through the array in quiet."""
    from sori.assemble.hearing import hearing_recognizer
    from sori.assemble.understanding import home_from_config, presets_from_config

    mono, array = tmp_path / "mono.toml", tmp_path / "array.toml"
    mono.write_text(MONO_TOML, encoding="utf-8")  # no home: Home Assistant's sentences
    array.write_text(ARRAY_TOML, encoding="utf-8")
    config = load_config(str(mono))
    presets = presets_from_config(config.intents, home_from_config(config.home))
    assert "에어컨 꺼 줘" not in hearing_recognizer(config, presets).grammar

    samples = read_channels(recordings["close"], 1)[:, 0]
    quiet = write_channels(tmp_path / "quiet.wav", free_field(samples, TALKER_DEG))
    heard = sori_replay(mono, recordings["close"]) + sori_replay(array, quiet)
    assert [r["intent"] for r in heard] == ["HassTurnOff", "HassTurnOff"], heard
    assert all(r["commit_s"] < r["final_s"] for r in heard), heard


def test_a_board_with_a_dead_first_microphone_still_hears_the_command(recordings, tmp_path):
    """Microphone 0 reads zeros (a driver that maps fewer slots, a cracked joint): the
    front end leaves it out, says so on stderr, and the command is heard as before."""
    samples = read_channels(recordings["room"], 4)
    samples[:, 0] = 0.0
    dead = write_channels(tmp_path / "dead-first.wav", samples)
    config = write_config(tmp_path, "mqtt://127.0.0.1:1", ARRAY_TOML)
    heard, stderr = replayed(config, dead)
    acted = [(r["transcript"].replace(" ", ""), r["intent"]) for r in heard if r["intent"]]
    assert acted == [(COMMAND.replace(" ", ""), "HassTurnOff")], heard
    assert "microphone 0 of the array carries no sound (digital silence)" in stderr
    assert "check the board's driver and wiring" in stderr


def test_speech_started_says_where_the_talker_stood(recordings, tmp_path):
    config = load_config(str(write_config(tmp_path, "mqtt://127.0.0.1:1", ARRAY_TOML)))
    array = build_array(config)
    clock = ReplayClock()
    hearing = build_hearing(config, None, None, clock, steering=array)
    frames = front_end(config, source_frames(FileSource(recordings["room"]), config), array=array)
    starts = [e for e in replay(frames, hearing, clock) if isinstance(e, SpeechStarted)]
    assert starts, "no utterance heard"
    assert abs((starts[0].doa_deg - TALKER_DEG + 180) % 360 - 180) <= 10


def test_sori_wake_hears_a_phrase_across_the_array_and_refuses_a_mono_file(
    recordings, tmp_path, shared_dir
):
    """The wake phrase "현재" (a shared clip's first word) reaches the array from 60°
    with pink noise 20 dB under it from 160°: `sori wake` beams the four channels and
    finds it where a single microphone hears it. A one-channel file is refused."""
    speech = read_clip(str(shared_dir / "audio" / "ko-read" / "zeroth_104_003_0253.wav"), 1.1)
    lead = np.zeros(int(LEAD_S * RATE_HZ), np.float32)
    said = np.concatenate([lead, speech, lead])
    noise = make_noise("pink", len(said), np.random.default_rng(9))
    noise *= np.sqrt(np.mean(speech**2)) / 10 ** (20 / 20)
    heard = free_field(said, TALKER_DEG) + free_field(noise, TALKER_DEG + 100)
    room = write_channels(tmp_path / "wake-room.wav", heard)
    config = write_config(tmp_path, "mqtt://127.0.0.1:1", ARRAY_TOML)
    done = subprocess.run(
        [sys.executable, "-m", "sori", "wake", "--phrase", "현재", "--json", "--config",
         str(config), str(room), str(recordings["close"])],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr  # the mono file
    (found,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert found["phrase"] == "현재" and found["file"].endswith("wake-room.wav")
    assert LEAD_S + 0.5 < found["start_s"] < found["end_s"] < LEAD_S + 1.2  # 0.66-1.05 s in
    assert "close.wav: 1 channel(s), but audio.channels is 4" in done.stderr


def test_an_array_s_raw_pcm_on_stdin_is_heard_as_its_file(recordings, tmp_path):
    """`sori replay -` of the array's recording as raw interleaved PCM at 48 kHz (as
    `arecord -c 4` would pipe it) commits what the WAV file does, from the same
    direction; with --channels not the array's it says what to give."""
    from sori.hearing.audio.format import read_channels

    config = write_config(tmp_path, "mqtt://127.0.0.1:1", ARRAY_TOML)
    room = read_channels(str(recordings["room"]), 4)
    at_48k = np.repeat(room, 3, axis=0)  # 16 → 48 kHz, each sample held three times
    raw = (np.clip(at_48k, -1, 1) * 32767).astype("<i2").tobytes()

    def piped(channels: int) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "sori", "replay", "--no-wake", "--json", "--config",
             str(config), "--format", "s16le", "--rate", "48000", "--channels",
             str(channels), "-"],
            input=raw if channels == 4 else raw[: len(raw) // 4], capture_output=True,
            timeout=300,
        )  # fmt: skip

    done = piped(4)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    heard = [json.loads(line) for line in done.stdout.splitlines()]
    (command,) = [r for r in heard if r["intent"]]
    assert (command["transcript"], command["intent"]) == ("에어컨 꺼 줘", "HassTurnOff")
    assert abs((command["doa_deg"] - TALKER_DEG + 180) % 360 - 180) <= 10
    wrong = piped(1)
    assert wrong.returncode != 0 and "give --channels 4" in wrong.stderr.decode()
