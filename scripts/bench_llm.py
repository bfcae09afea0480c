#!/usr/bin/env python3
"""Benchmark the thinking tiers: local model speed, router overhead, edge failover.

- local: load time; time to first token (TTFT) and to first sentence of a spoken answer;
  decode tokens per second; constrained intent mapping, with Sori's top-k-first decoder and
  with llama.cpp's own grammar sampler (same output, checked);
- router: time the router itself adds to a turn, with instant stand-in tiers;
- failover: time to the first token from a healthy endpoint (llama_cpp.server on loopback)
  when the endpoint before it is dead (connection refused), answers HTTP 500, or never
  answers (first-byte timeout), against the healthy endpoint alone.

    .venv/bin/python scripts/bench_llm.py [--model GGUF] [--threads N] [--runs 5] [--json F]

The embedded Gemma 3 270M Q4_K_M is the default model. Figures depend on the machine and on
what else runs on it; the README quotes a run on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

QUESTIONS = [
    "하늘은 왜 파란색이야?",
    "오늘 저녁 뭐 먹을까?",
    "What is a good name for a cat?",
    "고양이는 하루에 얼마나 자?",
    "Tell me something about the moon.",
]
PARAPHRASES = [
    "거실 불 좀 밝게 해 줄래",
    "안방 에어컨 좀 꺼 줘",
    "3분 타이머 부탁해",
    "지금 몇 시지",
]


def median(values: list[float]) -> float:
    return round(statistics.median(values), 1)


# -- local ---------------------------------------------------------------------------------------


def bench_local(model: str, threads: int, runs: int) -> dict:
    from sori.thinking.constrained import decode
    from sori.thinking.local import LocalLLM
    from sori.thinking.prompts import answer_instruction, judge_instruction
    from sori.thinking.schema import IntentSpec, Vocabulary
    from sori.thinking.sentences import SentenceSplitter

    vocab = Vocabulary(
        intents=(
            IntentSpec("HassTurnOn", ("name", "area")),
            IntentSpec("HassTurnOff", ("name", "area")),
            IntentSpec("HassLightSet", ("name", "area", "brightness")),
            IntentSpec("HassStartTimer", ("hours", "minutes", "seconds")),
            IntentSpec("HassGetCurrentTime", ()),
        ),
        areas=("거실", "안방", "주방"),
        devices=("거실 조명", "안방 에어컨", "선풍기"),
    )
    local = LocalLLM(model, vocabulary=vocab, threads=threads, max_tokens=48)
    local.load()

    def answer(text: str) -> tuple[float, float | None, float, int]:
        """The model's own stream (no echo guard), as the router would receive it."""
        tokens = local.prompt_tokens((), answer_instruction(text, "ko"))
        started = time.perf_counter()
        first = first_sentence = None
        stamps = []
        splitter = SentenceSplitter()
        for chunk in local._llm.create_completion(
            tokens, max_tokens=48, temperature=0.3, seed=1, stream=True
        ):
            now = time.perf_counter()
            stamps.append(now)
            if first is None:
                first = now - started
            if splitter.feed(chunk["choices"][0]["text"]) and first_sentence is None:
                first_sentence = now - started
        rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
        sentence_ms = None if first_sentence is None else first_sentence * 1000
        return first * 1000, sentence_ms, rate, len(stamps)

    ttft, sentence, rates = [], [], []
    for i in range(runs):
        first, first_sentence, rate, _ = answer(QUESTIONS[i % len(QUESTIONS)])
        ttft.append(first)
        rates.append(rate)
        if first_sentence is not None:
            sentence.append(first_sentence)

    ours, builtin, same = [], [], True
    import llama_cpp

    grammar = llama_cpp.LlamaGrammar.from_string(local._grammar, verbose=False)
    for i in range(runs):
        tokens = local.prompt_tokens((), judge_instruction(PARAPHRASES[i % len(PARAPHRASES)]))
        started = time.perf_counter()
        mine = decode(local._llm, local._grammar, tokens, local.intent_max_tokens)
        ours.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        theirs = local._llm.create_completion(
            tokens, max_tokens=local.intent_max_tokens, temperature=0.0, grammar=grammar
        )
        builtin.append((time.perf_counter() - started) * 1000)
        same &= mine.text.strip() == theirs["choices"][0]["text"].strip()
    return {
        "model": Path(local.model_path).name,
        "threads": threads,
        "load_ms": round(local.load_ms),
        "ttft_ms": median(ttft),
        "first_sentence_ms": median(sentence) if sentence else None,
        "tokens_per_s": round(statistics.median(rates), 1),
        "intent_ms": median(ours),
        "intent_llama_grammar_ms": median(builtin),
        "intent_outputs_identical": same,
    }


