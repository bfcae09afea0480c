#!/usr/bin/env python3
"""The phrase set of the constrained pass, measured: size, coverage, what survives vosk's
vocabulary, and the CPU real-time factor of the vosk grammar pass on real speech.

For the example home (device/sori.example.toml) and each budget, prints the phrase
set's stats (as `sori phrases --stats`), how many phrases compile_grammar keeps whole
(every word in the model's vocabulary, maybe split into known pieces), the grammar's
word count, the seconds to build the grammar recognizer, and the grammar pass's CPU
time / audio time over the clips of ../shared/audio/ko-read (one recognizer per clip,
fed 20 ms frames, as the pipeline does). Run it from another checkout's `device` on
PYTHONPATH to measure that checkout's phrases (e.g. main, before a change).

    PYTHONPATH=device .venv/bin/python scripts/bench_phrases.py [--budgets 2000,5000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from sori.assemble.understanding import home_from_config
from sori.core.config import load_config
from sori.core.config.sections import VoskConfig
from sori.hearing.audio.sources import FileSource
from sori.hearing.stt.base import normalize_text
from sori.hearing.stt.vosk import VoskRecognizer, load_model
from sori.understanding.intents import load_presets

ROOT = Path(__file__).resolve().parents[1]
CLIPS = ROOT.parent / "shared" / "audio" / "ko-read"


def presets_module_root() -> Path:
    """The `device` folder of the sori being measured (its example home and config)."""
    import sori

    return Path(sori.__file__).resolve().parents[1]


def grammar_rtf(
    model, phrases: list[str], clips: list[Path]
) -> tuple[float, float, VoskRecognizer]:
    started = time.perf_counter()
    recognizer = VoskRecognizer(model, phrases=phrases, mode="grammar")
    build_s = time.perf_counter() - started
    cpu = audio = 0.0
    for clip in clips:
        pcm = FileSource(clip).pcm
        stream = recognizer.open_stream()
        started = time.process_time()
        for i in range(0, len(pcm), 640):
            stream.feed(pcm[i : i + 640])
        stream.finalize()
        cpu += time.process_time() - started
        audio += len(pcm) / 32000
    return build_s, cpu / audio, recognizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--budgets",
        default="",
        help="comma-separated budgets; default: "
        "the configured stt.phrases.max_phrases (or 5000 before it existed)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    config = load_config(str(Path(presets_module_root()) / "sori.example.toml"))
    presets = load_presets("ko", home_from_config(config.home))
    phrases_config = getattr(config.stt, "phrases", None)
    default = phrases_config.max_phrases if phrases_config else 5000
    budgets = [int(b) for b in args.budgets.split(",") if b] or [default]
    model = load_model(chunk_ms=VoskConfig().chunk_ms)
    clips = sorted(CLIPS.glob("*.wav"))
    for budget in budgets:
        started = time.perf_counter()
        phrases = presets.phrases(budget)
        generate_s = time.perf_counter() - started
        stats = (
            presets.phrase_set(budget).stats()
            if hasattr(presets, "phrase_set")
            else {"kept": len(phrases)}
        )
        build_s, rtf, recognizer = grammar_rtf(model, phrases, clips)
        dropped = set(recognizer.dropped_words)
        whole = sum(1 for p in phrases if not dropped & set(normalize_text(p).split()))
        words = {w for p in recognizer.grammar for w in p.split()}
        report = {
            "budget": budget,
            "generate_s": round(generate_s, 3),
            **{k: v for k, v in stats.items() if k != "per_intent"},
            "vosk_whole": whole,
            "vosk_grammar_phrases": len(recognizer.grammar),
            "vosk_grammar_words": len(words),
            "vosk_dropped_words": sorted(dropped),
            "has_jwo": "줘" in words,
            "has_juseyo": "주세요" in words,
            "grammar_build_s": round(build_s, 3),
            "grammar_rtf": round(rtf, 4),
            "clips": len(clips),
        }
        print(json.dumps(report, ensure_ascii=False) if args.json else report)


if __name__ == "__main__":
    main()
