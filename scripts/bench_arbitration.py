"""What arbitrating costs: how long after its wake event a speaker knows whether it answers
(`[wake] arbitrate`), over a real broker.

    .venv/bin/python scripts/bench_arbitration.py [--trials 20] [--window-ms 250] [--json]

Starts mosquitto (the Debian package, `scripts/install.sh --test`) on a free loopback port,
twice: as installed, and with `set_tcp_nodelay true`. On each, two speakers' arbiters and
claims clients, the daemon's own (`sori.serving.conversation.arbitration`,
`sori.serving.wake_claims`), both online, each phrase a new one:
- "both heard": the living room and the kitchen hear the phrase at once (the living room
  9 dB clearer): until both have decided;
- "the kitchen heard nothing": only the living room hears it; the kitchen, hearing
  nothing, passes: until the living room has decided;
- "the kitchen hears speech": as above, but the kitchen has an utterance open, so the
  phrase may be in it: it passes once 3/4 of the window has gone by without it.
Trials come 0.5-1.5 s apart, as wake phrases do: alone on a connection, not in a burst.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from loopback_broker import INSTALL_HINT, mosquitto_exe, start_mosquitto

from sori.core.events import SpeechStarted, SpeechStopped, WakeDetected
from sori.serving.conversation.arbitration import QUIET_S, Arbiter
from sori.serving.wake_claims import MqttWakeClaims

SCENARIOS = ("both heard", "the kitchen heard nothing", "the kitchen hears speech")


def heard(phrase: str, snr_db: float) -> WakeDetected:
    return WakeDetected(0, 2, phrase, 0, 0, 5.0, snr_db)


async def trials(url: str, count: int, window_ms: int, rng: random.Random) -> dict[str, list]:
    """Each scenario's decision times, in ms, over `count` trials."""
    arbiters: dict[str, Arbiter] = {}
    clients: dict[str, MqttWakeClaims] = {}
    for name in ("living", "kitchen"):
        run = secrets.token_hex(4)
        arbiters[name] = Arbiter(name, run, window_ms, lambda c, n=name: clients[n].publish(c))
        clients[name] = MqttWakeClaims(url, name, run, arbiters[name].heard, arbiters[name].present)
        clients[name].start()
        arbiters[name].start()  # to pass late, as the daemon's does
    living, kitchen = arbiters["living"], arbiters["kitchen"]
    try:
        end = time.monotonic() + 10
        while not (living.peers and kitchen.peers):
            if time.monotonic() > end:
                raise SystemExit(f"the two speakers never saw each other on {url}")
            await asyncio.sleep(0.02)
        took: dict[str, list] = {scenario: [] for scenario in SCENARIOS}
        for scenario in SCENARIOS:
            if scenario == "the kitchen hears speech":
                kitchen.hearing(SpeechStarted(0, 1, 0))
            for i in range(count):
                await asyncio.sleep(rng.uniform(0.5, 1.5))
                phrase = f"{scenario} {i}"  # each a new phrase: no trial counts another's
                started = time.perf_counter()
                if scenario == "both heard":
                    deciding = [
                        living.decide(heard(phrase, 18.0)),
                        kitchen.decide(heard(phrase, 9.0)),
                    ]
                    answered = await asyncio.gather(*deciding)
                    assert answered == [True, False], answered
                else:
                    assert await living.decide(heard(phrase, 18.0))
                took[scenario].append((time.perf_counter() - started) * 1000)
            kitchen.hearing(SpeechStopped(0, 1, 0))
            await asyncio.sleep(QUIET_S)
        return took
    finally:
        for client in clients.values():
            await asyncio.to_thread(client.close)


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "p50": round(float(np.percentile(ms, 50)), 1),
        "p90": round(float(np.percentile(ms, 90)), 1),
        "max": round(max(ms), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per scenario and broker")
    parser.add_argument("--window-ms", type=int, default=250, help="arbitrate_window_ms")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the pauses")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if mosquitto_exe() is None:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    result: dict = {"window_ms": args.window_ms, "trials": args.trials}
    with tempfile.TemporaryDirectory() as folder:
        for broker, nodelay in (("mosquitto as installed", False), ("set_tcp_nodelay true", True)):
            proc, url = start_mosquitto(Path(folder), nodelay)
            try:
                print(f"{broker}: {len(SCENARIOS)} x {args.trials} trials", file=sys.stderr)
                took = asyncio.run(trials(url, args.trials, args.window_ms, rng))
            finally:
                proc.terminate()
                proc.wait(timeout=10)
            result[broker] = {scenario: summary(ms) for scenario, ms in took.items()}
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(
            f"decided after the wake event, ms (window {args.window_ms} ms, {args.trials} trials)"
        )
        for broker in ("mosquitto as installed", "set_tcp_nodelay true"):
            for scenario, figures in result[broker].items():
                print(
                    f"  {broker:24} {scenario:28} "
                    + "  ".join(f"{k} {v}" for k, v in figures.items())
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
