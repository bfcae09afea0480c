"""`sori edge bench URL` and `sori edge plan [PLAN.toml]`: the edge at fleet scale."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from sori.core.errors import ConfigError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "edge",
        help="load-test an edge server, plan an edge fleet's capacity and cost",
        description="Tools for the edge servers (vLLM) that speakers escalate to.",
    )
    tools = parser.add_subparsers(dest="tool", metavar="TOOL", required=True)

    bench = tools.add_parser(
        "bench",
        help="concurrency sweep of streaming answers against an OpenAI-compatible server",
        description="Replay Korean escalations (streaming, thinking off, model 'local') at "
        "each concurrency level and report TTFT p50/p95/p99, inter-token latency, tokens/s "
        "per session and in total, errors, and the highest concurrency whose p95 TTFT holds "
        "--slo-ttft-ms. Exit 1 when a level had errors or no level held the budget; 2 when "
        "the server cannot be reached.",
    )
    bench.add_argument("url", metavar="URL", help="base URL, e.g. http://127.0.0.1:8000/v1")
    bench.add_argument(
        "--concurrency",
        type=_levels,
        default=(1, 2, 4, 8),
        metavar="N,N,...",
        help="concurrent sessions per level (default 1,2,4,8)",
    )
    bench.add_argument(
        "--requests", type=_positive, default=16, metavar="N", help="requests per level"
    )
    bench.add_argument("--slo-ttft-ms", type=float, metavar="MS", help="p95 TTFT budget")
    bench.add_argument("--model", default="local", help="model name sent (default: local)")
    bench.add_argument(
        "--max-tokens", type=_positive, default=128, metavar="N", help="tokens per answer"
    )
    bench.add_argument(
        "--thinking", action="store_true", help="turn thinking on (enable_thinking: true)"
    )
    bench.add_argument(
        "--api-key-env", metavar="VAR", default="", help="environment variable with the key"
    )
    bench.add_argument("--json", action="store_true", help="the report as one JSON object")
    bench.add_argument("--plot", metavar="FILE.png", help="also draw the sweep (matplotlib)")
    bench.set_defaults(tool_run=run_bench)

    plan = tools.add_parser(
        "plan",
        help="simulate an edge fleet over a day: p95 TTFT, instances, utilisation, cost",
        description="Discrete-event simulation of a day of escalations against an "
        "autoscaled vLLM fleet, without and with scheduled pre-warming; reports p95 TTFT "
        "per hour, instances, GPU utilisation and cost per 1M generated tokens. Prices are "
        "inputs in the plan; the example's are placeholders to edit.",
    )
    plan.add_argument(
        "plan", nargs="?", metavar="PLAN.toml", help="the plan (default: the shipped example)"
    )
    plan.add_argument("--households", type=_positive, metavar="N", help="override households")
    plan.add_argument("--seed", type=int, metavar="N", help="override the simulation seed")
    plan.add_argument("--json", action="store_true", help="the report as one JSON object")
    plan.set_defaults(tool_run=run_plan)
    return parser


def run(args: argparse.Namespace) -> int:
    return args.tool_run(args)


def run_bench(args: argparse.Namespace) -> int:
    from sori.edge_tools.bench import BenchSettings, run_bench
    from sori.edge_tools.bench_report import bench_table

    if args.slo_ttft_ms is not None and args.slo_ttft_ms <= 0:
        raise ConfigError(f"--slo-ttft-ms must be positive, got {args.slo_ttft_ms:g}")
    settings = BenchSettings(
        url=args.url,
        concurrency=args.concurrency,
        requests=args.requests,
        model=args.model,
        max_tokens=args.max_tokens,
        thinking=args.thinking,
        slo_ttft_ms=args.slo_ttft_ms,
        api_key=os.environ.get(args.api_key_env, "") if args.api_key_env else "",
    )
    report = asyncio.run(run_bench(settings))
    if args.plot:
        from sori.edge_tools.plot import plot_bench

        plot_bench(report, Path(args.plot))
    if args.json:
        print(json.dumps(report.as_dict(), ensure_ascii=False), flush=True)
    else:
        print(bench_table(report), flush=True)
    failed = any(level.errors for level in report.levels)
    if failed:
        print("sori edge bench: some requests failed (see errors)", file=sys.stderr)
    if args.slo_ttft_ms is not None and report.max_concurrency_within_slo is None:
        print(
            f"sori edge bench: no level held p95 TTFT <= {args.slo_ttft_ms:g} ms",
            file=sys.stderr,
        )
        failed = True
    return 1 if failed else 0


def run_plan(args: argparse.Namespace) -> int:
    from sori.edge_tools.plan_config import EXAMPLE_PLAN, load_plan
    from sori.edge_tools.plan_report import plan_table, simulate_plan

    plan = load_plan(Path(args.plan) if args.plan else EXAMPLE_PLAN)
    report = simulate_plan(plan, households=args.households, seed=args.seed)
    if args.json:
        print(json.dumps(report, ensure_ascii=False), flush=True)
    else:
        print(plan_table(report), flush=True)
    return 0


def _levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,2,4,8, got {text!r}") from None
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError(f"levels must be positive, like 1,2,4,8; got {text!r}")
    return levels


def _positive(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value
