"""Figures of a run (accuracy, false actions, commit latency, per augmentation) and the
comparison with a baseline run that turns a slower or less accurate release into a
failure listing what changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sori.testing.harness.manifest import Tolerances


def p95(values: list[float]) -> float | None:
    return round(float(np.percentile(values, 95)), 1) if values else None


def _figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    latencies = [
        u["commit_latency_ms"]
        for r in runs
        for u in r["utterances"]
        if u["commit_latency_ms"] is not None
    ]
    cers = [r["cer"] for r in runs if r["cer"] is not None]
    passed = sum(r["passed"] for r in runs)
    return {
        "runs": len(runs),
        "passed": passed,
        "failed": len(runs) - passed,
        "accuracy": round(passed / len(runs), 4) if runs else None,
        "false_actions": sum(r["false_actions"] for r in runs),
        "p95_commit_ms": p95(latencies),
        "mean_cer": round(float(np.mean(cers)), 4) if cers else None,
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Overall figures plus the same per augmentation, in first-seen order."""
    by: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by.setdefault(run["augmentation"], []).append(run)
    return {**_figures(runs), "by_augmentation": {k: _figures(v) for k, v in by.items()}}


def _key(run: dict[str, Any]) -> str:
    return f"{Path(run['manifest']).name}: {run['fixture']} [{run['augmentation']}]"


def compare(
    baseline: dict[str, Any], current: dict[str, Any], tolerances: Tolerances
) -> tuple[list[str], list[str]]:
    """(regressions, changes) of `current` against `baseline` (two JSON reports).

    A regression fails the run: accuracy down by more than `accuracy_drop` overall or
    under one augmentation, or p95 commit latency up by more than `p95_commit_ms_rise`.
    Changes list every run that flipped between passing and failing, for the reader."""
    regressions: list[str] = []
    old, new = baseline["summary"], current["summary"]
    scopes = [("overall", old, new)]
    for name, figures in new["by_augmentation"].items():
        if name in old.get("by_augmentation", {}):
            scopes.append((name, old["by_augmentation"][name], figures))
    for scope, was, now in scopes:
        if was.get("accuracy") is not None and now.get("accuracy") is not None:
            drop = was["accuracy"] - now["accuracy"]
            if drop > tolerances.accuracy_drop + 1e-9:
                regressions.append(
                    f"accuracy ({scope}) {was['accuracy']:.1%} -> {now['accuracy']:.1%}, "
                    f"a drop of {drop:.1%} > {tolerances.accuracy_drop:.1%} allowed"
                )
        if was.get("p95_commit_ms") is not None and now.get("p95_commit_ms") is not None:
            rise = now["p95_commit_ms"] - was["p95_commit_ms"]
            if rise > tolerances.p95_commit_ms_rise:
                regressions.append(
                    f"p95 commit latency ({scope}) {was['p95_commit_ms']:.0f} -> "
                    f"{now['p95_commit_ms']:.0f} ms, up {rise:.0f} ms > "
                    f"{tolerances.p95_commit_ms_rise:.0f} ms allowed"
                )
    before = {_key(r): r for r in baseline["runs"]}
    changes = []
    for run in current["runs"]:
        was_run = before.get(_key(run))
        if was_run is None:
            changes.append(f"new: {_key(run)} {'passed' if run['passed'] else 'failed'}")
        elif was_run["passed"] and not run["passed"]:
            changes.append(f"now fails: {_key(run)}: {'; '.join(run['failures'])}")
        elif not was_run["passed"] and run["passed"]:
            changes.append(f"now passes: {_key(run)}")
    now_keys = {_key(r) for r in current["runs"]}
    changes += [f"gone: {k}" for k in before if k not in now_keys]
    return regressions, changes
