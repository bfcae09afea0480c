"""The Wyoming server against the wyoming package's own client, on a loopback port: one
real server (vosk, espeak-ng, the example home's presets) for the whole module."""

from __future__ import annotations

import asyncio
import csv
import socket
import subprocess
import sys
import wave
from pathlib import Path

import pytest

pytest.importorskip("wyoming")

from wyoming.asr import Transcribe, Transcript  # noqa: E402
from wyoming.audio import AudioChunk, AudioStart  # noqa: E402
from wyoming.error import Error  # noqa: E402
from wyoming.info import Describe, Info  # noqa: E402
from wyoming.intent import Intent, NotRecognized, Recognize  # noqa: E402
from wyoming.ping import Ping, Pong  # noqa: E402
from wyoming.tts import Synthesize  # noqa: E402
from wyoming.wake import Detect, Detection, NotDetected  # noqa: E402

from sori.core.config import EXAMPLE_CONFIG  # noqa: E402
from sori.core.errors import ConfigError  # noqa: E402
from sori.serving.wyoming_server import (  # noqa: E402
    SERVICE_TYPE,
    WyomingServer,
    announce_name,
    check_uri,
    service_info,
)
from sori.serving.wyoming_server.wire import AudioIn  # noqa: E402
from sori.testing.fakes import character_errors  # noqa: E402
from wyoming_kit import (  # noqa: E402, F401 (the *_fixture ones)
    audio_events,
    config_file_fixture,
    config_fixture,
    free_port,
    server_fixture,
    services_fixture,
    talk,
)

REPO = Path(__file__).resolve().parents[1]
CLIP = "zeroth_104_003_0193.wav"


def test_describe_lists_korean_asr_tts_intents_and_wake(server):
    (event,) = talk(server, [Describe()], ("info",))
    info = Info.from_event(event)
    assert [m.languages for m in info.asr[0].models] == [["ko"]]
    assert info.asr[0].models[0].name == "vosk"
    assert info.tts[0].voices[0].languages == ["ko"]
    assert info.tts[0].voices[0].name.startswith("espeak")
    assert info.intent[0].models[0].languages == ["ko"]
    assert [m.phrase for m in info.wake[0].models] == ["소리야"]


def test_transcribe_a_shared_clip(server, shared_dir):
    folder = shared_dir / "audio" / "ko-read"
    rows = {r["file"]: r for r in csv.DictReader((folder / "manifest.tsv").open(), delimiter="\t")}
    with wave.open(str(folder / CLIP)) as w:
        assert (w.getframerate(), w.getsampwidth(), w.getnchannels()) == (16000, 2, 1)
        pcm = w.readframes(w.getnframes())
    got = talk(
        server, [Transcribe(language="ko"), *audio_events(pcm, 16000, 2, 1)], ("transcript",)
    )
    text = Transcript.from_event(got[-1]).text
    edits, length = character_errors(rows[CLIP]["transcript"], text)
    # heard as `sori replay` hears the file (tests/test_wyoming_transcripts.py): 13/34 here
    assert edits / length <= 0.4, text


def test_transcribe_resamples_another_format(server, shared_dir):
    """44.1 kHz stereo 32-bit from the client is heard like the 16 kHz original."""
    import numpy as np
    import soxr

    with wave.open(str(shared_dir / "audio" / "ko-read" / CLIP)) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    y = soxr.resample(x[: 16000 * 4], 16000, 44100)  # the first 4 s: "그 바람에 나의 몸도"
    stereo = (np.stack([y, y], axis=1) * (2**31 - 1) * 0.9).astype("<i4").tobytes()
    got = talk(server, [Transcribe(), *audio_events(stereo, 44100, 4, 2, 8192)], ("transcript",))
    text = Transcript.from_event(got[-1]).text
    mono = (np.clip(x[: 16000 * 4], -1, 1) * 32767).astype("<i2").tobytes()
    got = talk(server, [Transcribe(), *audio_events(mono, 16000, 2, 1)], ("transcript",))
    original = Transcript.from_event(got[-1]).text
    edits, length = character_errors(original, text)
    assert edits / length <= 0.35, (text, original)


def test_recognize_a_command_gives_the_ha_intent_and_slots(server):
    (event,) = talk(server, [Recognize(text="거실 불 켜줘")], ("intent", "not-recognized"))
    intent = Intent.from_event(event)
    assert intent.name == "HassTurnOn"
    assert {e.name: e.value for e in intent.entities}["name"] == "거실 조명"
    assert intent.text  # the spoken reply, e.g. "거실 조명을 켰어요"


def test_recognize_a_non_command_is_not_recognized(server):
    (event,) = talk(
        server, [Recognize(text="오늘 점심 뭐 먹었는지 기억나")], ("intent", "not-recognized")
    )
    assert event.type == "not-recognized"
    assert NotRecognized.from_event(event).text


