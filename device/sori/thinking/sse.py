"""OpenAI chat-completions streams: server-sent events → spoken text.

Each `data:` line is one JSON chunk; `[DONE]` ends the stream. Text comes from
`choices[0].delta.content`; reasoning (`reasoning_content`, `reasoning`, or inline
`<think>` tags from a server without a reasoning parser) is dropped. Anything else is a
`StreamFault` that names what was wrong. Pure; standard library only.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

DONE = object()
"""`next_event`'s value for the `[DONE]` line."""


class StreamFault(Exception):
    """One attempt at one endpoint failed; `reason` says how, in a few words."""

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


async def next_event(lines: AsyncIterator[str]) -> Any:
    """The next server-sent event's JSON, `_DONE`, or None at the end of the body."""
    async for line in lines:
        line = line.strip()
        if not line or line.startswith(":"):
            continue
        field_name, _, value = line.partition(":")
        if field_name in ("event", "id", "retry"):
            continue
        if field_name != "data":
            raise StreamFault(f"malformed stream: unexpected line {line[:40]!r}")
        value = value.strip()
        if value == "[DONE]":
            return DONE
        try:
            event = json.loads(value)
        except ValueError:
            raise StreamFault(f"malformed stream: not JSON: {value[:40]!r}") from None
        if not isinstance(event, dict):
            raise StreamFault(f"malformed stream: {value[:40]!r}")
        return event
    return None


def content_of(event: dict[str, Any]) -> tuple[str, bool]:
    """(spoken text, finished) from one chunk; reasoning is dropped; errors raise."""
    if "error" in event:
        error = event["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        raise StreamFault(f"server error in stream: {str(message)[:120]}")
    choices = event.get("choices")
    if not isinstance(choices, list):
        raise StreamFault("malformed stream: a chunk without choices")
    if not choices:
        return "", False  # usage-only chunk
    choice = choices[0]
    if not isinstance(choice, dict):
        raise StreamFault("malformed stream: a choice that is not an object")
    delta = choice.get("delta") or {}
    content = delta.get("content") if isinstance(delta, dict) else None
    if content is not None and not isinstance(content, str):
        raise StreamFault("malformed stream: content that is not text")
    return content or "", choice.get("finish_reason") is not None


class ThinkFilter:
    """Drops `<think>…</think>` when a server without a reasoning parser inlines it."""

    def __init__(self) -> None:
        self._buf = ""
        self._inside = False
        self._started = False
        self._trim = False  # just left a thought: drop the whitespace after it

    def feed(self, text: str) -> str:
        self._buf += text
        out = []
        while self._buf:
            if self._inside:
                end = self._buf.find("</think>")
                if end < 0:
                    self._buf = self._buf[-len("</think>") :]
                    return "".join(out)
                self._buf = self._buf[end + len("</think>") :]
                self._inside = False
                self._trim = True
                continue
            if not self._started:
                stripped = self._buf.lstrip()
                if "<think>".startswith(stripped) and stripped:
                    return "".join(out)  # could still become <think>
                self._started = True
                if stripped.startswith("<think>"):
                    self._buf = stripped[len("<think>") :]
                    self._inside = True
                    continue
            if self._trim:
                self._buf = self._buf.lstrip()
                self._trim = not self._buf
            out.append(self._buf)
            self._buf = ""
        return "".join(out)
