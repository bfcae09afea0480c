"""Several speakers in one home (`[wake] arbitrate`): the arbiter and its claims client are
built here and joined to the daemon, which then asks before it answers a wake phrase."""

from __future__ import annotations

import asyncio
import os
import secrets

from sori.core.config import Config
from sori.serving.conversation.arbitration import Arbiter
from sori.serving.daemon import Daemon
from sori.serving.wake_claims import MqttWakeClaims


def attach_arbitration(config: Config, daemon: Daemon) -> None:
    """Build the arbiter and hook it into `daemon`; nothing unless `[wake] arbitrate` is
    on and the wake phrase gates what the microphone hears (a file, as `sori replay`
    hears it, is heard by no other speaker)."""
    heard = daemon.conversation
    if not (config.wake.arbitrate and heard.gated and heard.live):
        return
    m = config.mqtt
    run = secrets.token_hex(4)
    window_ms = config.wake.arbitrate_window_ms
    arbiter = Arbiter(m.node_id, run, window_ms, lambda claim: claims.publish(claim))
    password = os.environ.get(m.password_env, "")
    claims = MqttWakeClaims(
        m.url, m.node_id, run, arbiter.heard, arbiter.present, m.username, password, m.client_id
    )

    async def close() -> None:
        await asyncio.to_thread(claims.close)

    daemon.arbitrate = arbiter.decide
    daemon.listeners.append(arbiter.hearing)
    daemon.arbitration = lambda: {
        "speaker": m.node_id, "window_ms": window_ms, "connected": claims.connected.is_set(),
        "peers": arbiter.peers,
    }  # fmt: skip
    daemon.starters += [arbiter.start, claims.start]
    daemon.closers.append(close)
