"""Fixtures for the thinking tests: the embedded GGUF, a warm local model, a llama.cpp server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_data import VOCABULARY
from llm_servers import LlamaServer

from sori.thinking.local import LocalLLM, default_model_path


@pytest.fixture(scope="session")
def gguf() -> str:
    return default_model_path()


@pytest.fixture(scope="session")
def local_llm(gguf: str) -> LocalLLM:
    """The embedded Gemma, loaded once; one thread, short answers (tests check structure)."""
    return LocalLLM(
        gguf, vocabulary=VOCABULARY, threads=1, n_ctx=1024, max_tokens=24, intent_max_tokens=160
    ).load()


@pytest.fixture(scope="session")
def llama_server(gguf: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """llama-cpp-python's OpenAI-compatible server on a free loopback port, for the session."""
    log = Path(tmp_path_factory.mktemp("llama-server")) / "server.log"
    server = LlamaServer(gguf, log)
    try:
        server.wait_ready()
        yield server
    finally:
        server.kill()