def test_synthesize_returns_audio_in_the_announced_format(server):
    got = talk(server, [Synthesize(text="거실 조명을 켰어요.")], ("audio-stop",))
    assert got[0].type == "audio-start"
    start = AudioStart.from_event(got[0])
    assert (start.width, start.channels) == (2, 1) and start.rate >= 8000
    chunks = [AudioChunk.from_event(e) for e in got[1:-1]]
    assert chunks and all(e.type == "audio-chunk" for e in got[1:-1])
    assert all((c.rate, c.width, c.channels) == (start.rate, 2, 1) for c in chunks)
    seconds = sum(len(c.audio) for c in chunks) / 2 / start.rate
    assert 0.3 < seconds < 10


def test_detect_reports_the_phrase_or_not_detected(server, shared_dir):
    with wave.open(str(shared_dir / "audio" / "ko-read" / CLIP)) as w:
        loud = w.readframes(3 * 16000)  # speech, with peaks over -20 dBFS
    got = talk(server, [Detect(names=["소리야"]), *audio_events(loud, 16000, 2, 1)], ("detection",))
    assert Detection.from_event(got[-1]).name == "소리야"
    quiet = bytes(6400)
    got = talk(server, [Detect(), *audio_events(quiet, 16000, 2, 1)], ("detection", "not-detected"))
    assert NotDetected.is_type(got[-1].type)


def test_bad_events_get_an_error_and_the_connection_and_server_live_on(server):
    from wyoming.event import Event

    got = talk(server, [Ping()], ("pong",), raw=b"{not json\n")
    assert got[0].type == "error" and "JSON" in Error.from_event(got[0]).text
    assert Pong.is_type(got[-1].type)
    # an event type it does not know is ignored, as Wyoming peers do, not an error
    got = talk(server, [Event(type="dance"), Ping()], ("pong",))
    assert [e.type for e in got] == ["pong"]
    got = talk(server, [Event(type="recognize", data={}), Ping()], ("pong",))
    assert got[0].type == "error" and "text" in Error.from_event(got[0]).text
    got = talk(server, [AudioChunk(rate=16000, width=2, channels=1, audio=bytes(640))], ("error",))
    assert "before audio-start" in Error.from_event(got[-1]).text
    got = talk(server, [AudioStart(rate=16000, width=3, channels=1), Ping()], ("pong",))
    assert "width" in Error.from_event(got[0]).text
    (event,) = talk(server, [Recognize(text="거실 불 꺼줘")], ("intent", "not-recognized"))
    assert Intent.from_event(event).name == "HassTurnOff"


def test_zeroconf_record_and_disabled_zeroconf(config):
    info = service_info("sori-test", "127.0.0.1", 10700)
    assert info.type == SERVICE_TYPE == "_wyoming._tcp.local."
    assert info.name == "sori-test._wyoming._tcp.local."
    assert info.port == 10700
    assert info.addresses == [socket.inet_aton("127.0.0.1")]
    assert announce_name(config).startswith("sori-")
    assert announce_name(config, zeroconf=False) == ""
    off = WyomingServer(None, "tcp://127.0.0.1:0", announce_as="")

    async def main() -> None:
        await off.start()
        assert off._announcer is None  # nothing registered, no multicast socket opened
        await off.close()

    asyncio.run(main())


def test_bad_uri_is_refused_with_the_fix():
    for bad in ("10700", "tcp://host", "http://x:1", "unix://"):
        with pytest.raises(ConfigError, match="tcp://HOST:PORT"):
            check_uri(bad)
    assert check_uri("tcp://0.0.0.0:10700")


