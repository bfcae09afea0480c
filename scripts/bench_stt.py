"""Benchmark hearing: real-time factor per speech-to-text backend, and end-of-speech to
commit latency through the whole pipeline.

    .venv/bin/python scripts/bench_stt.py                    # shared clips, simulated real time
    .venv/bin/python scripts/bench_stt.py --realtime         # pace the audio like a microphone
    .venv/bin/python scripts/bench_stt.py --sherpa-dir DIR   # also a sherpa-onnx model

1. RTF: each clip of ../shared/audio/ko-read is fed in 20 ms frames straight to a
   recognizer stream; RTF = processing time / audio length, also as CPU time (vosk's two
   passes run on two threads). Also CER (spaces ignored).
2. Commit latency: each clip is replayed through the full pipeline (webrtcvad, vosk,
   early commit), twice: with the default phrases (the free-form pass carries the speech;
   a fuzzy stand-in matcher, agreement `--agree`), and with the clip's transcript added to
   the grammar as a preset phrase would be (the phrase-constrained pass carries it; the
   matcher then asks for agreement `--grammar-agree`). No recordings of spoken Korean
   commands exist here (espeak-ng's Korean is not intelligible to vosk), so each read
   sentence stands in for a command: the bench matcher accepts a hypothesis that is
   complete (at least 85 % of the transcript's length) and agrees enough with the
   transcript; closedness is the production gate, `Presets.is_closed` (-다, -요, -나 are
   closed sentence-final forms).
   Latency = commit time minus the end of the last voiced frame.
   A third run stands in for spoken commands, which are short: the first words of each
   clip (at least 1.2 s of speech, cut where vosk's free-form pass says a word ends), then
   a second of silence, with those words as heard as the preset phrase; then the same
   again through the same recognizer. vosk expands its decoding graph as decoding reaches
   it, so the first time a recognizer hears words costs more than the next (the warm-up
   at start-up covers part of it), and a speaker in use hears the same commands daily.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))

from sori.core.config import parse_config  # noqa: E402
from sori.core.config.sections import SttConfig, VoskConfig  # noqa: E402
from sori.hearing.audio.sources import FileSource, RawSource  # noqa: E402
from sori.hearing.stt.base import warm_up  # noqa: E402
from sori.hearing.stt.vosk import VoskRecognizer, load_model  # noqa: E402
from sori.testing.fakes import agreement, character_errors  # noqa: E402
from sori.testing.replaying import replay_source  # noqa: E402
from sori.understanding.intents import IntentMatch, load_presets  # noqa: E402

PHRASES = [
    "거실 불 켜 줘",
    "거실 불 꺼 줘",
    "안방 에어컨 꺼 줘",
    "화장실 조명 좀 켜 줘",
    "커튼 쳐 줘",
    "에어컨 이십삼 도로 맞춰 줘",
    "지금 몇 시야",
    "날씨 알려 줘",
    "공기 청정기 켜 줘",
    "오 분 타이머 맞춰 줘",
]


def clips(folder: Path) -> list[tuple[Path, str]]:
    rows = csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t")
    return [(folder / r["file"], r["transcript"]) for r in rows]


def measure_rtf(name: str, recognizer, data: list[tuple[Path, str]]) -> dict:
    busy = cpu = audio = errors = chars = 0.0
    for path, transcript in data:
        pcm = FileSource(path).pcm
        started, cpu_started = time.perf_counter(), time.process_time()
        stream = recognizer.open_stream()
        for i in range(0, len(pcm), 640):
            stream.feed(pcm[i : i + 640])
        text = stream.finalize().text
        busy += time.perf_counter() - started
        cpu += time.process_time() - cpu_started
        audio += len(pcm) / 2 / 16000
        wrong, length = character_errors(transcript, text)
        errors, chars = errors + wrong, chars + length
    return {
        "backend": name,
        "rtf": busy / audio,
        "cpu_rtf": cpu / audio,
        "cer": errors / chars,
        "audio_s": audio,
    }


class SentenceAsCommand:
    """Bench understanding: the clip's own transcript is the one preset."""

    def __init__(self, transcript: str, min_agreement: float, closed) -> None:
        self.transcript = transcript
        self.length = len(transcript.replace(" ", ""))
        self.min_agreement = min_agreement
        self.is_closed = closed

    def match(self, text: str):
        complete = len(text.replace(" ", "")) >= 0.85 * self.length
        if not complete or agreement(text, self.transcript) < self.min_agreement:
            return None
        return IntentMatch("BenchSentence", {}, 1.0, "", text)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def short_commands(model, data: list[tuple[Path, str]], min_s: float = 1.2) -> list:
    """(PCM, words) of each clip's first words: at least `min_s` of speech, cut 30 ms
    after a word's end as vosk's free-form pass times it, then a second of silence."""
    import vosk

    commands = []
    for path, _ in data:
        pcm = FileSource(path).pcm
        rec = vosk.KaldiRecognizer(model, 16000)
        rec.SetWords(True)
        words = []
        for i in range(0, len(pcm), 3200):
            if rec.AcceptWaveform(pcm[i : i + 3200]):
                words += json.loads(rec.Result()).get("result", [])
        words += json.loads(rec.FinalResult()).get("result", [])
        if not words:
            continue
        kept = next(
            (n for n, w in enumerate(words, 1) if w["end"] - words[0]["start"] >= min_s), len(words)
        )
        end = int((words[kept - 1]["end"] + 0.03) * 16000) * 2
        text = " ".join(w["word"] for w in words[:kept])
        commands.append((pcm[:end] + bytes(32000), text))
    return commands


