"""What `sori run`, `sori replay` and `sori wake` tell a person: one plain line per turn on
stdout, and why speech made nothing (`no turn:`), on real audio."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import test_run_command
from daemon_kit import write_config
from test_run_command import espeak_wav

pytestmark = pytest.mark.slow

SORI = [sys.executable, "-m", "sori"]
READ_CLIP = "zeroth_104_003_0193.wav"  # "그 바람에 나의 몸도 …": no command, no wake phrase
WAKE_ON = "\n[wake]\nenabled = true\n"


@pytest.fixture
def read_clip(shared_dir) -> Path:
    return shared_dir / "audio" / "ko-read" / READ_CLIP


def sori(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([*SORI, *args], capture_output=True, text=True, timeout=240, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def run_file(config: Path, audio: Path, *flags: str) -> subprocess.CompletedProcess:
    done = test_run_command.run_file(config, audio, *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_speech_without_the_wake_phrase_says_so_and_names_it(tmp_path, mosquitto, read_clip):
    config = write_config(tmp_path, mosquitto, wake=WAKE_ON)
    done = run_file(config, read_clip)
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    assert lines[0].startswith("no turn: 1 utterance heard, but not the wake phrase 소리야")
    assert "--no-wake" in lines[0]


def test_speech_not_understood_says_so_with_the_transcript(tmp_path, mosquitto, read_clip):
    config = write_config(tmp_path, mosquitto, wake=WAKE_ON)
    done = run_file(config, read_clip, "--no-wake", "--log-format", "json")
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    assert re.fullmatch(
        r'no turn: heard "그 바람.+", but it was not understood as a command.*', lines[0]
    )
    assert all(json.loads(line) for line in done.stderr.splitlines())  # logs: JSON on stderr


def test_a_spoken_command_prints_what_was_heard_and_done(tmp_path, mosquitto, subscriber):
    command = espeak_wav(tmp_path / "command.wav", "에어컨 꺼줘")
    config = write_config(tmp_path, mosquitto, '[stt.vosk]\nmode = "grammar"\n')
    done = run_file(config, command, "--log-format", "text")
    assert subscriber.next(timeout_s=5) == ("sori/climate/bedroom/set", "OFF")
    assert re.fullmatch(
        r'heard "에어컨 ?꺼 ?줘" → HassTurnOff 에어컨 \(\d+ ms\)', done.stdout.strip()
    )
    assert "sori.run: stopping" in done.stderr  # text logs on stderr, apart from stdout


def test_replay_that_commits_nothing_says_why_on_stderr(tmp_path, mosquitto, read_clip):
    config = write_config(tmp_path, mosquitto, wake=WAKE_ON)
    gated = sori("replay", "--config", str(config), "--json", str(read_clip), cwd=tmp_path)
    assert gated.stdout == ""  # stdout stays machine-readable
    assert (
        f"no turn: {read_clip}: 1 utterance heard, but not the wake phrase 소리야" in gated.stderr
    )
    heard = sori(
        "replay", "--config", str(config), "--json", "--no-wake", str(read_clip), cwd=tmp_path
    )  # fmt: skip
    record = json.loads(heard.stdout)
    assert record["intent"] is None
    said = f'no turn: {read_clip}: heard "{record["transcript"]}", but it was not understood'
    assert said in heard.stderr


def test_wake_that_finds_no_phrase_says_why_on_stderr(tmp_path, mosquitto, read_clip):
    config = write_config(tmp_path, mosquitto, wake=WAKE_ON)
    done = sori("wake", "--config", str(config), "--json", str(read_clip), cwd=tmp_path)
    assert done.stdout == ""
    assert (
        f"no wake phrase: {read_clip}: 1 utterance heard, none opening with 소리야" in done.stderr
    )


def test_text_turns_name_each_command_and_say_an_answer(tmp_path, mosquitto, subscriber):
    import asyncio
    import io

    from daemon_kit import build
    from sori.commands.console import Console

    daemon = build(write_config(tmp_path, mosquitto), tmp_path / "reply.wav")
    out = io.StringIO()
    daemon.listeners.append(Console(["소리야"], gated=False, out=out).observe)

    async def main():
        daemon.start()
        try:
            await daemon.say("거실 불 켜고 에어컨 꺼 줘")
            return await daemon.say("지금 몇 시야")
        finally:
            await daemon.close()

    answer = asyncio.run(main())
    lines = out.getvalue().splitlines()
    both = r'said "거실 불 켜고 에어컨 꺼 줘" → HassTurnOn 거실 조명 \+ HassTurnOff 에어컨 '
    both += r"\(\d+ ms\)"
    assert re.fullmatch(both, lines[0])
    said = f'said "지금 몇 시야" → HassGetCurrentTime: "{answer["response"]}"'
    assert lines[1].startswith(said) and len(lines) == 2


def test_a_microphone_explains_utterances_that_made_no_turn_once_a_minute():
    """No input ends on a microphone: a minute on, what made nothing is said, once."""
    import io

    from sori.commands.console import Console
    from sori.core.events import SpeechStarted, SpeechStopped, UtteranceHeard

    s = 1_000_000_000
    out = io.StringIO()
    console = Console(["소리야"], gated=True, out=out)
    console.observe(SpeechStarted(1 * s, 1, 1 * s))
    console.observe(SpeechStopped(3 * s, 1, 3 * s))  # never woken: never transcribed
    console.observe(SpeechStarted(40 * s, 2, 40 * s))
    console.observe(SpeechStopped(42 * s, 2, 42 * s))
    console.observe(UtteranceHeard(42 * s, 2, "", 40 * s, 42 * s, 42 * s, 42 * s))
    assert out.getvalue() == ""  # under a minute of microphone: nothing yet
    console.observe(SpeechStarted(65 * s, 3, 65 * s))  # a minute on, the next utterance
    lines = out.getvalue().splitlines()
    assert lines == [
        "no turn: 1 utterance heard, but not the wake phrase 소리야 (say 소리야 first, or run "
        "with --no-wake to hear every utterance)",
        "no turn: 1 utterance heard, but no words were recognized in it",
    ]
    console.observe(SpeechStarted(130 * s, 4, 130 * s))  # explained once, not again
    assert out.getvalue().splitlines() == lines
