"""Health of one edge endpoint: rolling time-to-first-byte, rotation and circuit breaker.

Pure state driven by explicit clock readings (nanoseconds), so tests run it on a fake clock.

    in rotation ──failure, or p95 TTFB > threshold──▶ out (breaker open)
        ▲                                                │ retry time reached
        └──────────── probe succeeded ◀── probe due ─────┘
                                          probe failed: wait doubles (up to a maximum)

While out, the endpoint gets no requests; only a probe, and only once its wait is over, so a
dead server is not hammered. A 429's Retry-After lengthens the wait.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

_MS = 1_000_000


@dataclass
class EndpointHealth:
    """Rotation state of one endpoint."""

    ttfb_threshold_ms: float = 1500.0
    """Rolling p95 time to first byte above which the endpoint leaves the rotation."""
    window: int = 20
    """Samples kept for the p95."""
    min_samples: int = 5
    """Samples needed before the p95 counts."""
    retry_initial_ms: float = 2000.0
    """Wait after a failure before the first probe."""
    retry_max_ms: float = 60000.0
    """Longest wait between probes."""
    samples_ms: deque[float] = field(default_factory=deque)
    """Recent times to first byte."""
    out_reason: str = ""
    """Why the endpoint is out of the rotation; empty while it is in."""
    retry_at_ns: int = 0
    """Clock time from which a probe may run."""
    backoff_ms: float = 0.0
    """Current wait between probes."""
    probing: bool = False
    """A probe is in flight."""
    failures: int = 0
    """Consecutive failures (requests and probes)."""

    @property
    def in_rotation(self) -> bool:
        return not self.out_reason

    def p95_ms(self) -> float | None:
        """95th percentile of the recent times to first byte (nearest rank); None if empty."""
        if not self.samples_ms:
            return None
        ordered = sorted(self.samples_ms)
        return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]

    def record_ttfb(self, ttfb_ms: float, now_ns: int) -> None:
        """A response's first byte arrived after `ttfb_ms`."""
        self.samples_ms.append(ttfb_ms)
        while len(self.samples_ms) > self.window:
            self.samples_ms.popleft()
        p95 = self.p95_ms()
        enough = len(self.samples_ms) >= self.min_samples
        if enough and p95 is not None and p95 > self.ttfb_threshold_ms:
            self._take_out(
                f"p95 time to first byte {p95:.0f} ms > {self.ttfb_threshold_ms:.0f} ms",
                now_ns,
                None,
            )

    def record_success(self) -> None:
        """A request completed."""
        self.failures = 0

    def record_failure(self, reason: str, now_ns: int, retry_after_s: float | None = None) -> None:
        """A request failed: leave the rotation until a probe succeeds."""
        self.failures += 1
        self._take_out(reason, now_ns, retry_after_s)

    def probe_due(self, now_ns: int) -> bool:
        return not self.in_rotation and not self.probing and now_ns >= self.retry_at_ns

    def probe_started(self) -> None:
        self.probing = True

    def probe_succeeded(self) -> None:
        """Back in the rotation with a clean record."""
        self.probing = False
        self.out_reason = ""
        self.failures = 0
        self.backoff_ms = 0.0
        self.samples_ms.clear()

    def probe_failed(self, reason: str, now_ns: int) -> None:
        """Still down: wait twice as long before the next probe."""
        self.probing = False
        self.failures += 1
        self.backoff_ms = min(max(self.backoff_ms * 2, self.retry_initial_ms), self.retry_max_ms)
        self.out_reason = reason
        self.retry_at_ns = now_ns + int(self.backoff_ms * _MS)

    def _take_out(self, reason: str, now_ns: int, retry_after_s: float | None) -> None:
        self.out_reason = reason
        self.backoff_ms = max(self.backoff_ms, self.retry_initial_ms)
        wait_ms = self.backoff_ms
        if retry_after_s is not None:
            wait_ms = max(wait_ms, min(retry_after_s * 1000, self.retry_max_ms))
        self.retry_at_ns = now_ns + int(wait_ms * _MS)
