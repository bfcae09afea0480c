"""Sori in Home Assistant over MQTT discovery (`[mqtt] discovery = true`): the presence
client is built here and joined to the daemon: every heard command becomes the "last
command" state, a spoken volume or mute change ("볼륨 50으로") the volume and mute states,
and HA's mute and volume commands act on the speaker through the registry like a spoken
"음소거" or "볼륨 30".
"""

from __future__ import annotations

import asyncio
import logging
import os

from sori.acting.actions import ActionRegistry
from sori.acting.actions.discovery import MqttPresence
from sori.acting.actions.speaker import speaker_states
from sori.core.config import Config
from sori.core.errors import SoriError
from sori.core.events import (
    ActionFinished,
    Event,
    IntentCommitted,
    TurnFinished,
    TurnRouted,
    WakeDetected,
    WakeYielded,
)
from sori.serving.daemon import Daemon

log = logging.getLogger(__name__)


def attach_presence(config: Config, daemon: Daemon, registry: ActionRegistry) -> None:
    """Build the presence client and hook it into `daemon`; nothing when discovery is off."""
    m = config.mqtt
    if not m.discovery:
        return
    loop: asyncio.AbstractEventLoop | None = None
    changed: set[str] = set()
    """The speaker's states ("mute", "volume") published since start, newer than what the
    start's read of the mixer saw."""

    def speaker_state(what: str, value: str) -> None:
        changed.add(what)
        presence.state(what, value)

    async def act(what: str, payload: str) -> None:
        if what == "mute":
            muted = payload.upper() == "ON"
            intent, slots, state = (
                "HassMediaPlayerMute" if muted else "HassMediaPlayerUnmute", {},
                "ON" if muted else "OFF",
            )  # fmt: skip
        elif what == "volume":
            level = max(0, min(100, round(float(payload))))
            intent, slots, state = "HassSetVolume", {"volume_level": level}, str(level)
        else:
            return
        done = await registry.act(IntentCommitted(0, 0, f"(Home Assistant) {what}", intent, slots))
        if done and all(f.ok for f in done):
            speaker_state(what, state)

    def on_command(what: str, payload: str) -> None:  # paho's thread
        if loop is not None:
            asyncio.run_coroutine_threadsafe(act(what, payload), loop)

    presence = MqttPresence(
        m.url, m.node_id, m.discovery_prefix, "Sori", m.username,
        os.environ.get(m.password_env, ""), on_command, m.discovery_format == "entity",
        m.client_id,
    )  # fmt: skip

    quiet: asyncio.TimerHandle | None = None

    def listening(on: bool) -> None:
        """The "listening" sensor: on from the wake phrase until the turn ends (or the
        listening window closes without one)."""
        nonlocal quiet
        if quiet is not None:
            quiet.cancel()
            quiet = None
        presence.state("listening", "ON" if on else "OFF")
        if on and loop is not None:
            quiet = loop.call_later(config.wake.listen_s, listening, False)

    def heard(event: Event) -> None:
        if isinstance(event, WakeDetected):
            listening(True)
        elif isinstance(event, WakeYielded):  # another speaker listens
            listening(False)
        elif isinstance(event, TurnFinished):
            if event.response:
                presence.state("last_reply", event.response)
            if quiet is not None:
                listening(False)
        elif isinstance(event, (IntentCommitted, TurnRouted)) and event.text:
            presence.state("last_command", event.text)
        elif isinstance(event, ActionFinished) and event.handler == "speaker" and event.ok:
            for what, value in speaker_states(event.detail).items():  # "볼륨 50으로"
                speaker_state(what, value)

    async def show_the_mixer() -> None:
        """The speaker's mute and volume as they are at start, so Home Assistant shows
        them rather than "unknown" until the first change; not one a change published
        while the mixer was being read (its reading may be older)."""
        speaker = registry.handlers.get("speaker")
        mixer = getattr(speaker, "mixer", None)
        if mixer is None:
            return
        try:
            volume, muted = await mixer.read()
        except SoriError as exc:
            log.info("MQTT discovery: the speaker's mixer cannot be read: %s", exc)
            return
        for what, value in (("mute", "ON" if muted else "OFF"), ("volume", str(volume))):
            if what not in changed:
                presence.state(what, value)

    reading: asyncio.Task | None = None

    def start() -> None:
        nonlocal loop, reading
        loop = asyncio.get_running_loop()
        presence.start()
        presence.state("listening", "OFF")
        reading = loop.create_task(show_the_mixer())

    async def close() -> None:
        if reading is not None:
            reading.cancel()
        await asyncio.to_thread(presence.close)

    daemon.listeners.append(heard)
    daemon.starters.append(start)
    daemon.closers.append(close)
