"""`sori test --act`: what is heard goes on through the daemon, built from the manifest's
config by sori.assemble like `sori run`'s, so its handlers really act (an MQTT broker, Home
Assistant, webhooks) and its tiers really answer. Each utterance's record gains the
actions taken and the tier that answered; `no_action` and `tier` are judged on them.

The hearing events are replayed on the simulated clock first (their latencies are the
pipeline's, as without --act), then handed to the daemon as its microphone would hand
them; the daemon's replies go to a WAV file in a temporary folder.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sori.acting.mqtt_connection import client_id_for
from sori.assemble.daemon import build_daemon
from sori.core.events import Event, UtteranceHeard
from sori.testing.harness.manifest import Manifest
from sori.testing.harness.runner import PcmSource, Runner, Understanding, manifest_home
from sori.testing.replaying import replay_events, summarize

log = logging.getLogger(__name__)

CLOSE_S = 5.0
"""How long the daemon may take to stop when the run is over, in seconds."""


class ActingRunner(Runner):
    """A Runner whose utterances are acted on by a real daemon (one per worker)."""

    def __init__(self, manifest: Manifest, understanding: Understanding | None = None) -> None:
        super().__init__(manifest, understanding)
        config = self.understanding.config
        home = manifest_home(manifest, config)
        # each worker is its own MQTT client: a shared client id makes the broker drop one
        # connection whenever the other connects
        test_id = client_id_for(config.mqtt.client_id, f"test-{os.getpid()}")
        mqtt = dataclasses.replace(config.mqtt, client_id=test_id)
        config = dataclasses.replace(config, mqtt=mqtt)
        self._folder = tempfile.TemporaryDirectory(prefix="sori-test-act-")
        replies = Path(self._folder.name) / "replies.wav"
        self.loop = asyncio.new_event_loop()
        self.daemon = build_daemon(
            config, home, str(replies), lambda: (config, home), warm_presets=False
        )

    def hear(self, source: PcmSource) -> list[dict[str, Any]]:
        config = self.understanding.config
        events, origin = replay_events(source, config, self.recognizer, self.daemon.understanding)
        records = summarize(source.name, events, origin)
        uids = [e.utterance_id for e in events if isinstance(e, UtteranceHeard)]
        told = self.loop.run_until_complete(self._act(events))
        for uid, record in zip(uids, records, strict=True):
            turns = [p for p in told if p.get("utterance_id") == uid]
            record["tier"] = next((p["tier"] for p in turns if p["type"] == "TurnFinished"), "none")
            record["actions"] = [
                {k: p[k] for k in ("handler", "target", "ok", "unconfirmed", "detail")}
                for p in turns
                if p["type"] == "ActionFinished"
            ]
        return records

    async def _act(self, events: list[Event]) -> list[dict[str, Any]]:
        queue = self.daemon.subscribe(max_events=100_000)
        try:
            await self.daemon.listen(_aiter(events))
        finally:
            self.daemon.unsubscribe(queue)
        told = []
        while not queue.empty():
            told.append(queue.get_nowait())
        return told

    def close(self) -> None:
        if self.loop.is_closed():
            return
        unfinished = self.loop.run_until_complete(self.daemon.close(CLOSE_S))
        if unfinished:
            log.warning("daemon still running at the end of the run: %s", ", ".join(unfinished))
        self.loop.close()
        self._folder.cleanup()


async def _aiter(events: list[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event
