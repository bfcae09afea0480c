"""`sori edge plan`'s report: the day simulated twice (autoscaling alone, and with the plan's
pre-warming), summarised per hour and per day, with cost per 1M generated tokens."""

from __future__ import annotations

import dataclasses
from typing import Any

from sori.edge_tools.bench import percentile
from sori.edge_tools.fleet_sim import DAY_S, DayResult, FleetModel, simulate
from sori.edge_tools.plan_config import Plan


def fleet_model(plan: Plan, prewarm: bool) -> FleetModel:
    """The simulation's inputs from a plan; without the cron windows when `prewarm` is off."""
    per_day = plan.households * plan.escalations_per_household_per_day
    total = sum(plan.hourly_weights)
    return FleetModel(
        hourly_rate_per_s=tuple(per_day * w / total / 3600.0 for w in plan.hourly_weights),
        tokens_per_answer=plan.tokens_per_answer,
        max_num_seqs=plan.max_num_seqs,
        prefill_s=plan.prefill_ms / 1000.0,
        decode_tokens_per_s=plan.decode_tokens_per_s,
        min_instances=plan.min_instances,
        max_instances=plan.max_instances,
        target_running=plan.target_running_per_instance,
        target_waiting=plan.target_waiting_per_instance,
        poll_s=plan.poll_s,
        scale_up_delay_s=plan.scale_up_delay_s,
        scale_down_after_s=plan.scale_down_after_s,
        prewarm=plan.prewarm if prewarm else (),
        seed=plan.seed,
    )


def monthly_cost(instance_s_per_day: float, instance_monthly_cost: float) -> float:
    """A month of the day's fleet: mean instances over the day x one instance's monthly cost."""
    return instance_s_per_day / DAY_S * instance_monthly_cost


def cost_per_million_tokens(
    instance_s_per_day: float,
    instance_monthly_cost: float,
    tokens_per_day: float,
    days_per_month: float,
) -> float | None:
    """Monthly total cost / monthly generated tokens x 1,000,000; None without tokens."""
    tokens_per_month = tokens_per_day * days_per_month
    if tokens_per_month <= 0:
        return None
    return monthly_cost(instance_s_per_day, instance_monthly_cost) / tokens_per_month * 1e6


def summarize_day(plan: Plan, day: DayResult) -> dict[str, Any]:
    """A mode's day: totals and one row per hour (times in ms)."""
    busy = sum(h.busy_slot_s for h in day.hours)
    ready = sum(h.ready_slot_s for h in day.hours)
    hours = []
    for hour, stats in enumerate(day.hours):
        hours.append(
            {
                "hour": hour,
                "arrivals": stats.arrivals,
                "ttft_p95_ms": _ms(percentile(stats.ttft_s, 95)),
                "instances_mean": round(stats.instance_s / 3600.0, 2),
                "instances_peak": stats.peak_instances,
                "utilisation": round(stats.busy_slot_s / stats.ready_slot_s, 3)
                if stats.ready_slot_s
                else None,
            }
        )
    cost = monthly_cost(day.instance_s, plan.gpu.instance_monthly_cost)
    per_million = cost_per_million_tokens(
        day.instance_s, plan.gpu.instance_monthly_cost, day.tokens, plan.days_per_month
    )
    return {
        "requests": len(day.ttft_s),
        "ttft_p50_ms": _ms(percentile(day.ttft_s, 50)),
        "ttft_p95_ms": _ms(percentile(day.ttft_s, 95)),
        "ttft_p99_ms": _ms(percentile(day.ttft_s, 99)),
        "worst_hour_ttft_p95_ms": max((h["ttft_p95_ms"] or 0.0) for h in hours),
        "mean_wait_ms": _ms(sum(day.waits_s) / len(day.waits_s)) if day.waits_s else None,
        "instance_hours_per_day": round(day.instance_s / 3600.0, 1),
        "instances_peak": max(h.peak_instances for h in day.hours),
        "gpu_utilisation": round(busy / ready, 3) if ready else None,
        "tokens_per_day": round(day.tokens),
        "monthly_cost": round(cost, 2),
        "cost_per_1m_tokens": None if per_million is None else round(per_million, 4),
        "hours": hours,
    }


