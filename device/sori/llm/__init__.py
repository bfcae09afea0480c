"""Thinking: the local model, the edge servers and the router between them.

Backends import heavy libraries lazily (llama-cpp-python in `local`, httpx in `edge`), so
importing this package costs nothing.
"""

from sori.llm.base import (
    Ask,
    EdgeInterrupted,
    EdgeUnavailable,
    Judgment,
    Memory,
    TierFailed,
    Token,
    Turn,
)
from sori.llm.router import Router, RouterSettings
from sori.llm.sentences import SentenceSplitter, detect_language

__all__ = [
    "Ask",
    "EdgeInterrupted",
    "EdgeUnavailable",
    "Judgment",
    "Memory",
    "Router",
    "RouterSettings",
    "SentenceSplitter",
    "TierFailed",
    "Token",
    "Turn",
    "detect_language",
]
