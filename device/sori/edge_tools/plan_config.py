"""Reading a `sori edge plan` file (TOML) into checked values; the only disk reader of the
planner. Every problem is a ConfigError naming the key and what to write instead."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sori.core.errors import ConfigError
from sori.edge_tools.fleet_sim import Prewarm

EXAMPLE_PLAN = Path(__file__).with_name("plan.example.toml")
"""The plan shipped with Sori (placeholder prices, example capacity)."""


@dataclass(frozen=True)
class Gpu:
    """One row of the user's GPU price table."""

    name: str
    """The table key (H100, H200, A100, ...)."""
    monthly_cost: float
    """What one GPU costs per month, in `currency`."""
    gpus_per_instance: int
    """GPUs one vLLM instance uses (tensor parallel size)."""
    currency: str
    """The unit of monthly_cost, as the user writes it."""

    @property
    def instance_monthly_cost(self) -> float:
        return self.monthly_cost * self.gpus_per_instance


@dataclass(frozen=True)
class Plan:
    """A whole plan, checked."""

    source: str
    """Where it was read from."""
    seed: int
    """Simulation seed."""
    days_per_month: float
    """Days in the month the cost is spread over."""
    households: int
    """Households (speakers) served."""
    escalations_per_household_per_day: float
    """Turns per household per day that reach the edge."""
    tokens_per_answer: float
    """Mean generated tokens per answer."""
    hourly_weights: tuple[float, ...]
    """Relative rate for each of the 24 hours."""
    gpu: Gpu
    """The GPU the instances run on."""
    max_num_seqs: int
    """vLLM --max-num-seqs per instance."""
    prefill_ms: float
    """TTFT of an idle instance, in milliseconds."""
    decode_tokens_per_s: float
    """Tokens/s per session at max_num_seqs."""
    min_instances: int
    """Autoscaler floor."""
    max_instances: int
    """Autoscaler ceiling."""
    target_running_per_instance: float
    """Running answers per instance the autoscaler aims at."""
    target_waiting_per_instance: float
    """Queued requests per instance that trigger a scale-up."""
    poll_s: float
    """Seconds between autoscaler looks."""
    scale_up_delay_s: float
    """Seconds from requesting an instance to its first answer."""
    scale_down_after_s: float
    """Scale-down stabilisation window, in seconds."""
    prewarm: tuple[Prewarm, ...]
    """The cron windows."""


def load_plan(path: Path) -> Plan:
    """Read and check a plan file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such plan; copy {EXAMPLE_PLAN} and edit it, or run without one"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    return parse_plan(data, str(path))


def parse_plan(data: dict[str, Any], source: str = "plan") -> Plan:
    """Check a parsed plan; raises ConfigError naming the key at fault."""
    r = _Reader(data, source)
    weights = r.get("demand.hourly_weights", list)
    if len(weights) != 24 or not all(isinstance(w, int | float) and w >= 0 for w in weights):
        raise ConfigError(f"{source}: demand.hourly_weights must be 24 numbers >= 0 (00..23)")
    if sum(weights) <= 0:
        raise ConfigError(f"{source}: demand.hourly_weights are all zero; give the day a shape")
    gpus = r.get("gpus", dict)
    gpu_name = r.get("instance.gpu", str)
    if gpu_name not in gpus:
        raise ConfigError(
            f"{source}: instance.gpu = {gpu_name!r} is not in [gpus] "
            f"(have: {', '.join(sorted(gpus)) or 'none'}); add [gpus.{gpu_name}]"
        )
    g = f"gpus.{gpu_name}"
    gpu = Gpu(
        name=gpu_name,
        monthly_cost=r.number(f"{g}.monthly_cost", low=0.0),
        gpus_per_instance=r.integer(f"{g}.gpus_per_instance", low=1, default=1),
        currency=str(r.get(f"{g}.currency", str, default="")),
    )
    prewarm = []
    for i, window in enumerate(r.get("prewarm", list, default=[])):
        w = _Reader(window, f"{source}: prewarm[{i}]")
        prewarm.append(
            Prewarm(
                from_hour=w.number("from_hour", low=0.0, high=24.0),
                to_hour=w.number("to_hour", low=0.0, high=24.0),
                instances=w.integer("instances", low=1),
            )
        )
    plan = Plan(
        source=source,
        seed=r.integer("seed", low=0, default=1),
        days_per_month=r.number("days_per_month", low=1.0, high=31.0, default=30.0),
        households=r.integer("demand.households", low=1),
        escalations_per_household_per_day=r.number(
            "demand.escalations_per_household_per_day", low=0.0
        ),
        tokens_per_answer=r.number("demand.tokens_per_answer", low=1.0),
        hourly_weights=tuple(float(w) for w in weights),
        gpu=gpu,
        max_num_seqs=r.integer("instance.max_num_seqs", low=1),
        prefill_ms=r.number("instance.prefill_ms", low=0.0),
        decode_tokens_per_s=r.number("instance.decode_tokens_per_s", low=0.001),
        min_instances=r.integer("autoscale.min_instances", low=1, default=1),
        max_instances=r.integer("autoscale.max_instances", low=1),
        target_running_per_instance=r.number("autoscale.target_running_per_instance", low=0.1),
        target_waiting_per_instance=r.number("autoscale.target_waiting_per_instance", low=0.1),
        poll_s=r.number("autoscale.poll_s", low=1.0, default=15.0),
        scale_up_delay_s=r.number("autoscale.scale_up_delay_s", low=0.0),
        scale_down_after_s=r.number("autoscale.scale_down_after_s", low=0.0, default=300.0),
        prewarm=tuple(prewarm),
    )
    if plan.min_instances > plan.max_instances:
        raise ConfigError(f"{source}: autoscale.min_instances is above max_instances")
    return plan


class _Reader:
    """Dotted-key access with type and range checks."""

    _MISSING = object()

    def __init__(self, data: Any, source: str) -> None:
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a table")
        self.data = data
        self.source = source

    def get(self, key: str, kind: type, default: Any = _MISSING) -> Any:
        node: Any = self.data
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                if default is not self._MISSING:
                    return default
                raise ConfigError(f"{self.source}: {key} is missing; see {EXAMPLE_PLAN.name}")
            node = node[part]
        if kind is float and isinstance(node, int) and not isinstance(node, bool):
            node = float(node)
        if not isinstance(node, kind) or isinstance(node, bool):
            raise ConfigError(f"{self.source}: {key} must be a {kind.__name__}, got {node!r}")
        return node

    def number(
        self, key: str, low: float, high: float | None = None, default: Any = _MISSING
    ) -> float:
        value = self.get(key, float, default)
        if value < low or (high is not None and value > high):
            bound = f"between {low:g} and {high:g}" if high is not None else f">= {low:g}"
            raise ConfigError(f"{self.source}: {key} must be {bound}, got {value:g}")
        return float(value)

    def integer(self, key: str, low: int, default: Any = _MISSING) -> int:
        value = self.get(key, int, default)
        if value < low:
            raise ConfigError(f"{self.source}: {key} must be a whole number >= {low}")
        return value