def simulate_plan(
    plan: Plan, households: int | None = None, seed: int | None = None
) -> dict[str, Any]:
    """Both modes, as one JSON-ready report."""
    changes: dict[str, Any] = {}
    if households is not None:
        changes["households"] = households
    if seed is not None:
        changes["seed"] = seed
    plan = dataclasses.replace(plan, **changes)
    modes = {}
    for name, prewarm in (("autoscaling", False), ("prewarmed", True)):
        modes[name] = summarize_day(plan, simulate(fleet_model(plan, prewarm)))
    return {
        "plan": plan.source,
        "households": plan.households,
        "escalations_per_day": round(plan.households * plan.escalations_per_household_per_day),
        "gpu": plan.gpu.name,
        "gpus_per_instance": plan.gpu.gpus_per_instance,
        "instance_monthly_cost": plan.gpu.instance_monthly_cost,
        "currency": plan.gpu.currency,
        "max_num_seqs": plan.max_num_seqs,
        "seed": plan.seed,
        "prewarm": [dataclasses.asdict(w) for w in plan.prewarm],
        "modes": modes,
    }


def plan_table(report: dict[str, Any]) -> str:
    """Per-hour table of both modes, then the day's totals, as Markdown."""
    auto, warm = report["modes"]["autoscaling"], report["modes"]["prewarmed"]
    lines = [
        f"{report['households']} households, {report['escalations_per_day']} escalations/day, "
        f"{report['gpu']} x{report['gpus_per_instance']} per instance, "
        f"max-num-seqs {report['max_num_seqs']}, seed {report['seed']}",
        "",
        "| hour | requests | autoscaling: instances | p95 TTFT ms | util "
        "| pre-warmed: instances | p95 TTFT ms | util |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for a, w in zip(auto["hours"], warm["hours"], strict=True):
        lines.append(
            f"| {a['hour']:02d} | {a['arrivals']} | {a['instances_mean']:.1f} "
            f"| {_show(a['ttft_p95_ms'])} | {_show(a['utilisation'], '{:.0%}')} "
            f"| {w['instances_mean']:.1f} | {_show(w['ttft_p95_ms'])} "
            f"| {_show(w['utilisation'], '{:.0%}')} |"
        )
    unit = report["currency"] or "(currency)"
    lines += [
        "",
        "| day | autoscaling | pre-warmed |",
        "|---|---|---|",
    ]
    for label, key, fmt in (
        ("p95 TTFT (ms)", "ttft_p95_ms", "{:.0f}"),
        ("p99 TTFT (ms)", "ttft_p99_ms", "{:.0f}"),
        ("worst hour's p95 TTFT (ms)", "worst_hour_ttft_p95_ms", "{:.0f}"),
        ("instance-hours per day", "instance_hours_per_day", "{:.1f}"),
        ("peak instances", "instances_peak", "{:d}"),
        ("GPU utilisation (slots busy)", "gpu_utilisation", "{:.0%}"),
        ("tokens per day", "tokens_per_day", "{:,}"),
        (f"monthly cost ({unit})", "monthly_cost", "{:,.2f}"),
        (f"cost per 1M tokens ({unit})", "cost_per_1m_tokens", "{:.4f}"),
    ):
        lines.append(f"| {label} | {_show(auto[key], fmt)} | {_show(warm[key], fmt)} |")
    if report["currency"] == "EXAMPLE":
        lines.append("\nPrices are the example's placeholders: put yours in [gpus] of the plan.")
    return "\n".join(lines)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 1)


def _show(value: Any, fmt: str = "{:.0f}") -> str:
    return "-" if value is None else fmt.format(value)