# -- router --------------------------------------------------------------------------------------


def bench_router(turns: int = 2000) -> dict:
    from sori.thinking.base import Judgment, Token
    from sori.thinking.router import Router

    class Hit:
        intent, slots, confidence, response = "HassTurnOn", {"area": "거실"}, 1.0, "켰어요"

    class Local:
        async def judge(self, ask):
            return Judgment(None, {}, False, 0.9)

        async def stream(self, ask):
            for piece in ("작은 ", "모델의 ", "답이에요. ", "두 번째 ", "문장."):
                yield Token(piece)

    hits = {"불 켜": Hit()}
    router = Router(hits.get, Local(), None)

    async def run(text: str) -> float:
        started = time.perf_counter_ns()
        for _ in range(turns):
            await router.ask(text)
        return (time.perf_counter_ns() - started) / turns / 1000

    return {
        "preset_turn_us": round(asyncio.run(run("불 켜")), 1),
        "local_turn_us": round(asyncio.run(run("하늘은 왜 파래")), 1),
        "note": "router + events + sentence splitting, tiers answering instantly (5 tokens)",
    }


# -- failover ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(handler: type) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Errors(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(500)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


class Silent(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        time.sleep(60)

    def log_message(self, *args: object) -> None:
        pass


def bench_failover(model: str, threads: int, runs: int) -> dict:
    port = free_port()
    with tempfile.TemporaryFile() as log:
        return _failover(model, threads, runs, port, log)


def _failover(model: str, threads: int, runs: int, port: int, log) -> dict:
    from sori.thinking.base import Ask
    from sori.thinking.edge import EdgeClient, EdgeSettings, Endpoint

    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", model, "--chat_format", "gemma"]
        + ["--n_threads", str(threads), "--n_ctx", "1024", "--host", "127.0.0.1"]
        + ["--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    healthy = f"http://127.0.0.1:{port}/v1"
    errors, silent = start_server(Errors), start_server(Silent)
    try:
        import httpx

        for _ in range(300):
            try:
                if httpx.get(f"{healthy}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        settings = EdgeSettings(max_tokens=4, first_byte_timeout_ms=20000)

        async def first_token(endpoints: list[Endpoint]) -> float:
            client = EdgeClient(endpoints, settings)
            started = time.perf_counter()
            try:
                async for token in client.stream(Ask("hi", language="en")):
                    assert token.source == healthy
                    return (time.perf_counter() - started) * 1000
            finally:
                await client.aclose()
            raise RuntimeError("no token")

        cases = {
            "healthy_alone": [Endpoint(healthy)],
            "after_dead_port": [Endpoint(f"http://127.0.0.1:{free_port()}/v1"), Endpoint(healthy)],
            "after_http_500": [
                Endpoint(f"http://127.0.0.1:{errors.server_address[1]}/v1"),
                Endpoint(healthy),
            ],
            "after_silent_500ms_timeout": [
                Endpoint(
                    f"http://127.0.0.1:{silent.server_address[1]}/v1", first_byte_timeout_ms=500
                ),
                Endpoint(healthy),
            ],
        }
        asyncio.run(first_token(cases["healthy_alone"]))  # warm the server's prompt cache
        out = {}
        for name, endpoints in cases.items():
            out[f"{name}_ms"] = median([asyncio.run(first_token(endpoints)) for _ in range(runs)])
        base = out["healthy_alone_ms"]
        for name in ("after_dead_port", "after_http_500", "after_silent_500ms_timeout"):
            out[f"{name}_extra_ms"] = round(out[f"{name}_ms"] - base, 1)
        return out
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        errors.shutdown()
        silent.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="", help="GGUF file (default: embedded Gemma 270M)")
    parser.add_argument(
        "--threads", type=int, default=0, help="CPU threads for the model (0: Sori's default)"
    )
    parser.add_argument("--runs", type=int, default=5, help="repetitions per figure (median)")
    parser.add_argument("--json", metavar="F", help="also write the figures to this file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # failovers are expected here

    from sori.thinking.local import default_model_path, default_threads

    model = args.model or default_model_path()
    args.threads = args.threads or default_threads()
    results = {
        "local": bench_local(model, args.threads, args.runs),
        "router": bench_router(),
        "failover": bench_failover(model, args.threads, args.runs),
    }
    text = json.dumps(results, ensure_ascii=False, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
