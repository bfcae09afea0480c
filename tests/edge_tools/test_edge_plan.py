"""`sori edge plan`: the fleet simulation against hand-computable cases, the cost arithmetic,
the shipped example plan, and the command's output and errors."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sori.core.errors import ConfigError
from sori.edge_tools.fleet_sim import FleetModel, Prewarm, simulate
from sori.edge_tools.plan_config import EXAMPLE_PLAN, load_plan
from sori.edge_tools.plan_report import cost_per_million_tokens, fleet_model, simulate_plan

REPO = Path(__file__).resolve().parents[2]


def erlang_c(servers: int, arrival_per_s: float, service_per_s: float) -> tuple[float, float]:
    """M/M/c: (probability of waiting, mean wait in seconds)."""
    load = arrival_per_s / service_per_s
    top = load**servers / math.factorial(servers) / (1 - load / servers)
    wait_p = top / (sum(load**k / math.factorial(k) for k in range(servers)) + top)
    return wait_p, wait_p / (servers * service_per_s - arrival_per_s)


def test_one_instance_under_a_constant_rate_matches_erlang_c():
    # 4 slots, exponential service of mean 4 s (tokens exponential, 1 token/s, no prefill),
    # 0.7 arrivals/s: utilisation 0.7; about 60,000 requests over the day.
    model = FleetModel(
        hourly_rate_per_s=(0.7,) * 24,
        tokens_per_answer=4.0,
        max_num_seqs=4,
        prefill_s=0.0,
        decode_tokens_per_s=1.0,
        min_instances=1,
        max_instances=1,
    )
    day = simulate(model)
    wait_p, mean_wait_s = erlang_c(4, 0.7, 0.25)
    waited = sum(1 for w in day.waits_s if w > 0) / len(day.waits_s)
    assert waited == pytest.approx(wait_p, abs=0.03)
    assert sum(day.waits_s) / len(day.waits_s) == pytest.approx(mean_wait_s, rel=0.15)
    assert day.instance_s == pytest.approx(86400, rel=0.01)  # one instance all day


def test_twice_the_slots_cut_the_wait_as_erlang_c_says():
    base = FleetModel((0.7,) * 24, 4.0, 8, 0.0, 1.0, min_instances=1, max_instances=1)
    day = simulate(dataclasses.replace(base, duration_s=6 * 3600))
    assert sum(day.waits_s) / len(day.waits_s) == pytest.approx(
        erlang_c(8, 0.7, 0.25)[1], abs=0.05
    )  # about 0.04 s: almost nobody waits with 8 slots


PEAK = tuple(0.05 if h != 7 else 2.0 for h in range(24))  # a sharp 07:00 peak


def peaked(prewarm: tuple[Prewarm, ...]) -> FleetModel:
    return FleetModel(
        hourly_rate_per_s=PEAK,
        tokens_per_answer=40.0,
        max_num_seqs=4,
        prefill_s=0.2,
        decode_tokens_per_s=20.0,  # 2.2 s per answer: the peak needs about 5 instances
        min_instances=1,
        max_instances=20,
        target_running=3.0,
        target_waiting=2.0,
        scale_up_delay_s=300.0,
        prewarm=prewarm,
        duration_s=10 * 3600,
    )


def test_prewarming_removes_the_peaks_queueing_delay():
    alone = simulate(peaked(()))
    warm = simulate(peaked((Prewarm(from_hour=6.9, to_hour=8.0, instances=8),)))
    alone_p95 = sorted(alone.hours[7].ttft_s)[int(0.95 * len(alone.hours[7].ttft_s))]
    warm_p95 = sorted(warm.hours[7].ttft_s)[int(0.95 * len(warm.hours[7].ttft_s))]
    assert alone_p95 > 5.0  # the autoscaler needs 5 minutes: the first requests queue
    assert warm_p95 < 0.2 + 0.1  # prefill, next to no wait
    assert max(warm.waits_s) < alone_p95
    # Pre-warming pays for the instances it holds before the peak arrives.
    assert warm.hours[6].instance_s > alone.hours[6].instance_s


def test_the_same_seed_gives_the_same_day():
    model = peaked(())
    assert simulate(model).ttft_s == simulate(model).ttft_s
    assert simulate(model).ttft_s != simulate(dataclasses.replace(model, seed=2)).ttft_s


def test_cost_per_million_tokens_is_monthly_cost_over_monthly_tokens():
    # Two instances all day at 3,000 a month each = 6,000 a month; 2M tokens a day over
    # 30 days = 60M tokens: 100 per 1M tokens.
    assert cost_per_million_tokens(2 * 86400, 3000.0, 2_000_000, 30) == pytest.approx(100.0)
    assert cost_per_million_tokens(86400, 3000.0, 0, 30) is None


def test_a_fixed_fleet_costs_its_monthly_price(tmp_path):
    plan = load_plan(EXAMPLE_PLAN)
    plan = dataclasses.replace(plan, min_instances=3, max_instances=3, prewarm=(), households=100)
    plan = dataclasses.replace(plan, gpu=dataclasses.replace(plan.gpu, monthly_cost=700.0))
    report = simulate_plan(plan)["modes"]["autoscaling"]
    assert report["instance_hours_per_day"] == pytest.approx(72.0, abs=0.1)
    assert report["monthly_cost"] == pytest.approx(2100.0, rel=0.002)
    expected = 2100.0 / (report["tokens_per_day"] * plan.days_per_month) * 1e6
    assert report["cost_per_1m_tokens"] == pytest.approx(expected, rel=0.002)


def test_the_example_plan_shows_prewarming_beside_autoscaling():
    plan = load_plan(EXAMPLE_PLAN)
    assert plan.gpu.currency == "EXAMPLE"  # placeholders, never presented as prices
    model = fleet_model(plan, prewarm=True)
    per_day = sum(rate * 3600 for rate in model.hourly_rate_per_s)
    assert per_day == pytest.approx(plan.households * plan.escalations_per_household_per_day)
    report = simulate_plan(plan)
    auto, warm = report["modes"]["autoscaling"], report["modes"]["prewarmed"]
    assert len(auto["hours"]) == 24
    assert warm["worst_hour_ttft_p95_ms"] < auto["worst_hour_ttft_p95_ms"]


def run_plan(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "device")}
    return subprocess.run(
        [sys.executable, "-m", "sori", "edge", "plan", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_command_prints_json_and_refuses_a_bad_plan(tmp_path):
    small = tmp_path / "small.toml"
    text = EXAMPLE_PLAN.read_text(encoding="utf-8").replace("households = 10000", "households = 50")
    small.write_text(text, encoding="utf-8")
    done = run_plan(str(small), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["households"] == 50 and set(report["modes"]) == {"autoscaling", "prewarmed"}
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('gpu = "H100"', 'gpu = "B200"'), encoding="utf-8")
    done = run_plan(str(bad))
    assert done.returncode == 2
    assert "instance.gpu = 'B200' is not in [gpus]" in done.stderr
    assert "Traceback" not in done.stderr
    assert run_plan(str(tmp_path / "missing.toml")).returncode == 2


def test_a_plan_missing_a_key_names_it(tmp_path):
    broken = tmp_path / "p.toml"
    broken.write_text(
        EXAMPLE_PLAN.read_text(encoding="utf-8").replace("max_num_seqs = 8", ""),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="instance.max_num_seqs is missing"):
        load_plan(broken)
