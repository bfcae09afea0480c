"""The testers' harness behind `sori test`: fixture manifests, room conditions, runs
through the hearing pipeline, judgements, reports and baseline comparisons.

    session = Session.open(["tests/fixtures/ko-read.yaml"])
    report = session.run(jobs=2)
    report["summary"]["passed"], report["summary"]["failed"]
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sori.testing.harness.manifest import Manifest, ManifestError, Tolerances, load_manifest
from sori.testing.harness.reports import build_report, read_baseline, write_json, write_junit
from sori.testing.harness.run import Progress, run_manifest
from sori.testing.harness.runner import load_understanding
from sori.testing.harness.summary import compare, summarize

__all__ = ["Manifest", "ManifestError", "Session", "load_manifest"]


@dataclass
class Session:
    """Manifests checked and understood, ready to run (all bad input refused up front)."""

    manifests: list[Manifest]
    understandings: list[Any]
    baseline: dict[str, Any] | None = None
    act: bool = False
    """Go on through the daemon (sori.testing.harness.act): real actions, real tiers."""

    @classmethod
    def open(
        cls,
        paths: list[str],
        baseline: str | None = None,
        report_dir: str | None = None,
        act: bool = False,
    ) -> Session:
        if report_dir is not None:
            from sori.testing.harness.html import import_matplotlib

            import_matplotlib()  # a missing extra is refused before the long run
        manifests = [load_manifest(p) for p in paths]
        understandings = [load_understanding(m) for m in manifests]
        old = read_baseline(baseline) if baseline else None
        return cls(manifests, understandings, old, act)

    def run(self, jobs: int = 1, progress: Progress | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        total = sum(len(m.fixtures) * len(m.augmentations) for m in self.manifests)
        offset = 0
        runs: list[dict[str, Any]] = []
        for manifest, understanding in zip(self.manifests, self.understandings, strict=True):
            size = len(manifest.fixtures) * len(manifest.augmentations)

            def step(done: int, _: int, base: int = offset) -> None:
                if progress:
                    progress(base + done, total)

            runs += run_manifest(manifest, jobs, step, understanding, self.act)
            offset += size
        report = build_report(
            [str(m.path) for m in self.manifests],
            runs,
            summarize(runs),
            jobs=jobs,
            act=self.act,
            wall_s=round(time.perf_counter() - started, 2),
        )
        if self.baseline is not None:
            regressions, changes = compare(self.baseline, report, self.tolerances())
            report["baseline"] = {"regressions": regressions, "changes": changes}
        return report

    def tolerances(self) -> Tolerances:
        """The strictest tolerances among the manifests."""
        return Tolerances(
            accuracy_drop=min(m.tolerances.accuracy_drop for m in self.manifests),
            p95_commit_ms_rise=min(m.tolerances.p95_commit_ms_rise for m in self.manifests),
        )

    def write_json(self, report: dict[str, Any], path: str | Path) -> None:
        write_json(report, path)

    def write_junit(self, report: dict[str, Any], path: str | Path) -> None:
        write_junit(report, path)

    def write_html(self, report: dict[str, Any], folder: str | Path) -> Path:
        from sori.testing.harness.html import write_html

        return write_html(report, Path(folder))
