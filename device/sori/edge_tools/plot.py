"""PNG charts of the edge tools' reports (matplotlib, imported only when a plot is asked for)."""

from __future__ import annotations

from pathlib import Path

from sori.core.errors import DependencyError
from sori.edge_tools.bench import BenchReport


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only; never a window
        import matplotlib.pyplot as plt
    except ImportError:
        raise DependencyError(
            "matplotlib is not installed; run: pip install 'sori[report]' (or drop --plot)"
        ) from None
    return plt


def plot_bench(report: BenchReport, path: Path) -> None:
    """TTFT percentiles and total tokens/s against concurrency, the budget as a line."""
    plt = _pyplot()
    levels = [level for level in report.levels if level.ttft_p50_ms is not None]
    xs = [level.concurrency for level in levels]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name, values in (
        ("p50", [level.ttft_p50_ms for level in levels]),
        ("p95", [level.ttft_p95_ms for level in levels]),
        ("p99", [level.ttft_p99_ms for level in levels]),
    ):
        left.plot(xs, values, marker="o", label=f"TTFT {name}")
    if report.slo_ttft_ms is not None:
        left.axhline(report.slo_ttft_ms, color="red", linestyle="--", label="p95 budget")
    left.set_xlabel("concurrent sessions")
    left.set_ylabel("time to first token (ms)")
    left.legend()
    right.plot(xs, [level.total_tokens_per_s for level in levels], marker="o", label="total")
    right.plot(
        xs, [level.session_tokens_per_s for level in levels], marker="o", label="per session"
    )
    right.set_xlabel("concurrent sessions")
    right.set_ylabel("tokens/s")
    right.legend()
    fig.suptitle(f"sori edge bench: {report.url} ({report.model})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
