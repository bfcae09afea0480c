"""A seeded discrete-event simulation of one day of escalations against an autoscaled fleet of
vLLM instances: the core of `sori edge plan`. Pure: no I/O, no clock, no config parsing.

The model, and why:
- Arrivals are Poisson with a rate constant within each hour of the day (the daily profile).
- Each instance runs at most `max_num_seqs` answers at once (vLLM's batch). A request holds
  one slot for prefill + tokens / decode rate; tokens per answer are exponential around
  their mean (answers vary a lot in length). TTFT = queueing wait + prefill.
- A load-aware gateway keeps one queue in front of the fleet and hands the oldest request
  to the ready instance with the most free slots, so a lone instance is exactly M/M/c when
  prefill is zero (the tests check the Erlang C wait).
- The autoscaler (KEDA/HPA) polls every `poll_s`: desired = max(ceil(running / target
  running per instance), ceil(waiting / target waiting per instance), the cron minimum,
  min_instances), capped at max_instances and at the HPA's rate (double or +4 per poll).
  Scale-up starts pods that serve only after
  `scale_up_delay_s` (scheduling, weights, CUDA graphs); scale-down follows the highest
  desired count of the last `scale_down_after_s` (the HPA stabilisation window) and drains:
  a removed instance finishes its answers but takes no new ones.
- Pre-warming is a schedule of (from, to, instances) windows, the KEDA cron trigger: a
  minimum that starts pods at `from`, so `from` must lead the peak by the scale-up delay.
- Instances are billed from the moment they are requested until they are removed.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

DAY_S = 86400.0


@dataclass(frozen=True)
class Prewarm:
    """A cron window: at least `instances` from `from_hour` to `to_hour`."""

    from_hour: float
    """Start, hours after midnight (6.5 is 06:30)."""
    to_hour: float
    """End, hours after midnight; may be below from_hour to cross midnight."""
    instances: int
    """Instances requested during the window."""

    def active(self, t_s: float) -> bool:
        hour = (t_s / 3600.0) % 24
        if self.from_hour <= self.to_hour:
            return self.from_hour <= hour < self.to_hour
        return hour >= self.from_hour or hour < self.to_hour


@dataclass(frozen=True)
class FleetModel:
    """Everything the simulation needs, in plain units."""

    hourly_rate_per_s: tuple[float, ...]
    """Escalations per second in each of the 24 hours."""
    tokens_per_answer: float
    """Mean generated tokens per answer."""
    max_num_seqs: int
    """Concurrent answers per instance (vLLM --max-num-seqs)."""
    prefill_s: float
    """Time to first token of an idle instance, in seconds."""
    decode_tokens_per_s: float
    """Generation speed of one answer with the batch full, in tokens per second."""
    min_instances: int = 1
    """The autoscaler's floor."""
    max_instances: int = 64
    """The autoscaler's ceiling."""
    target_running: float = 12.0
    """Running answers per instance the autoscaler aims at."""
    target_waiting: float = 2.0
    """Queued requests per instance above which it adds instances."""
    poll_s: float = 15.0
    """Seconds between autoscaler looks (KEDA pollingInterval)."""
    scale_up_delay_s: float = 240.0
    """Seconds from requesting an instance to its first answer."""
    scale_down_after_s: float = 300.0
    """Seconds a lower desired count must persist before instances are removed."""
    prewarm: tuple[Prewarm, ...] = ()
    """Scheduled minimums; empty for autoscaling alone."""
    duration_s: float = DAY_S
    """Simulated time, in seconds."""
    seed: int = 1
    """Random seed; the same seed gives the same day."""


@dataclass
class _Instance:
    ready_at_s: float
    requested_at_s: float
    running: int = 0
    draining: bool = False
    removed_at_s: float | None = None


@dataclass
class HourStats:
    """One hour of the simulated day."""

    arrivals: int = 0
    """Escalations that arrived in the hour."""
    ttft_s: list[float] = field(default_factory=list)
    """Their times to first token, in seconds."""
    instance_s: float = 0.0
    """Billed instance-seconds in the hour."""
    ready_slot_s: float = 0.0
    """Slot-seconds of ready instances (capacity) in the hour."""
    busy_slot_s: float = 0.0
    """Slot-seconds spent answering in the hour."""
    peak_instances: int = 0
    """Most instances billed at once in the hour."""


@dataclass
class DayResult:
    """What the day produced."""

    hours: list[HourStats]
    """Per hour of the day."""
    ttft_s: list[float]
    """Every request's time to first token, in seconds, in arrival order."""
    waits_s: list[float]
    """Every request's queueing wait, in seconds."""
    tokens: float
    """Tokens generated over the day."""
    instance_s: float
    """Billed instance-seconds over the day."""


