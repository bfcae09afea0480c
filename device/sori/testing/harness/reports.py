"""Machine-readable reports of a `sori test` run: the JSON report (every fixture, every
utterance, every timing; also what `--baseline` reads back) and JUnit XML for CI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from sori.testing.harness.manifest import ManifestError

REPORT_VERSION = 1


def build_report(
    manifests: list[str], runs: list[dict[str, Any]], summary: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "sori_test": REPORT_VERSION,
        "manifests": manifests,
        **extra,
        "summary": summary,
        "runs": runs,
    }


def write_json(report: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", "utf-8")


def read_baseline(path: str | Path) -> dict[str, Any]:
    """A JSON report of an earlier run, or ManifestError saying what is wrong with it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"--baseline {path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ManifestError(f"--baseline {path}: not a JSON report ({exc})") from None
    if not isinstance(data, dict) or data.get("sori_test") != REPORT_VERSION:
        raise ManifestError(
            f"--baseline {path}: not a `sori test --json` report (version {REPORT_VERSION})"
        )
    return data


def write_junit(report: dict[str, Any], path: str | Path) -> None:
    """One <testsuite> per manifest, one <testcase> per fixture x augmentation."""
    root = ET.Element("testsuites", name="sori test")
    total = failed = 0
    total_s = 0.0
    for manifest in report["manifests"]:
        runs = [r for r in report["runs"] if r["manifest"] == manifest]
        fails = sum(not r["passed"] for r in runs)
        seconds = sum(r["wall_s"] for r in runs)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=Path(manifest).name,
            tests=str(len(runs)),
            failures=str(fails),
            errors="0",
            skipped="0",
            time=f"{seconds:.3f}",
        )
        for run in runs:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{Path(manifest).stem}.{run['fixture']}",
                name=run["augmentation"],
                time=f"{run['wall_s']:.3f}",
            )
            if not run["passed"]:
                failure = ET.SubElement(
                    case, "failure", message=run["failures"][0], type="ExpectationFailed"
                )
                failure.text = "\n".join(run["failures"])
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(
                f"{u['speech_start_s']:.2f}-{u['speech_end_s']:.2f}s {u['transcript']!r} "
                f"intent={u['intent']} commit_ms={u['commit_latency_ms']}"
                for u in run["utterances"]
            )
        total, failed, total_s = total + len(runs), failed + fails, total_s + seconds
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", "0")
    root.set("time", f"{total_s:.3f}")
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
