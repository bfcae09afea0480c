"""Thinking: the local model, the edge servers and the router between them.

Backends import heavy libraries lazily (llama-cpp-python in `local`, httpx in `edge`), so
importing this package costs nothing.
"""

from sori.thinking.base import (
    Ask,
    EdgeInterrupted,
    EdgeUnavailable,
    Judgment,
    Memory,
    TierFailed,
    Token,
    Turn,
)
from sori.thinking.router import Router, RouterSettings
from sori.thinking.sentences import SentenceSplitter, detect_language

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
