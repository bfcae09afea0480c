"""Sori as a Home Assistant voice satellite, end to end on loopback: a real daemon (vosk,
espeak-ng, dry-run actions, WAV output) hears a shared clip; the wyoming package's own
client plays Home Assistant (describe, run-satellite, the pipeline's answers). Also: detect
with the [wake] detector, and `sori run` loading the recognizer's model once."""

from __future__ import annotations

import asyncio
import csv
import os
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("wyoming")

from wyoming.asr import Transcribe, Transcript  # noqa: E402
from wyoming.audio import AudioChunk, AudioStart, AudioStop  # noqa: E402
from wyoming.client import AsyncTcpClient  # noqa: E402
from wyoming.info import Describe, Info  # noqa: E402
from wyoming.pipeline import PipelineStage, RunPipeline  # noqa: E402
from wyoming.satellite import PauseSatellite, RunSatellite  # noqa: E402
from wyoming.tts import Synthesize  # noqa: E402
from wyoming.wake import Detect, Detection  # noqa: E402

from daemon_kit import HOME_TOML  # noqa: E402
from sori.core.config import load_config  # noqa: E402
from sori.testing.fakes import character_errors  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CLIP = "zeroth_104_003_0193.wav"  # "그 바람에 나의 몸도 ...": no preset matches it
WAKE_CLIP = "zeroth_104_003_0019.wav"  # opens with "지난해"
TONE_HZ, REPLY_RATE = 440, 22050

CONFIG = (
    HOME_TOML.replace('handler = "mqtt"', 'handler = "dry_run"')
    + "\n[stt]\nwarm_up_s = 0.0\n[wake]\nenabled = false\n"
    + '[wyoming]\nenabled = true\nuri = "tcp://127.0.0.1:0"\nzeroconf = false\nsatellite = true\n'
)


def _clips(shared_dir: Path) -> tuple[Path, dict]:
    folder = shared_dir / "audio" / "ko-read"
    rows = {r["file"]: r for r in csv.DictReader((folder / "manifest.tsv").open(), delimiter="\t")}
    return folder, rows


async def _read_until(client: AsyncTcpClient, kinds: tuple[str, ...], timeout_s: float = 60):
    got = []
    while True:
        event = await asyncio.wait_for(client.read_event(), timeout_s)
        assert event is not None, f"Sori closed the connection after {[e.type for e in got]}"
        got.append(event)
        if event.type in kinds:
            return got


def _tone(seconds: float) -> bytes:
    t = np.arange(int(REPLY_RATE * seconds)) / REPLY_RATE
    return (np.sin(2 * np.pi * TONE_HZ * t) * 12000).astype("<i2").tobytes()


