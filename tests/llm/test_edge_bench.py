"""`sori edge bench` against a real llama.cpp server on loopback (standing in for vLLM).

llama-cpp-python's server answers one request at a time (with --interrupt_requests False a
new request waits instead of cutting the running one). The figures are checked for sanity,
not speed: this machine's cores are shared, so no ordering of times across levels holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_servers import LlamaServer, free_port

from sori.edge_tools.bench import RequestResult, percentile, summarize

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def queued_server(gguf: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    log = Path(tmp_path_factory.mktemp("bench-server")) / "server.log"
    server = LlamaServer(gguf, log, ("--interrupt_requests", "False"))
    try:
        server.wait_ready()
        yield server
    finally:
        server.kill()


def sori(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "device")}
    return subprocess.run(
        [sys.executable, "-m", "sori", "edge", "bench", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )


def test_a_sweep_reports_sane_figures_as_json_and_a_plot(queued_server, tmp_path):
    png = tmp_path / "sweep.png"
    done = sori(
        queued_server.url,
        "--concurrency", "1,2",
        "--requests", "2",
        "--max-tokens", "4",
        "--slo-ttft-ms", "600000",
        "--json",
        "--plot", str(png),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["model"] == "local" and report["thinking"] is False
    one, two = report["levels"]
    for level in (one, two):
        assert level["requests"] == 2 and level["errors"] == 0
        assert 0 < level["ttft_p50_ms"] <= level["ttft_p95_ms"] <= level["ttft_p99_ms"]
        assert level["tokens"] >= 2  # every answer produced at least one token
        assert level["total_tokens_per_s"] > 0 and level["session_tokens_per_s"] > 0
        assert level["within_slo"] is True
    assert report["max_concurrency_within_slo"] == 2
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_dead_url_is_a_clear_error_with_exit_2():
    done = sori(f"http://127.0.0.1:{free_port()}/v1", "--concurrency", "1", "--requests", "1")
    assert done.returncode == 2
    assert "cannot reach" in done.stderr and "is the server running?" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_bad_levels_are_refused_with_exit_2():
    done = sori("http://127.0.0.1:1/v1", "--concurrency", "1,zero")
    assert done.returncode == 2
    assert "expected numbers like 1,2,4,8" in done.stderr


def test_the_budget_is_held_only_by_levels_without_errors_and_under_it():
    ok = [RequestResult(ttft_ms=t, total_ms=1000.0, tokens=10) for t in (100.0, 200.0, 300.0)]
    held = summarize(4, ok, wall_s=1.0, slo_ttft_ms=300.0)
    assert (held.ttft_p50_ms, held.ttft_p95_ms, held.within_slo) == (200.0, 300.0, True)
    assert held.total_tokens_per_s == 30.0 and held.session_tokens_per_s == 10.0
    over = summarize(4, ok, wall_s=1.0, slo_ttft_ms=299.0)
    assert over.within_slo is False
    failed = summarize(4, [*ok, RequestResult(None, 5.0, 0, (), "HTTP 503")], 1.0, 300.0)
    assert failed.errors == 1 and failed.within_slo is False
    assert failed.error_reasons == {"HTTP 503": 1}
    assert percentile([5.0, 1.0, 3.0], 50) == 3.0 and percentile([], 95) is None