def measure_latency(
    recognizer,
    data,
    realtime: bool,
    min_agreement: float,
    closed,
    commit=None,
    vad=None,
) -> dict:
    config = parse_config({"commit": commit or {}, "vad": vad or {}})
    latencies, misses, premature = [], 0, 0
    for audio, transcript in data:
        understanding = SentenceAsCommand(transcript, min_agreement, closed)
        source = FileSource(audio) if isinstance(audio, Path) else RawSource(io.BytesIO(audio))
        records = replay_source(source, config, recognizer, understanding, realtime)
        committed = [r for r in records if r["commit_latency_ms"] is not None]
        if not committed:
            misses += 1
            continue
        # A commit before the VAD's end of speech: trailing noise kept the VAD open after
        # the last word; the commit came at the pause after it. Counted, not averaged.
        premature += sum(r["commit_latency_ms"] < 0 for r in committed)
        latencies += [r["commit_latency_ms"] for r in committed if r["commit_latency_ms"] >= 0]
    return {
        "pacing": "real time" if realtime else "simulated real time",
        "n": len(latencies),
        "missed": misses,
        "premature": premature,
        "early": sum(v < config.vad.stop_ms for v in latencies),
        "p50_ms": percentile(latencies, 0.5) if latencies else None,
        "p95_ms": percentile(latencies, 0.95) if latencies else None,
        "max_ms": max(latencies) if latencies else None,
        "mean_ms": statistics.fmean(latencies) if latencies else None,
        "latencies_ms": latencies,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clips", default=str(REPO.parent / "shared" / "audio" / "ko-read"))
    parser.add_argument("--realtime", action="store_true", help="pace audio like a microphone")
    parser.add_argument("--sherpa-dir", help="a sherpa-onnx streaming transducer to measure too")
    parser.add_argument("--agree", type=float, default=0.6, help="free-form matcher agreement")
    parser.add_argument(
        "--grammar-agree", type=float, default=0.9, help="agreement when the phrase is in grammar"
    )
    parser.add_argument(
        "--chunk-ms", type=int, default=VoskConfig().chunk_ms, help="vosk chunk (0: model's)"
    )
    parser.add_argument("--commit", default="{}", help="[commit] settings as JSON")
    parser.add_argument("--vad", default="{}", help='[vad] settings as JSON: {"backend": "webrtc"}')
    parser.add_argument("--json", metavar="F", help="also write the figures here")
    parser.add_argument(
        "--warm-up-s", type=float, default=SttConfig().warm_up_s,
        help="stt.warm_up_s of each recognizer (default: the config's)",
    )  # fmt: skip
    parser.add_argument("--only", choices=("rtf", "latency"), help="run one part only")
    args = parser.parse_args()
    data = clips(Path(args.clips))
    model = load_model(chunk_ms=args.chunk_ms)
    results = {"rtf": [], "latency": None}
    for mode in ("free", "grammar", "both") if args.only != "latency" else ():
        rec = VoskRecognizer(model, phrases=PHRASES, mode=mode)
        results["rtf"].append(measure_rtf(f"vosk {mode}", rec, data))
    if args.sherpa_dir and args.only != "latency":
        from sori.hearing.stt.sherpa import SherpaModelFiles, SherpaRecognizer

        rec = SherpaRecognizer(SherpaModelFiles.find(args.sherpa_dir), phrases=PHRASES)
        results["rtf"].append(measure_rtf("sherpa", rec, data))
    for row in results["rtf"]:
        print(
            f"| {row['backend']} | {row['rtf']:.3f} | {row['cpu_rtf']:.3f} | {row['cer']:.3f} "
            f"| {row['audio_s']:.0f} s |"
        )
    if args.only == "rtf":
        return 0
    closed = load_presets("ko").is_closed
    results["latency"] = {}
    commands = short_commands(model, data)
    recognizer = None

    def warm(phrases: list[str]) -> VoskRecognizer:
        """A recognizer as the daemon builds it: every phrase in one grammar, warmed up."""
        recognizer = VoskRecognizer(model, phrases=[*PHRASES, *phrases], mode="both")
        warm_up(recognizer, args.warm_up_s)
        return recognizer

    # free-form: a fuzzy stand-in matcher (vosk's free-form CER is about 0.19);
    # in grammar: the phrase-constrained pass must give the phrase almost exactly (0.9)
    for label, phrases, agree, heard, is_closed in (
        ("free-form", [], args.agree, data, closed),
        ("in grammar", [t for _, t in data], args.grammar_agree, data, closed),
        # a command's words need no sentence-final ending to be complete
        ("short command in grammar", [t for _, t in commands], args.grammar_agree, commands,
         lambda text: True),
        ("short command in grammar, heard again", None, args.grammar_agree, commands,
         lambda text: True),
    ):  # fmt: skip
        # heard again: the same recognizer, its decoding graph expanded where these words lead
        recognizer = warm(phrases) if phrases is not None else recognizer
        lat = measure_latency(
            recognizer,
            heard,
            args.realtime,
            agree,
            is_closed,
            json.loads(args.commit),
            json.loads(args.vad),
        )
        results["latency"][label] = lat
        print(
            f"commit latency ({lat['pacing']}, vosk both, {label}): n={lat['n']} "
            f"missed={lat['missed']} premature={lat['premature']} early={lat['early']} "
            f"p50={lat['p50_ms']:.0f} ms p95={lat['p95_ms']:.0f} ms max={lat['max_ms']:.0f} ms"
        )
        print("  latencies ms:", " ".join(f"{v:.0f}" for v in sorted(lat["latencies_ms"])))
    results["load_average"] = os.getloadavg()
    print("load average (1, 5, 15 min):", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