def test_satellite_hands_over_what_it_does_not_understand_and_plays_the_answer(
    tmp_path, shared_dir
):
    """HA connects and runs the satellite; a read sentence no preset matches reaches HA
    as run-pipeline + the utterance's audio; HA's reply audio plays through Sori's sink
    and HA hears `played`; a preset command is acted on locally and never reaches HA."""
    from sori.assemble.daemon import build_daemon
    from sori.assemble.hearing import hearing_recognizer, open_hearing
    from sori.assemble.understanding import home_from_config
    from sori.core.events import ActionFinished, IntentCommitted, TurnFinished
    from sori.serving.wyoming_server import serve_beside
    from sori.serving.wyoming_server.satellite import attach_satellite

    folder, rows = _clips(shared_dir)
    path = tmp_path / "sori.toml"
    path.write_text(CONFIG, encoding="utf-8")
    config = load_config(str(path))
    home = home_from_config(config.home)
    out = tmp_path / "out.wav"

    async def main() -> dict:
        daemon = await asyncio.to_thread(
            build_daemon, config, home, str(out), lambda: (config, home),
            warm_presets=False, input_name=str(folder / CLIP), no_wake=True,
        )  # fmt: skip
        daemon.start()
        events = daemon.subscribe(1024)
        recognizer = await asyncio.to_thread(hearing_recognizer, config, daemon.understanding)
        link = attach_satellite(config, daemon, "sori-test")
        voice = daemon.player.cache.voice
        server = await serve_beside(config, home, daemon.understanding, voice, recognizer, link)
        mic = getattr(recognizer, "inner", recognizer)  # without the room's denoiser
        assert server.services.recognizer.model is mic.model  # one model, two decoders
        ha = AsyncTcpClient("127.0.0.1", server.port)
        await ha.connect()
        result: dict = {}
        try:
            await ha.write_event(Describe().event())
            info = Info.from_event((await _read_until(ha, ("info",)))[-1])
            assert info.satellite is not None and info.satellite.name == "sori-test"
            assert info.satellite.has_vad and info.satellite.area == "living_room"
            await ha.write_event(RunSatellite().event())
            for _ in range(100):
                if link.running:
                    break
                await asyncio.sleep(0.05)
            assert link.running
            source, heard = await asyncio.to_thread(
                open_hearing, str(folder / CLIP), config, daemon.understanding, daemon.clock,
                daemon.conversation, recognizer, link.tap,
            )  # fmt: skip
            listening = asyncio.create_task(daemon.listen(heard))
            got = await _read_until(ha, ("audio-stop",))
            run = RunPipeline.from_event(got[0])
            assert (run.start_stage, run.end_stage) == (PipelineStage.ASR, PipelineStage.TTS)
            assert got[1].type == "audio-start"
            chunks = [AudioChunk.from_event(e) for e in got if e.type == "audio-chunk"]
            assert {(c.rate, c.width, c.channels) for c in chunks} == {(16000, 2, 1)}
            result["handed"] = b"".join(c.audio for c in chunks)
            # Home Assistant's answer: what it heard, its reply text, the reply's audio
            for event in (
                Transcript(text=rows[CLIP]["transcript"]), Synthesize(text="동백꽃이네요"),
                AudioStart(rate=REPLY_RATE, width=2, channels=1),
                *(AudioChunk(rate=REPLY_RATE, width=2, channels=1, audio=c)
                  for c in np.array_split(np.frombuffer(_tone(0.6), "<i2"), 6)),
                AudioStop(),
            ):  # fmt: skip
                if isinstance(event, AudioChunk):
                    event.audio = event.audio.tobytes()
                await ha.write_event(event.event())
            await _read_until(ha, ("played",))
            await listening
            # a preset command, as hearing commits it: acted on here, not sent to HA
            match = daemon.understanding.match("거실 불 켜줘")
            await daemon.on_heard(
                IntentCommitted(daemon.clock.now_ns(), 7, "거실 불 켜줘", match.intent,
                                dict(match.slots), 1.0, match.response, False)
            )  # fmt: skip
            await daemon.drain()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(ha.read_event(), 0.5)
            seen = []
            while not events.empty():
                seen.append(events.get_nowait())
            result["turns"] = [e for e in seen if e["type"] == TurnFinished.__name__]
            result["actions"] = [e for e in seen if e["type"] == ActionFinished.__name__]
            result["handed_over"] = link.handed_over
            # pause-satellite: nothing more is handed over
            await ha.write_event(PauseSatellite().event())
            for _ in range(100):
                if not link.running:
                    break
                await asyncio.sleep(0.05)
            assert not link.running
            # the audio Home Assistant got is the utterance: Sori's own recognizer hears it
            other = AsyncTcpClient("127.0.0.1", server.port)
            await other.connect()
            pcm = result["handed"]
            await other.write_event(Transcribe(language="ko").event())
            await other.write_event(AudioStart(rate=16000, width=2, channels=1).event())
            for i in range(0, len(pcm), 8192):
                await other.write_event(
                    AudioChunk(rate=16000, width=2, channels=1, audio=pcm[i : i + 8192]).event()
                )
            await other.write_event(AudioStop().event())
            result["text"] = Transcript.from_event(
                (await _read_until(other, ("transcript",)))[-1]
            ).text
            await other.disconnect()
            source.close()
        finally:
            await ha.disconnect()
            await server.close()
            await daemon.close(5)
        return result

    result = asyncio.run(main())
    assert result["handed_over"] == 1
    seconds = len(result["handed"]) / 2 / 16000
    assert 5 < seconds < 8.8, seconds  # the 8.8 s clip's speech, without its silences
    edits, length = character_errors(rows[CLIP]["transcript"], result["text"])
    assert edits / length <= 0.45, result["text"]  # vosk's own error on this clip: ~0.38
    # the local command turn happened here, with its dry-run action
    assert [t["intent"] for t in result["turns"]] == ["HassTurnOn"]
    assert [a["ok"] for a in result["actions"]] == [True]
    # HA's reply was played first into the sink: the 440 Hz tone
    with wave.open(str(out)) as w:
        rate = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(float)
    head = x[: int(rate * 0.5)]
    peak_hz = np.argmax(np.abs(np.fft.rfft(head))) * rate / len(head)
    assert abs(peak_hz - TONE_HZ) < 10, peak_hz
    assert len(x) > rate * 0.6  # then the local command's spoken reply


