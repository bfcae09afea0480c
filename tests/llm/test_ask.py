"""`sori ask` as a user runs it: the whole stack, real model, real loopback servers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from llm_servers import LlamaServer, free_port

from sori.thinking.router import CANNOT_REACH, DEVICE_NOTE

pytestmark = pytest.mark.slow

FIELDS = {"text", "tier", "intent", "slots", "answer", "reason", "endpoint", "ttft_ms", "total_ms"}

HOME = """
[home]
area = "living_room"

[[home.areas]]
id = "living_room"
name = "거실"

[[home.devices]]
id = "light.living_room"
name = "거실 조명"
aliases = ["거실 불"]
area = "living_room"

[llm]
threads = 1
n_ctx = 1024
max_tokens = 12

[router]
first_token_budget_ms = 60000   # no busy machine reaches it: these tests are not about time
local_deadline_ms = 600000
local_answers = "on"            # the packaged model answers here, judged or not

[edge]
max_tokens = 6
first_byte_timeout_ms = 30000
probe_timeout_ms = 30000
"""


def config(tmp_path: Path, edge_url: str) -> str:
    path = tmp_path / "sori.toml"
    path.write_text(HOME + f'\n[[edge.endpoints]]\nurl = "{edge_url}"\n', encoding="utf-8")
    return str(path)


def sori(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sori", "ask", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def record(done: subprocess.CompletedProcess) -> dict:
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout + done.stderr
    data = json.loads(lines[0])
    assert set(data) == FIELDS
    return data


@pytest.fixture
def dead_edge(tmp_path) -> str:
    return config(tmp_path, f"http://127.0.0.1:{free_port()}/v1")


def test_a_preset_command_commits_without_any_model(dead_edge):
    done = sori("--config", dead_edge, "--json", "거실 불 켜 줘")
    assert done.returncode == 0, done.stderr
    data = record(done)
    assert (data["tier"], data["intent"], data["endpoint"]) == ("preset", "HassTurnOn", None)
    assert data["slots"]["name"] == "거실 조명"
    assert "preset HassTurnOn matched" in data["reason"]
    assert 0 <= data["ttft_ms"] <= data["total_ms"]


def test_a_question_for_the_edge_falls_back_to_the_device_when_no_edge_answers(dead_edge):
    done = sori("--config", dead_edge, "--json", "양자역학을 설명해 줘")
    assert done.returncode == 0, done.stderr
    data = record(done)
    assert data["tier"] == "local" and data["intent"] is None and data["endpoint"] is None
    assert "rule: asks for knowledge or length ('설명해')" in data["reason"]
    assert "edge unavailable" in data["reason"] and "cannot connect" in data["reason"]
    assert data["answer"].startswith(DEVICE_NOTE["ko"])
    assert len(data["answer"]) > len(DEVICE_NOTE["ko"])  # the device answered after the note


def test_a_local_model_judged_unable_to_answer_says_so_at_once(dead_edge):
    """The packaged model's catalog answer_score is 0: with the default "auto" it does not
    answer, and an edge question with no edge gets the honest line, without a load."""
    path = Path(dead_edge)
    path.write_text(path.read_text(encoding="utf-8").replace('local_answers = "on"', ""),
                    encoding="utf-8")  # fmt: skip
    done = sori("--config", dead_edge, "--json", "양자역학을 설명해 줘")
    data = record(done)
    assert data["answer"] == CANNOT_REACH["ko"] and data["tier"] == "none"
    assert "router.local_answers" in data["reason"]
    assert "local model loaded" not in done.stderr


def test_the_edge_answers_through_the_llama_server(tmp_path, llama_server: LlamaServer):
    done = sori("--config", config(tmp_path, llama_server.url), "--json", "--tier", "edge", "hi")
    assert done.returncode == 0, done.stderr
    data = record(done)
    assert (data["tier"], data["endpoint"]) == ("edge", llama_server.url)
    assert data["answer"] and data["ttft_ms"] <= data["total_ms"]


def test_plain_output_prints_sentences_and_says_why_on_stderr(dead_edge):
    done = sori("--config", dead_edge, "세계 역사를 요약해 줘")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == DEVICE_NOTE["ko"]
    assert "(local: no preset matched; rule: asks for knowledge or length ('요약')" in done.stderr
    # the wait a one-shot process pays, said so a user knows the daemon does not pay it
    assert re.search(r"\(local model loaded in \d+\.\d s; `sori run` loads it once", done.stderr)


def test_nothing_understood_exits_1(dead_edge):
    done = sori("--config", dead_edge, "--json", "--tier", "preset", "음 그러니까")
    assert done.returncode == 1
    data = record(done)
    assert data["tier"] == "none" and data["answer"] == "" and data["intent"] is None


def test_an_answer_cut_at_its_deadline_exits_cleanly(dead_edge):
    """The generation cut off by `router.local_deadline_ms` is still computing on its
    thread when the turn ends; the process must stop it, not tear down under it (exit
    -11, as CI saw on a busy machine)."""
    path = Path(dead_edge)
    text = path.read_text(encoding="utf-8").replace("max_tokens = 12", "max_tokens = 200")
    text = text.replace("local_deadline_ms = 600000", "local_deadline_ms = 1")
    path.write_text(text, encoding="utf-8")
    for _ in range(2):
        done = sori("--config", dead_edge, "--json", "--tier", "local", "바다 이야기를 해 줘")
        assert done.returncode in (0, 1), done.stderr[-2000:]
        assert "answer cut at its deadline" in record(done)["reason"]
        assert "Traceback" not in done.stderr
