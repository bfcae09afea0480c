"""Turns gated by a wake phrase, end to end: `sori run --input FILE` and `sori replay` on
a file made of a shared clip's opening word (the wake phrase) and spoken commands."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from daemon_kit import write_config
from test_run_command import run_file

pytestmark = pytest.mark.slow

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
    out = run_file(config, session)
    assert out.returncode == 0, out.stderr[-3000:]
    turns = [json.loads(line)["turn"] for line in out.stderr.splitlines() if '"sori.trace"' in line]
    turns = [t for t in turns if t["text"]]  # the phrase alone: nothing after it (as in replay)
    heard = [(t["turn"], t["text"]) for t in turns]  # shown when a turn is wrong
    assert [(t["turn"], t["intent"], t["slots"].get("name")) for t in turns] == [
        (2, "HassTurnOff", "에어컨"),
        (3, "HassTurnOff", "에어컨"),  # the command after the phrase, the phrase stripped
        (4, "HassTurnOff", "에어컨"),
    ], heard
    assert all(WAKE not in t["text"] for t in turns), heard
    # one vosk model for the recognizer and the wake detector (about 500 MiB each)
    assert out.stderr.count("vosk: model loaded") == 1
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


class RoomSpeaker:
    """Sori's speaker as the test's microphone hears it: `say` starts an answer at once
    (after the frame heard last: the time the pipeline took is not the test's), `stop`
    cuts it (barge-in), and `heard` adds what it played during a frame, at `gain`, to the
    frame (no echo cancellation); what it plays is kept in `played`, as the daemon's
    player keeps it."""

    def __init__(self, played, gain: float) -> None:
        self.played, self.gain = played, gain
        self._pcm, self._at_ns, self._handed, self._heard_ns = b"", 0, 0, 0

    def say(self, pcm: bytes) -> None:
        self._pcm, self._at_ns, self._handed = pcm, self._heard_ns, 0

    def stop(self) -> None:
        self._pcm = b""

    def heard(self, frame):
        from echo_kit import with_echo

        self._heard_ns = frame.end_ns
        upto = max(0, (frame.end_ns - self._at_ns) * 16000 // 10**9 * 2)
        if upto > self._handed and self._handed < len(self._pcm):
            self.played.add(self._at_ns + self._handed * 10**9 // 32000,
                            self._pcm[self._handed : upto], 16000)  # fmt: skip
            self._handed = min(upto, len(self._pcm))
        return with_echo(frame, self.played, self.gain, frame.start_ns)


def test_sori_answering_at_once_ends_the_command_and_a_phrase_over_the_answer_barges_in(
    tmp_path, mosquitto, shared_dir
):
    """Live: "현재, 에어컨 꺼줘", and Sori's answer starts at the commit, before the 0.5 s
    pause that would end the utterance, so the voice detector hears the command and the
    answer as one. The command's turn ends where the answer begins: its transcript
    is the command's, without Sori's words, and nothing is corrected. "현재, 에어컨 꺼줘"
    said again 4 s into the answer, in the same utterance, wakes (the answer stops) and
    makes a second turn."""
    from daemon_kit import build, load
    from echo_kit import REPLY, sori_says
    from sori.assemble.hearing import build_hearing, hearing_recognizer
    from sori.assemble.wake import build_wake_detector
    from sori.core.events import IntentCommitted, IntentCorrected, UtteranceHeard, WakeDetected
    from sori.hearing.audio.augment import to_pcm16
    from sori.hearing.audio.format import to_pipeline
    from sori.hearing.audio.played import PlayedAudio
    from sori.hearing.audio.ring import FrameChunker
    from sori.hearing.pacing import ReplayClock, replay
    from sori.serving.conversation.listening import Conversation

    extra = '[stt]\nwarm_up_s = 0\n[stt.vosk]\nmode = "grammar"\n'
    config_path = write_config(tmp_path, mosquitto, extra, WAKE_TOML)
    config, _ = load(config_path)
    daemon = build(config_path, tmp_path / "reply.wav")
    understanding = daemon.understanding
    asyncio.run(daemon.close())  # its understanding is all this test needs of it
    recognizer = hearing_recognizer(config, understanding)
    detector = build_wake_detector(config, recognizer=recognizer)

    with wave.open(str(shared_dir / "audio" / "ko-read" / "zeroth_104_003_0253.wav")) as w:
        wake = np.frombuffer(w.readframes(int(1.1 * w.getframerate())), np.int16)
    cmd = np.frombuffer(to_pipeline(espeak(tmp_path, "에어컨 꺼줘") / 32768, RATE), np.int16)
    loud = np.nonzero(np.abs(cmd) > 300)[0]
    cmd = cmd[loud[0] : loud[-1] + 1]  # the audible part: the pause after it is the test's
    said = np.concatenate([wake, np.zeros(2400, np.int16), cmd]).astype(np.float32)
    again_s = 1.0 + len(said) / 16000 + 4.0
    audio = np.zeros(int((again_s + len(said) / 16000 + 4.0) * 16000), np.float32)
    audio[16000 : 16000 + len(said)] = said
    audio[int(again_s * 16000) :][: len(said)] += said
    answer = to_pcm16(sori_says(config, REPLY))  # about 15 s
    rms = lambda x: float(np.sqrt(np.mean(np.square(x.astype(np.float64)))))  # noqa: E731
    speaker = RoomSpeaker(PlayedAudio(), rms(said) / rms(np.frombuffer(answer, np.int16)) / 10)

    conversation = Conversation(gated=True, live=True)
    conversation.echo = speaker.played
    clock = ReplayClock()
    hearing = build_hearing(config, recognizer, understanding, clock, 0, detector, conversation)
    frames = map(speaker.heard, FrameChunker(config.audio.frame_ms).push(to_pcm16(audio)))
    events = []
    for event in replay(frames, hearing, clock):
        events.append(event)
        if isinstance(event, IntentCommitted):
            speaker.say(answer)  # a cached answer plays at once
        elif isinstance(event, WakeDetected):
            speaker.stop()

    wakes = [e for e in events if isinstance(e, WakeDetected)]
    assert len(wakes) == 2 and wakes[0].utterance_id == wakes[1].utterance_id
    assert again_s + 0.5 < wakes[1].start_ns / 1e9 < again_s + 1.2  # "현재" is 0.66 s in
    assert not [e for e in events if isinstance(e, IntentCorrected)]
    commits = [e for e in events if isinstance(e, IntentCommitted)]
    assert [(c.intent, c.slots.get("name")) for c in commits] == [("HassTurnOff", "에어컨")] * 2
    heard = [e for e in events if isinstance(e, UtteranceHeard)]
    assert [e.text for e in heard] == ["에어컨 꺼 줘"] * 2
    assert events.index(heard[0]) < events.index(wakes[1])
