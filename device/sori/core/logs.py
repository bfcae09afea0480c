"""Structured logs: one JSON object per line on stderr (or plain text for people).

    {"ts": "2026-11-29T21:40:00.123Z", "level": "INFO", "logger": "sori.trace",
     "msg": "turn 3 preset", "turn": {...}}

Fields passed through `extra=` (such as the per-turn trace) are merged into the object.
Every line passes through `sori.core.redact` (credentials in URLs, secret query parameters,
Authorization values), and a lone surrogate is written as an escape, never an error.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import TextIO

from sori.core.redact import redact

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return clean(json.dumps(entry, ensure_ascii=False, default=str))


class TextFormatter(logging.Formatter):
    """Plain lines for people, redacted like the JSON ones."""

    def format(self, record: logging.LogRecord) -> str:
        return clean(super().format(record))


def clean(line: str) -> str:
    """A log line without secrets, writable as UTF-8 (lone surrogates escaped)."""
    return redact(line.encode("utf-8", "backslashreplace").decode("utf-8"))


class StderrHandler(logging.StreamHandler):
    """Writes to `sys.stderr` as it is when a line is logged, not as it was when the
    handler was made: a driver that swaps stderr (a test capturing a command run
    in-process, a service redirecting it) never leaves logging writing to a closed file."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


def setup_logging(log_format: str = "json", verbose: int = 0) -> None:
    """Route all logs to stderr as JSON lines (or text); INFO by default, -v for DEBUG."""
    handler = StderrHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for noisy in ("httpx", "httpcore", "aiohttp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
