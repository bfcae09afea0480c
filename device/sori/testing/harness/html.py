"""`--report DIR`: an HTML page with plots of a `sori test` run, drawn with matplotlib
(the optional extra `sori[report]`, imported only when a page is asked for).

Plots: accuracy and false actions per augmentation (with the SNR in its name), accuracy
against SNR per noise kind, a histogram of commit latencies, CER per fixture."""

from __future__ import annotations

import html
import logging
from pathlib import Path
from typing import Any

from sori.core.errors import DependencyError

log = logging.getLogger(__name__)


def import_matplotlib() -> Any:
    """matplotlib on its file-only backend, or a DependencyError naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise DependencyError(
            "--report draws its plots with matplotlib: pip install 'sori[report]'"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_html(report: dict[str, Any], folder: Path) -> Path:
    """Write index.html and its PNG plots into `folder`; the page's path."""
    plt = import_matplotlib()
    folder.mkdir(parents=True, exist_ok=True)
    runs = report["runs"]
    by = report["summary"]["by_augmentation"]
    plots = []

    names = list(by)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar(names, [by[n]["accuracy"] * 100 for n in names], color="#3a7")
    ax.set_ylabel("passed, %")
    ax.set_ylim(0, 105)
    ax2 = ax.twinx()
    ax2.plot(names, [by[n]["false_actions"] for n in names], "o-", color="#c33")
    ax2.set_ylabel("false actions", color="#c33")
    ax2.set_ylim(bottom=0)
    ax.set_title("Accuracy and false actions per augmentation")
    ax.tick_params(axis="x", rotation=30)
    plots.append(_save(fig, folder / "accuracy.png", plt))

    noisy: dict[str, dict[float, list[dict[str, Any]]]] = {}
    for run in runs:
        if run["noise"] is not None:
            noisy.setdefault(run["noise"], {}).setdefault(run["snr_db"], []).append(run)
    clean = [r["passed"] for r in runs if r["augmentation"] == "clean"]
    if noisy:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax2 = ax.twinx()
        for kind, points in sorted(noisy.items()):
            snrs = sorted(points)
            passed = [100 * sum(r["passed"] for r in points[s]) / len(points[s]) for s in snrs]
            line = ax.plot(snrs, passed, "o-", label=kind)[0]
            false = [sum(r["false_actions"] for r in points[s]) for s in snrs]
            ax2.plot(snrs, false, "x:", color=line.get_color())
        if clean:
            ax.axhline(100 * sum(clean) / len(clean), color="gray", ls="--", label="clean")
        ax.set_xlabel("SNR, dB")
        ax.set_ylabel("passed, % (lines)")
        ax2.set_ylabel("false actions (dotted)")
        ax2.set_ylim(bottom=0)
        ax.set_ylim(0, 105)
        ax.legend()
        ax.set_title("Accuracy and false actions against SNR")
        plots.append(_save(fig, folder / "snr.png", plt))

    latencies = [
        u["commit_latency_ms"]
        for r in runs
        for u in r["utterances"]
        if u["commit_latency_ms"] is not None
    ]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    if latencies:
        ax.hist(latencies, bins=20, color="#37a")
    else:
        ax.text(0.5, 0.5, "no intent was committed", ha="center", transform=ax.transAxes)
    ax.set_xlabel("commit latency after speech, ms")
    ax.set_ylabel("utterances")
    ax.set_title("Commit latency")
    plots.append(_save(fig, folder / "latency.png", plt))

    fixtures: dict[str, list[float]] = {}
    for run in runs:
        if run["cer"] is not None:
            fixtures.setdefault(run["fixture"], []).append(run["cer"])
    if fixtures:
        fig, ax = plt.subplots(figsize=(8, 3.5))
        labels = list(fixtures)
        ax.boxplot([fixtures[k] for k in labels])
        ax.set_xticks(range(1, len(labels) + 1), labels, rotation=30, ha="right")
        ax.set_ylabel("character error rate")
        ax.set_title("CER per fixture (across augmentations)")
        plots.append(_save(fig, folder / "cer.png", plt))

    page = folder / "index.html"
    page.write_text(_page(report, plots), encoding="utf-8")
    return page


def _save(fig: Any, path: Path, plt: Any) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path.name


def _cer(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _page(report: dict[str, Any], plots: list[str]) -> str:
    s = report["summary"]
    e = html.escape
    rows = "".join(
        f"<tr class='{'ok' if r['passed'] else 'fail'}'><td>{e(r['fixture'])}</td>"
        f"<td>{e(r['augmentation'])}</td><td>{'pass' if r['passed'] else 'FAIL'}</td>"
        f"<td>{_cer(r['cer'])}</td>"
        f"<td>{e('; '.join(r['failures']))}</td></tr>"
        for r in report["runs"]
    )
    images = "".join(f"<img src='{e(p)}' alt='{e(p)}'>" for p in plots)
    p95 = "–" if s["p95_commit_ms"] is None else f"{s['p95_commit_ms']:.0f} ms"
    return f"""<!doctype html>
<html lang="ko"><head><meta charset="utf-8"><title>sori test</title>
<style>
body {{ font-family: sans-serif; margin: 2em; background: #fff; color: #222; }}
img {{ max-width: 48%; margin: .5em; border: 1px solid #ddd; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: .2em .5em; }}
tr.fail {{ background: #fdd; }} tr.ok {{ background: #efe; }}
</style></head><body>
<h1>sori test: {s["passed"]} passed, {s["failed"]} failed</h1>
<p>Manifests: {e(", ".join(report["manifests"]))}. Accuracy {s["accuracy"]:.1%},
false actions {s["false_actions"]}, p95 commit latency {p95}.</p>
{images}
<table><tr><th>fixture</th><th>augmentation</th><th>result</th><th>CER</th>
<th>failures</th></tr>{rows}</table>
</body></html>
"""
