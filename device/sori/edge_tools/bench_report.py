"""The text table of `sori edge bench`."""

from __future__ import annotations

from sori.edge_tools.bench import BenchReport

_COLUMNS = (
    ("conc", "concurrency", "{:d}"),
    ("reqs", "requests", "{:d}"),
    ("err", "errors", "{:d}"),
    ("TTFT p50", "ttft_p50_ms", "{:.0f}"),
    ("p95", "ttft_p95_ms", "{:.0f}"),
    ("p99", "ttft_p99_ms", "{:.0f}"),
    ("ITL p50", "itl_p50_ms", "{:.0f}"),
    ("ITL p95", "itl_p95_ms", "{:.0f}"),
    ("tok/s/session", "session_tokens_per_s", "{:.1f}"),
    ("tok/s total", "total_tokens_per_s", "{:.1f}"),
)


def bench_table(report: BenchReport) -> str:
    """A Markdown table (times in ms), then the level that held the budget."""
    head = [title for title, _, _ in _COLUMNS]
    rows = []
    for level in report.levels:
        cells = []
        for _, name, fmt in _COLUMNS:
            value = getattr(level, name)
            cells.append("-" if value is None else fmt.format(value))
        rows.append(cells)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    thinking = "on" if report.thinking else "off"
    lines.append(
        f"\n{report.url}, model {report.model}, thinking {thinking}, max_tokens "
        f"{report.max_tokens}; times in ms."
    )
    if report.slo_ttft_ms is not None:
        best = report.max_concurrency_within_slo
        held = "none" if best is None else str(best)
        lines.append(f"Highest concurrency with p95 TTFT <= {report.slo_ttft_ms:g} ms: {held}")
    return "\n".join(lines)
