"""Build the acting stage from the config: the handlers some device uses, their routes,
and the action registry; and what a reload may not change about them."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from sori.acting.actions import ActionRegistry, LocalHandler, Route, Timers
from sori.acting.actions.base import Handler
from sori.acting.actions.media import MusicPlayer
from sori.core.clock import Clock
from sori.core.config import Config
from sori.core.files import state_folder
from sori.core.home import Home


def used_handlers(config: Config) -> set[str]:
    return {config.actions.default_handler} | {d.handler for d in config.home.devices if d.handler}


def build_handlers(config: Config) -> dict[str, Handler]:
    """Every handler some device uses (plus the dry run), connected lazily."""
    from sori.acting.actions.dry_run import DryRunHandler
    from sori.acting.actions.speaker import Mixer, SpeakerHandler

    sp = config.speaker
    handlers: dict[str, Handler] = {
        "dry_run": DryRunHandler(),
        "speaker": SpeakerHandler(
            Mixer(sp.mixer_device, sp.mixer_control, sp.amixer),
            sp.volume_step,
            config.intents.language,
        ),
    }
    used = used_handlers(config)
    timeout = config.actions.timeout_s
    if "mqtt" in used:
        from sori.acting.actions.mqtt import MqttHandler

        m = config.mqtt
        mqtt = MqttHandler(
            m.url, m.topic, m.qos, m.retain, m.client_id, m.username,
            os.environ.get(m.password_env, ""), timeout_s=timeout, protocol=m.protocol,
        )  # fmt: skip
        mqtt.start()
        handlers["mqtt"] = mqtt
    if "home_assistant" in used:
        from sori.acting.actions.home_assistant import HomeAssistantHandler

        ha = config.home_assistant
        handlers["home_assistant"] = HomeAssistantHandler(ha.url, ha.token_env, timeout)
    if "webhook" in used:
        from sori.acting.actions.webhook import WebhookHandler

        handlers["webhook"] = WebhookHandler(config.webhook.url, config.webhook.headers, timeout)
    if "shell" in used:
        from sori.acting.actions.shell import ShellHandler

        s = config.shell
        handlers["shell"] = ShellHandler(s.commands, s.allow, s.timeout_s)
    return handlers


def wall_clock(config: Config) -> Callable[[], datetime]:
    """The time now in [alarms] time_zone (the system's zone when empty)."""
    from sori.acting.actions.clock_times import zone

    tz = zone(config.alarms.time_zone)
    if tz is None:
        return lambda: datetime.now().astimezone()
    return lambda: datetime.now(tz)


def timers_file(config: Config) -> Path:
    """Where timers and alarms are kept: [alarms] state_file, else systemd's state
    directory, else ~/.local/state/sori."""
    if config.alarms.state_file:
        return Path(config.alarms.state_file).expanduser()
    return state_folder() / "timers.json"


def build_timers(config: Config) -> Timers:
    """Timers and alarms read back from disk; missed ones wait in `Timers.missed`."""
    a = config.alarms
    timers = Timers(path=timers_file(config), ring_max_s=a.ring_max_s, ring_every_s=a.ring_every_s)
    timers.load()
    return timers


def routes(config: Config) -> dict[str, Route]:
    return {
        d.id: Route(d.handler, d.topic, d.payload_on, d.payload_off, tuple(d.payload.items()))
        for d in config.home.devices
    }


def build_registry(
    config: Config, home: Home, timers: Timers, clock: Clock, handlers: dict[str, Handler],
    state: Any = None,
) -> ActionRegistry:  # fmt: skip
    """`state`: the state source a brightness step reads a light's level from."""
    return ActionRegistry(
        home,
        handlers,
        LocalHandler(timers, config.intents.language, wall_clock(config)),
        routes(config),
        config.actions.default_handler,
        config.actions.timeout_s,
        clock,
        MusicPlayer(
            config.actions.media_player,
            config.actions.music_content_id,
            config.actions.music_content_type,
            config.intents.language,
        ),
        state,
        config.conversation.brightness_step,
    )


HANDLER_SECTIONS = {
    "mqtt": "mqtt",
    "home_assistant": "home_assistant",
    "webhook": "webhook",
    "shell": "shell",
}
"""Handler name → the config section its connection is built from."""


def handler_changes(running: Config, new: Config) -> list[str]:
    """How `new` would change the handlers built from `running`, in words; empty if not."""
    old_used, new_used = used_handlers(running), used_handlers(new)
    changes = []
    if new.actions.default_handler != running.actions.default_handler:
        changes.append(
            f"actions.default_handler changes from {running.actions.default_handler!r} "
            f"to {new.actions.default_handler!r}"
        )
    if new_used - old_used:
        changes.append(f"handler {', '.join(sorted(new_used - old_used))} would be added")
    if old_used - new_used:
        changes.append(f"handler {', '.join(sorted(old_used - new_used))} would be removed")
    if new.actions.timeout_s != running.actions.timeout_s:
        changes.append("actions.timeout_s changes")
    music = ("media_player", "music_content_id", "music_content_type")
    if any(getattr(new.actions, k) != getattr(running.actions, k) for k in music):
        changes.append("actions.media_player or music_content_* change")
    for name in sorted(old_used & new_used):
        section = HANDLER_SECTIONS.get(name)
        if section and getattr(new, section) != getattr(running, section):
            changes.append(f"[{section}] changes")
    return changes
