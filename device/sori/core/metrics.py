"""Prometheus metrics, kept as an observer of the event stream (`observe(event)`).

Rendered in the Prometheus text format by the HTTP API's `GET /metrics`.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable

from sori.core.events import ActionFinished, Event, TurnFinished, WakeDetected, WakeYielded

LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Histogram bucket bounds for latencies, in seconds."""


class Histogram:
    """Cumulative buckets plus sum and count, Prometheus style."""

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS_S) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def lines(self, name: str, labels: str) -> list[str]:
        sep = "," if labels else ""
        out, running = [], 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += n
            le = "+Inf" if bound == float("inf") else f"{bound:g}"
            out.append(f'{name}_bucket{{{labels}{sep}le="{le}"}} {running}')
        braced = f"{{{labels}}}" if labels else ""
        out.append(f"{name}_sum{braced} {self.sum:.6f}")
        out.append(f"{name}_count{braced} {self.count}")
        return out


class Metrics:
    """Counters and histograms of the daemon's turns, actions and edge calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stages: dict[str, Histogram] = {}
        self.turns: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.actions: dict[tuple[str, str], int] = {}
        self.action_latency: dict[str, Histogram] = {}
        self.edge_ttfb = Histogram()
        self.barge_ins = 0
        self.wakes = 0
        self.wakes_yielded = 0
        self.muted = False
        """Mirrors the daemon's muted state for the `sori_muted` gauge."""
        self.edge_endpoints: Callable[[], dict[str, tuple[float | None, bool]]] | None = None
        """Per edge endpoint: rolling p95 TTFB (ms, None before a sample) and whether it is
        in the rotation; set by the assembly to the edge client's `ttfb_report`."""

    def observe(self, event: Event) -> None:
        with self._lock:
            if isinstance(event, TurnFinished):
                self.turns[event.tier or "none"] = self.turns.get(event.tier or "none", 0) + 1
                for stage, ns in event.stages_ns.items():
                    self.stages.setdefault(stage, Histogram()).observe(ns / 1e9)
                if event.error:
                    self.count_error("turn")
            elif isinstance(event, WakeDetected):
                self.wakes += 1
            elif isinstance(event, WakeYielded):
                self.wakes_yielded += 1
            elif isinstance(event, ActionFinished):
                key = (event.handler, "ok" if event.ok else "failed")
                self.actions[key] = self.actions.get(key, 0) + 1
                self.action_latency.setdefault(event.handler, Histogram()).observe(
                    event.elapsed_ns / 1e9
                )
                if not event.ok:
                    self.errors["action"] = self.errors.get("action", 0) + 1

    def count_error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1

    def observe_edge_ttfb(self, seconds: float) -> None:
        with self._lock:
            self.edge_ttfb.observe(seconds)

    def render(self) -> str:
        """All metrics in the Prometheus text exposition format."""
        with self._lock:
            out = _head("sori_stage_seconds", "histogram", "Time each stage of a turn took.")
            for stage in sorted(self.stages):
                out += self.stages[stage].lines("sori_stage_seconds", f'stage="{stage}"')
            out += _head("sori_turns_total", "counter", "Turns by the tier that answered.")
            out += [f'sori_turns_total{{tier="{t}"}} {n}' for t, n in sorted(self.turns.items())]
            out += _head("sori_actions_total", "counter", "Handler calls by outcome.")
            out += [
                f'sori_actions_total{{handler="{h}",outcome="{o}"}} {n}'
                for (h, o), n in sorted(self.actions.items())
            ]
            out += _head("sori_action_seconds", "histogram", "Handler call latency.")
            for handler in sorted(self.action_latency):
                out += self.action_latency[handler].lines(
                    "sori_action_seconds", f'handler="{handler}"'
                )
            out += _head(
                "sori_edge_ttfb_seconds", "histogram", "Time to first token from edge servers."
            )
            out += self.edge_ttfb.lines("sori_edge_ttfb_seconds", "")
            out += self._edge_endpoint_lines()
            out += _head("sori_errors_total", "counter", "Errors by kind.")
            out += [f'sori_errors_total{{kind="{k}"}} {n}' for k, n in sorted(self.errors.items())]
            out += _head("sori_barge_ins_total", "counter", "Replies cut off by the user.")
            out.append(f"sori_barge_ins_total {self.barge_ins}")
            out += _head("sori_wakes_total", "counter", "Wake phrases heard.")
            out.append(f"sori_wakes_total {self.wakes}")
            out += _head(
                "sori_wakes_yielded_total", "counter",
                "Wake phrases another speaker heard clearer and answered ([wake] arbitrate).",
            )  # fmt: skip
            out.append(f"sori_wakes_yielded_total {self.wakes_yielded}")
            out += _head("sori_muted", "gauge", "1 while muted: no audio reaches the recognizer.")
            out.append(f"sori_muted {int(self.muted)}")
            return "\n".join(out) + "\n"

    def _edge_endpoint_lines(self) -> list[str]:
        """The device client's view of each edge endpoint, the one its failover acts on."""
        report = self.edge_endpoints() if self.edge_endpoints is not None else {}
        out = _head(
            "sori_edge_endpoint_ttfb_p95_seconds",
            "gauge",
            "Rolling p95 time to first byte per edge endpoint (the failover threshold's input).",
        )
        for url, (p95_ms, _) in sorted(report.items()):
            if p95_ms is not None:
                out.append(
                    f'sori_edge_endpoint_ttfb_p95_seconds{{endpoint="{_label(url)}"}} '
                    f"{p95_ms / 1000:.6f}"
                )
        out += _head(
            "sori_edge_endpoint_in_rotation", "gauge", "1 while an edge endpoint is in rotation."
        )
        for url, (_, in_rotation) in sorted(report.items()):
            out.append(
                f'sori_edge_endpoint_in_rotation{{endpoint="{_label(url)}"}} {int(in_rotation)}'
            )
        return out


def _label(value: str) -> str:
    """A Prometheus label value, escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _head(name: str, kind: str, help_text: str) -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