def test_detect_uses_the_configured_wake_phrase(tmp_path, shared_dir):
    """[wake] phrases = ["지난해"]: detect on a clip that opens with it → detection, and
    the info lists the phrase; a clip that does not → not-detected; a long stream that says
    it after other speech and a pause → detection (each utterance's start is heard)."""
    from sori.assemble.understanding import home_from_config
    from sori.serving.wyoming_server import WyomingServer, load_services

    folder, _ = _clips(shared_dir)
    path = tmp_path / "sori.toml"
    path.write_text(
        CONFIG.replace("[wake]\nenabled = false", '[wake]\nenabled = true\nphrases = ["지난해"]'),
        encoding="utf-8",
    )
    config = load_config(str(path))
    services = load_services(config, home_from_config(config.home))
    assert services.detector is not None and services.detector.phrases == ["지난해"]

    def pcm(name: str) -> bytes:
        with wave.open(str(folder / name)) as w:
            return w.readframes(w.getnframes())

    async def detect(server: WyomingServer, audio: bytes) -> str:
        client = AsyncTcpClient("127.0.0.1", server.port)
        await client.connect()
        try:
            await client.write_event(Detect(names=["지난해"]).event())
            await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
            for i in range(0, len(audio), 8192):
                chunk = AudioChunk(rate=16000, width=2, channels=1, audio=audio[i : i + 8192])
                await client.write_event(chunk.event())
            await client.write_event(AudioStop().event())
            got = await _read_until(client, ("detection", "not-detected"))
            return Detection.from_event(got[-1]).name if got[-1].type == "detection" else ""
        finally:
            await client.disconnect()

    async def main() -> tuple:
        server = WyomingServer(services, "tcp://127.0.0.1:0")
        await server.start()
        try:
            client = AsyncTcpClient("127.0.0.1", server.port)
            await client.connect()
            await client.write_event(Describe().event())
            info = Info.from_event((await _read_until(client, ("info",)))[-1])
            await client.disconnect()
            hit = await detect(server, pcm(WAKE_CLIP)[: 16000 * 2 * 4])
            miss = await detect(server, pcm(CLIP)[: 16000 * 2 * 4])
            # a satellite's microphone: other speech and pauses, the phrase 12 s in
            later = await detect(server, pcm(CLIP) + bytes(32000 * 3) + pcm(WAKE_CLIP)[: 32000 * 4])
            return info, hit, miss, later
        finally:
            await server.close()

    info, hit, miss, later = asyncio.run(main())
    assert [m.phrase for m in info.wake[0].models] == ["지난해"]
    assert hit == "지난해"
    assert miss == ""
    assert later == "지난해"


def test_sori_run_with_wyoming_loads_the_recognizer_model_once(tmp_path, shared_dir):
    """`sori run` hearing a file with [wyoming] and [wake] on: the microphone's recognizer,
    the Wyoming server's and both wake detectors share one model load (at
    `stt.vosk.chunk_ms`, which the detector is calibrated at too)."""
    folder, _ = _clips(shared_dir)
    clip = tmp_path / "short.wav"
    with wave.open(str(folder / CLIP)) as r, wave.open(str(clip), "wb") as w:
        w.setparams(r.getparams())
        w.writeframes(r.readframes(16000))  # one second
    config = tmp_path / "sori.toml"
    config.write_text(CONFIG.replace("[wake]\nenabled = false", "[wake]\nenabled = true"),
                      encoding="utf-8")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "device")}
    done = subprocess.run(
        [sys.executable, "-m", "sori", "run", "--config", str(config), "--input", str(clip),
         "--output", str(tmp_path / "out.wav"), "--http", "off"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("vosk: model loaded") == 1, done.stderr[-2000:]
    assert "wake: listening for 소리야" in done.stderr
