"""The edge tier: a streaming chat client for OpenAI-compatible servers (vLLM), with failover.

Built for vLLM serving Qwen/Qwen3.6-35B-A3B as "local" (see scripts/serve_edge.sh):
- thinking stays off (`chat_template_kwargs: {"enable_thinking": false}`) unless the router
  marked the turn as deep reasoning and the config allows it; reasoning text, in
  `reasoning_content` or `reasoning` (or inline `<think>` tags), is never spoken;
- endpoints are tried in order; one that fails (refused, HTTP error, no first byte in time,
  broken or malformed stream) or whose rolling p95 time to first byte exceeds its threshold
  leaves the rotation (`health.EndpointHealth`) and is probed back (`/health`, else
  `/v1/models`) with a growing wait, a circuit breaker that does not hammer a dead server;
- each request has a first-byte timeout per attempt, a stall timeout between chunks and a
  whole-request deadline, so nothing hangs;
- the API key comes from the environment (or the config), goes only into the Authorization
  header and is never logged; TLS is always verified (`ca_file` adds a private CA); proxies
  from the environment are ignored, so only this text goes only to the configured server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sori.core.clock import Clock, MonotonicClock
from sori.core.errors import DependencyError
from sori.thinking.base import Ask, EdgeInterrupted, EdgeUnavailable, Token
from sori.thinking.health import EndpointHealth
from sori.thinking.prompts import EDGE_SYSTEM, language_name
from sori.thinking.sse import DONE, StreamFault, ThinkFilter, content_of, next_event

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Endpoint:
    """One edge server."""

    url: str
    """Base URL of the OpenAI-compatible API, ending in /v1."""
    ttfb_threshold_ms: float = 1500.0
    """p95 time to first byte above which it leaves the rotation."""
    api_key: str = field(default="", repr=False)
    """Bearer token; never logged, never in repr."""
    ca_file: str = ""
    """Extra CA bundle (PEM) for TLS verification."""
    first_byte_timeout_ms: int = 0
    """This endpoint's first-byte timeout; 0 for `EdgeSettings.first_byte_timeout_ms`."""

    @property
    def display(self) -> str:
        """The URL without credentials, safe for logs and records."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))

    @property
    def root(self) -> str:
        """Server root (the URL without a trailing /v1), where vLLM serves /health."""
        base = self.url.rstrip("/")
        return base[: -len("/v1")] if base.endswith("/v1") else base


def endpoint_key(api_key: str, api_key_env: str) -> str:
    """The API key: from the config if set there, else from the named environment variable."""
    return api_key or (os.environ.get(api_key_env, "") if api_key_env else "")


@dataclass(frozen=True)
class EdgeSettings:
    """Request shaping and timing for the edge client (the `[edge]` config, minus endpoints)."""

    model: str = "local"
    allow_thinking: bool = False
    max_tokens: int = 400
    thinking_max_tokens: int = 4096
    temperature: float = 0.7
    connect_timeout_ms: int = 1000
    first_byte_timeout_ms: int = 4000
    thinking_first_token_ms: int = 30000
    stall_timeout_ms: int = 5000
    deadline_ms: int = 30000
    ttfb_window: int = 20
    ttfb_min_samples: int = 5
    retry_initial_ms: int = 2000
    retry_max_ms: int = 60000
    probe_timeout_ms: int = 1000
    extra_body: dict[str, Any] = field(default_factory=dict)
    """More request fields, passed through (vLLM sampling: top_k, min_tokens, ...)."""


@dataclass
class _Slot:
    endpoint: Endpoint
    health: EndpointHealth
    client: Any = None
    loop: Any = None
    """The event loop the client was made in; an httpx client cannot move between loops."""


class EdgeClient:
    """Streams answers from the first healthy endpoint; fails over; keeps endpoint health."""

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        settings: EdgeSettings | None = None,
        clock: Clock | None = None,
    ) -> None:
        try:
            import httpx  # noqa: F401
        except ImportError:
            raise DependencyError("httpx is not installed; run: pip install 'sori[llm]'") from None
        self.settings = settings or EdgeSettings()
        self._clock = clock or MonotonicClock()
        s = self.settings
        self._slots = [
            _Slot(
                e,
                EndpointHealth(
                    ttfb_threshold_ms=e.ttfb_threshold_ms,
                    window=s.ttfb_window,
                    min_samples=s.ttfb_min_samples,
                    retry_initial_ms=s.retry_initial_ms,
                    retry_max_ms=s.retry_max_ms,
                ),
            )
            for e in endpoints
        ]
        self._probes: set[asyncio.Task[None]] = set()

    # -- public ----------------------------------------------------------------------------

    @property
    def endpoints(self) -> list[Endpoint]:
        return [slot.endpoint for slot in self._slots]

    def health(self, url: str) -> EndpointHealth:
        """The health record of the endpoint with this URL."""
        return next(s.health for s in self._slots if s.endpoint.url == url)

    def ttfb_report(self) -> dict[str, tuple[float | None, bool]]:
        """Per endpoint (its display URL): the rolling p95 time to first byte in
        milliseconds (None before any sample) and whether it is in the rotation."""
        return {
            slot.endpoint.display: (slot.health.p95_ms(), slot.health.in_rotation)
            for slot in self._slots
        }

    async def stream(self, ask: Ask) -> AsyncIterator[Token]:
        """Answer tokens from the first endpoint that produces them in time.

        Raises EdgeUnavailable when no endpoint produced a first token, EdgeInterrupted when
        the stream broke after some tokens had been yielded.
        """
        s = self.settings
        thinking = ask.deep and s.allow_thinking
        first_token_s = ask.first_token_timeout_s
        if thinking:
            first_token_s = max(first_token_s or 0.0, s.thinking_first_token_ms / 1000)
        loop = asyncio.get_running_loop()
        first_token_at = None if first_token_s is None else loop.time() + first_token_s
        candidates = await self._candidates(first_token_at)
        if not candidates:
            reasons = "; ".join(f"{x.endpoint.display}: {x.health.out_reason}" for x in self._slots)
            raise EdgeUnavailable(f"no edge endpoint in rotation ({reasons or 'none configured'})")
        failures = []
        for slot in candidates:
            limit_s = None if first_token_at is None else first_token_at - loop.time()
            if limit_s is not None and limit_s <= 0:
                failures.append("first-token budget spent")
                break
            sent: list[str] = []
            attempt = self._attempt(slot, ask, thinking, limit_s)
            try:
                async for text in attempt:
                    sent.append(text)
                    yield Token(text, slot.endpoint.display)
            except StreamFault as failure:
                slot.health.record_failure(
                    failure.reason, self._clock.now_ns(), failure.retry_after_s
                )
                log.warning(
                    "edge %s failed: %s; out of rotation", slot.endpoint.display, failure.reason
                )
                if sent:
                    raise EdgeInterrupted(
                        f"{slot.endpoint.display}: {failure.reason}",
                        "".join(sent),
                        slot.endpoint.display,
                    ) from None
                failures.append(f"{slot.endpoint.display}: {failure.reason}")
                continue
            finally:
                await attempt.aclose()
            slot.health.record_success()
            return
        raise EdgeUnavailable("; ".join(failures))

    async def probe_due(self) -> None:
        """Probe every out-of-rotation endpoint whose wait is over, and wait for the results."""
        now = self._clock.now_ns()
        due = [slot for slot in self._slots if slot.health.probe_due(now)]
        for slot in due:
            slot.health.probe_started()
        await asyncio.gather(*(self._probe(slot) for slot in due))

    async def aclose(self) -> None:
        for task in list(self._probes):
            task.cancel()
        for slot in self._slots:
            if slot.client is not None and slot.loop is asyncio.get_running_loop():
                await slot.client.aclose()
            slot.client = slot.loop = None

    async def __aenter__(self) -> EdgeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- rotation --------------------------------------------------------------------------

    async def _candidates(self, first_token_at: float | None) -> list[_Slot]:
        """Healthy endpoints in order; due probes run in the background, or are awaited
        (within the budget) when nothing is in rotation."""
        now = self._clock.now_ns()
        due = [slot for slot in self._slots if slot.health.probe_due(now)]
        for slot in due:
            slot.health.probe_started()
        healthy = [slot for slot in self._slots if slot.health.in_rotation]
        if healthy or not due:
            for slot in due:
                task = asyncio.create_task(self._probe(slot))
                self._probes.add(task)
                task.add_done_callback(self._probes.discard)
            return healthy
        wait_s = self.settings.probe_timeout_ms / 1000
        if first_token_at is not None:
            wait_s = min(wait_s, first_token_at - asyncio.get_running_loop().time())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(wait_s, 0.0) + 0.05):
                await asyncio.gather(*(self._probe(slot) for slot in due))
        for slot in due:
            if slot.health.probing:  # cut short by the budget
                slot.health.probe_failed("probe timed out", self._clock.now_ns())
        return [slot for slot in self._slots if slot.health.in_rotation]

    async def _probe(self, slot: _Slot) -> None:
        import httpx

        reason = ""
        try:
            async with asyncio.timeout(self.settings.probe_timeout_ms / 1000):
                client = self._client(slot)
                headers = _auth(slot.endpoint)
                response = await client.get(f"{slot.endpoint.root}/health", headers=headers)
                if response.status_code in (404, 405):
                    response = await client.get(
                        f"{slot.endpoint.url.rstrip('/')}/models", headers=headers
                    )
                if response.status_code != 200:
                    reason = f"probe got HTTP {response.status_code}"
        except TimeoutError:
            reason = "probe timed out"
        except (httpx.HTTPError, OSError) as exc:
            reason = f"probe failed: {_describe(exc)}"
        if reason:
            slot.health.probe_failed(reason, self._clock.now_ns())
            log.info("edge %s still out: %s", slot.endpoint.display, reason)
        else:
            slot.health.probe_succeeded()
            log.info("edge %s back in rotation", slot.endpoint.display)

    def _client(self, slot: _Slot) -> Any:
        import httpx

        loop = asyncio.get_running_loop()
        if slot.client is None or slot.loop is not loop:
            slot.loop = loop
            s = self.settings
            verify: Any = True
            if slot.endpoint.ca_file:
                verify = ssl.create_default_context(cafile=slot.endpoint.ca_file)
            slot.client = httpx.AsyncClient(
                verify=verify,
                trust_env=False,
                timeout=httpx.Timeout(
                    connect=s.connect_timeout_ms / 1000,
                    read=s.stall_timeout_ms / 1000,
                    write=s.connect_timeout_ms / 1000,
                    pool=s.connect_timeout_ms / 1000,
                ),
                headers={"User-Agent": "sori"},
            )
        return slot.client

    # -- one attempt -----------------------------------------------------------------------

    def body(self, ask: Ask, thinking: bool) -> dict[str, Any]:
        """The chat-completions request for `ask`."""
        s = self.settings
        messages = [
            {
                "role": "system",
                "content": f"{EDGE_SYSTEM} Answer in {language_name(ask.language)}.",
            }
        ]
        for turn in ask.history:
            messages.append({"role": "user", "content": turn.user})
            messages.append({"role": "assistant", "content": turn.assistant})
        messages.append({"role": "user", "content": ask.text})
        return {
            **s.extra_body,
            "model": s.model,
            "messages": messages,
            "stream": True,
            "max_tokens": s.thinking_max_tokens if thinking else s.max_tokens,
            "temperature": s.temperature,
            "chat_template_kwargs": {"enable_thinking": thinking},
        }

    async def _attempt(
        self, slot: _Slot, ask: Ask, thinking: bool, first_token_s: float | None
    ) -> AsyncIterator[str]:
        """Content text from one endpoint; raises StreamFault on any fault."""
        import httpx

        s = self.settings
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + s.deadline_ms / 1000
        first_byte_s = (slot.endpoint.first_byte_timeout_ms or s.first_byte_timeout_ms) / 1000
        if first_token_s is not None:
            first_byte_s = min(first_byte_s, first_token_s)
        first_token_at = None if first_token_s is None else started + first_token_s
        client = self._client(slot)
        request = client.build_request(
            "POST",
            f"{slot.endpoint.url.rstrip('/')}/chat/completions",
            json=self.body(ask, thinking),
            headers={**_auth(slot.endpoint), "Accept": "text/event-stream"},
        )
        response = None
        waiting = f"no first byte within {first_byte_s:.1f} s"
        try:
            async with asyncio.timeout(first_byte_s):
                response = await client.send(request, stream=True)
                if response.status_code != 200:
                    await _raise_for_status(response)
                lines = response.aiter_lines()
                event = await next_event(lines)
            ttfb_ms = (loop.time() - started) * 1000
            slot.health.record_ttfb(ttfb_ms, self._clock.now_ns())
            thinker = ThinkFilter()
            got_text = False
            finished = False
            while True:
                if event is DONE:
                    finished = True
                    break
                if event is None:
                    break  # the body ended
                text, finish = content_of(event)
                text = thinker.feed(text)
                if text:
                    got_text = True
                    yield text
                finished = finished or finish
                now = loop.time()
                limits = [
                    (s.stall_timeout_ms / 1000, f"stream stalled for {s.stall_timeout_ms} ms"),
                    (deadline - now, f"request deadline of {s.deadline_ms} ms passed"),
                ]
                if not got_text and first_token_at is not None:
                    limits.append((first_token_at - now, "no first token within the budget"))
                limit, waiting = min(limits)
                if limit <= 0:
                    raise StreamFault(waiting)
                async with asyncio.timeout(limit):
                    event = await next_event(lines)
            if not finished:
                raise StreamFault("stream ended before the answer was complete")
        except TimeoutError:
            raise StreamFault(waiting) from None
        except httpx.ConnectError as exc:
            raise StreamFault(f"cannot connect ({_describe(exc)})") from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise StreamFault(f"stream cut off ({_describe(exc)})") from None
        except httpx.HTTPError as exc:
            raise StreamFault(_describe(exc)) from None
        finally:
            if response is not None:
                with contextlib.suppress(Exception):
                    await response.aclose()


def _auth(endpoint: Endpoint) -> dict[str, str]:
    return {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 120 else text[:117] + "..."


async def _raise_for_status(response: Any) -> None:
    code = response.status_code
    retry_after = None
    header = response.headers.get("retry-after", "")
    with contextlib.suppress(ValueError):
        retry_after = float(header) if header else None
    detail = ""
    with contextlib.suppress(Exception):
        detail = (await response.aread())[:200].decode("utf-8", "replace").strip()
    reason = f"HTTP {code}" + (f" ({detail})" if detail else "")
    if code == 429 and retry_after is not None:
        reason += f", retry after {retry_after:g} s"
    raise StreamFault(reason, retry_after)
