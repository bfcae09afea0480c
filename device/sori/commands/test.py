"""`sori test MANIFEST...`: WAV fixtures against their expectations, clean and under noise,
reverb, gain and speed changes; reports in JSON, JUnit XML and HTML; regressions against
a baseline run. The work is sori.testing.harness's; this module parses and prints."""

from __future__ import annotations

import argparse
import sys
import time


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "test",
        help="run WAV fixtures against expectations (noise, reports, regressions)",
        description="Run every fixture of each manifest, clean and under each augmentation, "
        "through the hearing pipeline; one line per failure, then 'N passed, M failed'. "
        "Exit 1 when a run or the baseline comparison fails, 2 on bad input.",
    )
    parser.add_argument("manifests", nargs="+", metavar="MANIFEST", help="fixture manifest YAML")
    parser.add_argument("--json", metavar="F", help="write the JSON report (every utterance)")
    parser.add_argument("--junit", metavar="F", help="write JUnit XML for CI")
    parser.add_argument(
        "--report", metavar="DIR", help="write an HTML page with plots (extra: sori[report])"
    )
    parser.add_argument(
        "--baseline", metavar="F", help="an earlier --json report: fail on regressions"
    )
    parser.add_argument(
        "--act",
        action="store_true",
        help="go on through the daemon: its handlers really act (MQTT, Home Assistant) and "
        "its tiers answer; no_action and tier are judged on what it did",
    )
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes")
    return parser


def run(args: argparse.Namespace) -> int:
    from sori.testing.harness import Session  # hearing needs the audio extra: not for --help

    if args.jobs < 1:
        print("sori test: --jobs must be 1 or more", file=sys.stderr)
        return 2
    session = Session.open(
        args.manifests, baseline=args.baseline, report_dir=args.report, act=args.act
    )
    started = time.perf_counter()
    report = session.run(args.jobs, progress=_bar() if sys.stderr.isatty() else None)
    for run in report["runs"]:
        for failure in run["failures"]:
            print(f"FAIL {run['fixture']} [{run['augmentation']}]: {failure}")
    if args.json:
        session.write_json(report, args.json)
    if args.junit:
        session.write_junit(report, args.junit)
    if args.report:
        page = session.write_html(report, args.report)
        print(f"report: {page}", file=sys.stderr)
    comparison = report.get("baseline")
    if comparison:
        for change in comparison["changes"]:
            print(f"changed: {change}")
        for regression in comparison["regressions"]:
            print(f"REGRESSION {regression}")
    summary = report["summary"]
    print(f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    print(f"{summary['passed']} passed, {summary['failed']} failed")
    regressed = bool(comparison and comparison["regressions"])
    return 1 if summary["failed"] or regressed else 0


def _bar():
    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}{end}")
        sys.stderr.flush()

    return show