def simulate(model: FleetModel) -> DayResult:
    """Run the day. Deterministic for a given model (seed included)."""
    rng = random.Random(model.seed)
    arrivals = _arrivals(model, rng)
    hours = [HourStats() for _ in range(math.ceil(model.duration_s / 3600))]
    instances: list[_Instance] = []
    start = _cron_min(model, 0.0)
    for _ in range(max(model.min_instances, start)):
        instances.append(_Instance(ready_at_s=0.0, requested_at_s=0.0))
    heap: list[tuple[float, int, str, object]] = []  # (time, seq, kind, payload)
    seq = 0

    def push(t: float, kind: str, payload: object = None) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (t, seq, kind, payload))

    push(model.poll_s, "tick")
    queue: list[tuple[float, float]] = []  # (arrival time, tokens), FIFO via index
    head = 0
    ttfts: list[float] = [0.0] * len(arrivals)
    waits: list[float] = [0.0] * len(arrivals)
    order = 0  # arrivals admitted so far, for ttft bookkeeping
    queue_ids: list[int] = []
    desired_log: list[tuple[float, int]] = []
    tokens_done = 0.0
    last_t = 0.0
    next_arrival = 0

    def account(until: float) -> None:
        """Integrate instance, capacity and busy time from last_t to `until`."""
        nonlocal last_t
        t = last_t
        while t < until:
            hour = min(int(t // 3600), len(hours) - 1)
            last = hour == len(hours) - 1  # the last hour also takes the overrun
            end = until if last else min(until, (hour + 1) * 3600.0)
            span = end - t
            billed = [i for i in instances if i.removed_at_s is None]
            stats = hours[hour]
            stats.instance_s += span * len(billed)
            stats.peak_instances = max(stats.peak_instances, len(billed))
            for inst in billed:
                if inst.ready_at_s <= t and not inst.draining:
                    stats.ready_slot_s += span * model.max_num_seqs
                stats.busy_slot_s += span * inst.running
            t = end
        last_t = until

    def dispatch(now: float) -> None:
        nonlocal head, tokens_done
        while head < len(queue):
            free = [
                i
                for i in instances
                if i.removed_at_s is None
                and not i.draining
                and i.ready_at_s <= now
                and i.running < model.max_num_seqs
            ]
            if not free:
                return
            inst = min(free, key=lambda i: i.running)
            arrived, tokens = queue[head]
            rid = queue_ids[head]
            head += 1
            inst.running += 1
            waits[rid] = now - arrived
            ttfts[rid] = now - arrived + model.prefill_s
            tokens_done += tokens
            push(now + model.prefill_s + tokens / model.decode_tokens_per_s, "done", inst)

    while True:
        t_heap = heap[0][0] if heap else math.inf
        t_arr = arrivals[next_arrival][0] if next_arrival < len(arrivals) else math.inf
        now = min(t_heap, t_arr)
        if now == math.inf or (now > model.duration_s and head >= len(queue)):
            break
        account(now)
        if t_arr <= t_heap:
            arrived, tokens = arrivals[next_arrival]
            hour = min(int(arrived // 3600), len(hours) - 1)
            hours[hour].arrivals += 1
            queue.append((arrived, tokens))
            queue_ids.append(order)
            order += 1
            next_arrival += 1
            dispatch(now)
            continue
        _, _, kind, payload = heapq.heappop(heap)
        if kind == "done":
            inst = payload  # type: ignore[assignment]
            inst.running -= 1
            if inst.draining and inst.running == 0 and inst.removed_at_s is None:
                inst.removed_at_s = now
            dispatch(now)
        elif kind == "ready":
            dispatch(now)
        elif kind == "tick":
            _autoscale(model, now, instances, len(queue) - head, desired_log, push)
            dispatch(now)
            if now < model.duration_s:
                push(now + model.poll_s, "tick")
    account(max(last_t, model.duration_s))
    by_hour = [min(int(a // 3600), len(hours) - 1) for a, _ in arrivals]
    for rid, hour in enumerate(by_hour):
        hours[hour].ttft_s.append(ttfts[rid])
    return DayResult(
        hours=hours,
        ttft_s=ttfts,
        waits_s=waits,
        tokens=tokens_done,
        instance_s=sum(h.instance_s for h in hours),
    )


def _arrivals(model: FleetModel, rng: random.Random) -> list[tuple[float, float]]:
    """(arrival time, tokens) pairs: Poisson within each hour, exponential answer lengths."""
    out = []
    for hour in range(math.ceil(model.duration_s / 3600)):
        rate = model.hourly_rate_per_s[hour % 24]
        if rate <= 0:
            continue
        t = hour * 3600.0
        end = min((hour + 1) * 3600.0, model.duration_s)
        while True:
            t += rng.expovariate(rate)
            if t >= end:
                break
            out.append((t, rng.expovariate(1.0 / model.tokens_per_answer)))
    return out


def _cron_min(model: FleetModel, t_s: float) -> int:
    return max((w.instances for w in model.prewarm if w.active(t_s)), default=0)


def _autoscale(
    model: FleetModel,
    now: float,
    instances: list[_Instance],
    waiting: int,
    desired_log: list[tuple[float, int]],
    push: Callable[[float, str], None],
) -> None:
    """One autoscaler look (KEDA's rule: each metric's total / its per-instance target,
    the largest wins): start instances at once, remove them after the window."""
    live = [i for i in instances if i.removed_at_s is None and not i.draining]
    running = sum(i.running for i in live)
    want = max(
        math.ceil(running / model.target_running),
        math.ceil(waiting / model.target_waiting),
        _cron_min(model, now),
        model.min_instances,
    )
    # The HPA's scale-up rate limit (its default, and deploy/edge's): per period, at most
    # double the instances or add 4, whichever is more.
    want = min(want, model.max_instances, max(2 * len(live), len(live) + 4))
    desired_log.append((now, want))
    while desired_log and desired_log[0][0] < now - model.scale_down_after_s:
        desired_log.pop(0)
    keep = max(d for _, d in desired_log)  # the stabilisation window
    if want > len(live):
        for _ in range(want - len(live)):
            instances.append(_Instance(ready_at_s=now + model.scale_up_delay_s, requested_at_s=now))
            push(now + model.scale_up_delay_s, "ready")
    elif keep < len(live):
        # Remove pods not yet ready first, then the least busy ones.
        order = sorted(live, key=lambda i: (i.ready_at_s <= now, i.running))
        for inst in order[: len(live) - keep]:
            inst.draining = True
            if inst.running == 0:
                inst.removed_at_s = now
