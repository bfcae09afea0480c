#!/usr/bin/env python3
"""Time Sori's Wyoming server as Home Assistant would use it, over loopback TCP with the
wyoming package's own client: the example config's models (vosk, espeak-ng, the example
home's presets), one server in this process.

- transcribe: the read-speech clips of ../shared/audio/ko-read paced like a microphone
  (16 kHz chunks of 1024 samples, 64 ms apart), as Home Assistant streams them; time from
  audio-stop to the transcript, and the character error rate against the manifest.
- recognize: round trip of "거실 불 켜줘" (an intent) and a non-command, p50 over rounds.
- synthesize: time to audio-start + first chunk and to audio-stop for a short reply.

    PYTHONPATH=device .venv/bin/python scripts/bench_wyoming.py [--rounds 20] [--clips 2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import statistics
import time
import wave
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


async def main(args: argparse.Namespace) -> dict:
    from wyoming.asr import Transcribe
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient
    from wyoming.intent import Recognize
    from wyoming.tts import Synthesize

    from sori.assemble.understanding import home_from_config
    from sori.core.config import EXAMPLE_CONFIG, load_config
    from sori.serving.wyoming_server import WyomingServer, load_services
    from sori.testing.fakes import character_errors

    config = load_config(str(EXAMPLE_CONFIG))
    started = time.perf_counter()
    services = await asyncio.to_thread(load_services, config, home_from_config(config.home))
    load_s = time.perf_counter() - started
    server = WyomingServer(services, "tcp://127.0.0.1:0")
    await server.start()

    async def ask(events: list, until: str, pace: bool = False) -> tuple[float, float, list]:
        """(seconds from the last event sent to the first answer, to `until`, answers)"""
        client = AsyncTcpClient("127.0.0.1", server.port)
        await client.connect()
        for e in events:
            await client.write_event(e.event())
            if pace and isinstance(e, AudioChunk):  # like a microphone: 64 ms per chunk
                await asyncio.sleep(len(e.audio) / 2 / 16000)
        sent, got, first = time.perf_counter(), [], None
        while True:
            event = await client.read_event()
            first = first or time.perf_counter()
            got.append(event)
            if event.type in until.split("|"):
                await client.disconnect()
                return first - sent, time.perf_counter() - sent, got

    folder = SHARED / "audio" / "ko-read"
    rows = list(csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t"))
    stt, edits, chars = [], 0, 0
    for row in rows[: args.clips]:
        with wave.open(str(folder / row["file"])) as w:
            pcm = w.readframes(w.getnframes())
        events = [Transcribe(language="ko"), AudioStart(rate=16000, width=2, channels=1)]
        events += [AudioChunk(rate=16000, width=2, channels=1, audio=pcm[i : i + 2048])
                   for i in range(0, len(pcm), 2048)]  # fmt: skip
        _, done, got = await ask([*events, AudioStop()], "transcript", pace=True)
        e, n = character_errors(row["transcript"], got[-1].data["text"])
        edits, chars = edits + e, chars + n
        stt.append(done * 1000)
    rec = {"intent": [], "not-recognized": []}
    for _ in range(args.rounds):
        for text in ("거실 불 켜줘", "오늘 점심 뭐 먹었는지 기억나"):
            _, done, got = await ask([Recognize(text=text)], "intent|not-recognized")
            rec[got[-1].type].append(done * 1000)
    first, whole = [], []
    for _ in range(max(3, args.rounds // 4)):
        f, w, _ = await ask([Synthesize(text="거실 조명을 켰어요.")], "audio-stop")
        first.append(f * 1000)
        whole.append(w * 1000)
    await server.close()
    p50 = statistics.median
    return {
        "load_s": round(load_s, 2),
        "transcribe_after_stop_ms_p50": round(p50(stt), 1),
        "transcribe_clips": len(stt),
        "transcribe_cer": round(edits / chars, 3),
        "recognize_intent_ms_p50": round(p50(rec["intent"]), 2),
        "recognize_not_recognized_ms_p50": round(p50(rec["not-recognized"]), 2),
        "synthesize_first_event_ms_p50": round(p50(first), 1),
        "synthesize_done_ms_p50": round(p50(whole), 1),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--clips", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(main(args))
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:36} {value}")