def test_sori_wyoming_command_serves_and_stops_on_sigterm(config_file):
    """The command end to end: it serves describe, and SIGTERM ends it with code 0."""
    import os
    import signal
    import time

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO / "device")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sori", "wyoming", "--config", str(config_file),
         "--uri", f"tcp://127.0.0.1:{port}", "--no-zeroconf"],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        line = ""
        while "serving" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "sori wyoming exited early"
        srv = type("S", (), {"port": port})()
        (event,) = talk(srv, [Describe()], ("info",))
        assert Info.from_event(event).asr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sori_wyoming_bad_uri_exits_2_before_loading_models():
    env = {"PYTHONPATH": str(REPO / "device"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "sori", "wyoming", "--config", str(EXAMPLE_CONFIG),
         "--uri", "localhost:10700"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "tcp://HOST:PORT" in done.stderr and "Traceback" not in done.stderr


def test_sori_run_serves_wyoming_beside_the_http_api(tmp_path):
    """[wyoming] enabled: `sori run` answers Wyoming with the daemon's own presets."""
    import os
    import signal
    import time

    from daemon_kit import HOME_TOML

    port = free_port()
    config = tmp_path / "sori.toml"
    config.write_text(
        HOME_TOML.replace('handler = "mqtt"', 'handler = "dry_run"')
        + "\n[stt]\nwarm_up_s = 0.0\n"
        + f'[wyoming]\nenabled = true\nuri = "tcp://127.0.0.1:{port}"\nzeroconf = false\n',
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "device")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sori", "run", "--config", str(config), "--input", "none",
         "--output", str(tmp_path / "out.wav"), "--http", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        line = ""
        while not line.rstrip().endswith("ready") and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "sori run exited early"
        srv = type("S", (), {"port": port})()
        (event,) = talk(srv, [Recognize(text="거실 불 켜줘")], ("intent", "not-recognized"))
        assert Intent.from_event(event).name == "HassTurnOn"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sori_run_refuses_a_bad_wyoming_uri_before_loading(tmp_path):
    config = tmp_path / "sori.toml"
    config.write_text('[wyoming]\nenabled = true\nuri = "0.0.0.0:10700"\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "sori", "run", "--config", str(config), "--input", "none",
         "--http", "off"],
        capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(REPO / "device"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "[wyoming] uri" in done.stderr and "tcp://HOST:PORT" in done.stderr


def test_recognize_several_commands_gives_one_intent_each_between_start_and_stop(server):
    got = talk(
        server, [Recognize(text="거실 불 켜고 에어컨 꺼 줘")], ("intents-stop", "not-recognized")
    )
    assert [e.type for e in got] == ["intents-start", "intent", "intent", "intents-stop"]
    first, second = (Intent.from_event(e) for e in got[1:3])
    assert (first.name, second.name) == ("HassTurnOn", "HassTurnOff")
    assert {e.name: e.value for e in first.entities}["name"] == "거실 조명"
    assert {e.name: e.value for e in second.entities}["domain"] == "climate"
    assert "켰" in first.text and "껐" in second.text  # each command's own reply


def test_a_transcription_left_unfinished_ends_its_worker_and_frees_the_recognizer(
    server, shared_dir
):
    import threading

    from wyoming.client import AsyncTcpClient

    with wave.open(str(shared_dir / "audio" / "ko-read" / CLIP)) as w:
        pcm = w.readframes(w.getnframes())
    half = audio_events(pcm[: len(pcm) // 2], 16000, 2, 1)[:-1]  # no audio-stop

    async def leave_mid_stream() -> None:
        client = AsyncTcpClient("127.0.0.1", server.port)
        await client.connect()
        for event in [Transcribe(language="ko"), *half]:
            await client.write_event(event.event())
        await client.disconnect()

    asyncio.run(leave_mid_stream())
    got = talk(
        server, [Transcribe(language="ko"), *audio_events(pcm, 16000, 2, 1)], ("transcript",)
    )
    assert Transcript.from_event(got[-1]).text  # the next client is heard in full
    workers = [t for t in threading.enumerate() if t.name == "wyoming-transcribe"]
    for worker in workers:
        worker.join(timeout=10)
    assert not any(w.is_alive() for w in workers)


@pytest.mark.parametrize("chunk", [4096, 10])  # the header whole in one chunk, or in pieces
def test_a_wav_file_sent_as_it_is_is_heard_as_its_samples(server, shared_dir, chunk):
    """Home Assistant's STT API passes a WAV body on as the audio: its header is read (its
    format used), never heard as 44 bytes of sound shifting every sample after it."""
    path = shared_dir / "audio" / "ko-read" / "zeroth_104_003_0374.wav"  # 산책, or 선택
    with wave.open(str(path)) as w:
        pcm = w.readframes(w.getnframes())
    plain = talk(
        server, [Transcribe(language="ko"), *audio_events(pcm, 16000, 2, 1)], ("transcript",)
    )
    as_file = audio_events(path.read_bytes(), 16000, 2, 1, chunk=chunk)
    got = talk(server, [Transcribe(language="ko"), *as_file], ("transcript",))
    assert Transcript.from_event(got[-1]).text == Transcript.from_event(plain[-1]).text
    # what reaches the recognizer is the file's samples exactly, in place, not the header
    # heard as 22 samples of sound that shift every one after them (as it was before)
    heard = heard_samples(path.read_bytes(), chunk)
    assert heard[: len(pcm)] == pcm and heard == heard_samples(pcm, chunk)
    heard_as_sound = b"RIFX" + path.read_bytes()[4:]
    assert heard_samples(heard_as_sound, chunk)[: len(pcm) + 44] == heard_as_sound


def heard_samples(audio: bytes, chunk: int) -> bytes:
    """The frames `AudioIn` passes on for `audio` sent in pieces of `chunk` bytes."""
    incoming = AudioIn(16000, 2, 1)
    frames = []
    for at in range(0, len(audio), chunk):
        piece = AudioChunk(rate=16000, width=2, channels=1, audio=audio[at : at + chunk])
        frames += incoming.push(piece)
    return b"".join(frames + incoming.end())
