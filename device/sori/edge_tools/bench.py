"""`sori edge bench`: a concurrency sweep of streaming chat completions against an
OpenAI-compatible server (vLLM, llama.cpp), measuring what a speaker feels.

At each concurrency level, that many sessions replay the escalation prompts back to back
(each session sends its next request as soon as its previous answer ends) until the level's
request count is spent. Per request it records the time to the first content token (TTFT),
the gaps between content chunks (inter-token latency) and the tokens generated; per level it
reports percentiles, tokens/s per session and in total, errors, and whether the p95 TTFT holds
the budget. Requests look like the device's (`sori.thinking.edge`): streaming, model "local",
thinking off through `chat_template_kwargs`, the edge system prompt.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from sori.core.errors import BackendError, DependencyError
from sori.edge_tools.escalations import ESCALATIONS
from sori.thinking.prompts import EDGE_SYSTEM
from sori.thinking.sse import DONE, StreamFault, content_of, next_event

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BenchSettings:
    """What to send and how long to wait."""

    url: str
    """Base URL of the OpenAI-compatible API, ending in /v1."""
    concurrency: tuple[int, ...] = (1, 2, 4, 8)
    """Concurrent sessions at each level of the sweep."""
    requests: int = 16
    """Requests per level (at least the level's concurrency)."""
    model: str = "local"
    """The `model` field of each request (vLLM's --served-model-name)."""
    max_tokens: int = 128
    """Tokens generated per answer at most."""
    thinking: bool = False
    """`chat_template_kwargs.enable_thinking`; off as the device sends it by default."""
    slo_ttft_ms: float | None = None
    """p95 TTFT budget in milliseconds; None: no budget checked."""
    timeout_s: float = 120.0
    """Whole-request limit in seconds; a request over it counts as an error."""
    api_key: str = field(default="", repr=False)
    """Bearer token, when the server requires one."""


@dataclass(frozen=True)
class RequestResult:
    """One streamed request."""

    ttft_ms: float | None
    """Time from sending to the first content token, in milliseconds; None on error."""
    total_ms: float
    """Time from sending to the end of the stream, in milliseconds."""
    tokens: int
    """Tokens generated (the server's usage count, else content chunks)."""
    gaps_ms: tuple[float, ...] = ()
    """Gaps between successive content chunks, in milliseconds."""
    error: str = ""
    """Why the request failed; empty when it succeeded."""


@dataclass(frozen=True)
class LevelReport:
    """The figures of one concurrency level."""

    concurrency: int
    """Concurrent sessions."""
    requests: int
    """Requests sent."""
    errors: int
    """Requests that failed."""
    ttft_p50_ms: float | None
    """Median time to first token, in milliseconds."""
    ttft_p95_ms: float | None
    """95th percentile time to first token, in milliseconds."""
    ttft_p99_ms: float | None
    """99th percentile time to first token, in milliseconds."""
    itl_p50_ms: float | None
    """Median inter-token latency, in milliseconds."""
    itl_p95_ms: float | None
    """95th percentile inter-token latency, in milliseconds."""
    tokens: int
    """Tokens generated at this level, all requests."""
    session_tokens_per_s: float | None
    """Mean over requests of tokens / request duration, in tokens per second."""
    total_tokens_per_s: float
    """All tokens / the level's wall time, in tokens per second."""
    wall_s: float
    """The level's wall time, in seconds."""
    error_reasons: dict[str, int] = field(default_factory=dict)
    """Failed requests by reason."""
    within_slo: bool | None = None
    """p95 TTFT within --slo-ttft-ms with no errors; None without a budget."""


@dataclass(frozen=True)
class BenchReport:
    """The sweep."""

    url: str
    """The server measured."""
    model: str
    """The model name sent."""
    max_tokens: int
    """Tokens per answer at most."""
    thinking: bool
    """Whether thinking was on."""
    slo_ttft_ms: float | None
    """The p95 TTFT budget, in milliseconds."""
    levels: list[LevelReport]
    """One report per concurrency level, in sweep order."""
    max_concurrency_within_slo: int | None
    """The highest level whose p95 TTFT held the budget with no errors; None if none."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100) by nearest rank, as `llm.health` computes its p95."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def request_body(settings: BenchSettings, prompt: str) -> dict[str, Any]:
    """A chat-completions request shaped like the device's edge client sends it."""
    return {
        "model": settings.model,
        "messages": [
            {"role": "system", "content": f"{EDGE_SYSTEM} Answer in Korean."},
            {"role": "user", "content": prompt},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": settings.max_tokens,
        "temperature": 0.7,
        "chat_template_kwargs": {"enable_thinking": settings.thinking},
    }


async def check_reachable(client: Any, settings: BenchSettings) -> None:
    """Fail fast, with the fix, when nothing answers at the URL."""
    import httpx

    url = f"{settings.url.rstrip('/')}/models"
    try:
        response = await client.get(url, timeout=10.0)
    except (httpx.HTTPError, OSError) as exc:
        raise BackendError(
            f"cannot reach {settings.url} ({type(exc).__name__}: {exc}); is the server "
            "running? Give its OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1"
        ) from None
    if response.status_code in (401, 403):
        raise BackendError(
            f"{url} answered HTTP {response.status_code}; set the server's key in --api-key-env"
        )
    if response.status_code != 200:
        raise BackendError(
            f"{url} answered HTTP {response.status_code}; is {settings.url} the /v1 base URL "
            "of an OpenAI-compatible server?"
        )


async def one_request(client: Any, settings: BenchSettings, prompt: str) -> RequestResult:
    """Stream one answer and time it; failures become a result with `error` set."""
    import httpx

    headers = {"Accept": "text/event-stream"}
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    started = time.perf_counter()
    first: float | None = None
    last = started
    gaps: list[float] = []
    chunks = 0
    usage_tokens: int | None = None
    error = ""
    try:
        async with asyncio.timeout(settings.timeout_s):
            async with client.stream(
                "POST",
                f"{settings.url.rstrip('/')}/chat/completions",
                json=request_body(settings, prompt),
                headers=headers,
            ) as response:
                if response.status_code != 200:
                    detail = (await response.aread())[:120].decode("utf-8", "replace")
                    raise StreamFault(f"HTTP {response.status_code} {detail}".strip())
                lines = response.aiter_lines()
                while (event := await next_event(lines)) is not None and event is not DONE:
                    usage = event.get("usage")
                    if isinstance(usage, dict) and "completion_tokens" in usage:
                        usage_tokens = int(usage["completion_tokens"])
                    if not event.get("choices"):
                        continue  # the usage-only chunk
                    text, _ = content_of(event)
                    if not text:
                        continue
                    now = time.perf_counter()
                    if first is None:
                        first = now
                    else:
                        gaps.append((now - last) * 1000)
                    last = now
                    chunks += 1
        if first is None:
            error = "no content in the answer"
    except TimeoutError:
        error = f"no complete answer within {settings.timeout_s:g} s"
    except StreamFault as fault:
        error = fault.reason
    except (httpx.HTTPError, OSError) as exc:
        error = f"{type(exc).__name__}: {str(exc)[:80]}".rstrip(": ")
    total_ms = (time.perf_counter() - started) * 1000
    if error:
        return RequestResult(None, total_ms, 0, (), error)
    tokens = usage_tokens if usage_tokens else chunks
    return RequestResult((first - started) * 1000, total_ms, tokens, tuple(gaps))  # type: ignore[operator]


async def run_level(client: Any, settings: BenchSettings, concurrency: int) -> LevelReport:
    """`concurrency` sessions send requests back to back until the level's count is spent."""
    count = max(settings.requests, concurrency)
    prompts = iter(ESCALATIONS[i % len(ESCALATIONS)] for i in range(count))
    results: list[RequestResult] = []

    async def session() -> None:
        for prompt in prompts:  # shared iterator: each prompt goes to one session
            results.append(await one_request(client, settings, prompt))

    started = time.perf_counter()
    await asyncio.gather(*(session() for _ in range(concurrency)))
    wall_s = time.perf_counter() - started
    return summarize(concurrency, results, wall_s, settings.slo_ttft_ms)


def summarize(
    concurrency: int, results: list[RequestResult], wall_s: float, slo_ttft_ms: float | None
) -> LevelReport:
    """A level's figures from its requests."""
    ok = [r for r in results if not r.error]
    ttfts = [r.ttft_ms for r in ok if r.ttft_ms is not None]
    gaps = [g for r in ok for g in r.gaps_ms]
    tokens = sum(r.tokens for r in ok)
    rates = [r.tokens / (r.total_ms / 1000) for r in ok if r.total_ms > 0]
    p95 = percentile(ttfts, 95)
    errors = len(results) - len(ok)
    within = None
    if slo_ttft_ms is not None:
        within = p95 is not None and p95 <= slo_ttft_ms and errors == 0
    return LevelReport(
        concurrency=concurrency,
        requests=len(results),
        errors=errors,
        ttft_p50_ms=_round(percentile(ttfts, 50)),
        ttft_p95_ms=_round(p95),
        ttft_p99_ms=_round(percentile(ttfts, 99)),
        itl_p50_ms=_round(percentile(gaps, 50)),
        itl_p95_ms=_round(percentile(gaps, 95)),
        tokens=tokens,
        session_tokens_per_s=_round(sum(rates) / len(rates) if rates else None),
        total_tokens_per_s=round(tokens / wall_s, 1) if wall_s > 0 else 0.0,
        wall_s=round(wall_s, 2),
        error_reasons=dict(Counter(r.error for r in results if r.error)),
        within_slo=within,
    )


async def run_bench(settings: BenchSettings) -> BenchReport:
    """The whole sweep; raises BackendError when the server cannot be reached at all."""
    try:
        import httpx
    except ImportError:
        raise DependencyError("httpx is not installed; run: pip install 'sori[llm]'") from None
    most = max(settings.concurrency)
    limits = httpx.Limits(max_connections=most + 2, max_keepalive_connections=most + 2)
    timeout = httpx.Timeout(settings.timeout_s, connect=10.0)
    async with httpx.AsyncClient(trust_env=False, limits=limits, timeout=timeout) as client:
        await check_reachable(client, settings)
        levels = []
        for concurrency in settings.concurrency:
            level = await run_level(client, settings, concurrency)
            log.info("concurrency %d: p95 TTFT %s ms", concurrency, level.ttft_p95_ms)
            levels.append(level)
    held = [level.concurrency for level in levels if level.within_slo]
    return BenchReport(
        url=settings.url,
        model=settings.model,
        max_tokens=settings.max_tokens,
        thinking=settings.thinking,
        slo_ttft_ms=settings.slo_ttft_ms,
        levels=levels,
        max_concurrency_within_slo=max(held) if held else None,
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
