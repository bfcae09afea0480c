"""Maps a committed intent to the devices it targets and the handler of each.

The only stage that may change the world. Every device names its handler in the config
(`[[home.devices]] handler = "mqtt"`); the rest use `actions.default_handler`. Timers,
the time and the date are answered on the device. Queries ("거실 온도 몇 도야") never
reach a device handler: `sori.core.intent_kinds` says which intents may act.

Each committed intent has ONE deadline, `timeout_s` after the registry takes it
(`Command.deadline_ns`). MQTT and shell enforce it at their own layer (MQTT withdraws what
the broker has not acknowledged, shell kills the process group) and say how it ended; the
registry waits a short grace past it for that answer. Other handlers are cancelled at the
deadline. A hung handler costs one spoken error, never the next turn.

A brightness step ("거실 불 밝게 해 줘") becomes a level per light here, from the level the
state source reads (`actions.levels`), before any handler sees it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sori.acting.actions.base import Command, Handler, NotConfirmed, Result
from sori.acting.actions.levels import (
    DEFAULT_STEP_PCT,
    is_step,
    read_levels,
    said,
    step_percent,
    stepped,
)
from sori.acting.actions.local import LOCAL_INTENTS, LocalHandler
from sori.acting.actions.media import MusicPlayer
from sori.acting.actions.speaker import SPEAKER_INTENTS
from sori.core.clock import Clock, MonotonicClock
from sori.core.events import ActionFinished, IntentCommitted
from sori.core.home import Device, Home
from sori.core.intent_kinds import is_command

log = logging.getLogger(__name__)

DEVICE_INTENTS = frozenset(
    {
        "HassTurnOn",
        "HassTurnOff",
        "HassToggle",
        "HassLightSet",
        "HassClimateSetTemperature",
        "HassSetPosition",
        "HassSetVolume",
        "HassFanSetSpeed",
        "HassMediaPause",
        "HassMediaUnpause",
        "HassMediaNext",
        "HassMediaPrevious",
        "HassMediaSearchAndPlay",
        "HassVacuumStart",
        "HassVacuumReturnToBase",
    }
)
"""Intents that must reach a device; finding none is a failure the speaker reports."""

GRACE_S = 0.25
"""How long past the deadline the registry waits for a handler that enforces the deadline
itself (`enforces_deadline = True`) to report how its command ended (withdrawn, killed),
in seconds. Other handlers are cancelled at the deadline itself."""


@dataclass(frozen=True, slots=True)
class Route:
    """Where one device's commands go."""

    handler: str
    """Handler name; empty means the default handler."""
    topic: str = ""
    """MQTT topic override."""
    payload_on: str = ""
    """MQTT body of "turn on" override."""
    payload_off: str = ""
    """MQTT body of "turn off" override."""
    payload: tuple[tuple[str, Any], ...] = ()
    """MQTT body template (home.devices[].payload), as items; empty for Sori's own JSON."""


def resolve(home: Home, slots: Mapping[str, Any]) -> list[Device]:
    """The devices an intent's slots point at: by name, else by area and domain.

    With no area named, a domain means the speaker's room (else the home: "티비 켜" in a
    room without one); `name: all` with no area means every such device of the home
    ("모든 불 꺼", "에어컨 다 꺼"), as Home Assistant reads a domain target."""
    area_id = _area_id(home, slots.get("area"))
    if slots.get("area") and area_id is None:
        return []
    name = slots.get("name")
    if name and name != "all":  # "all" means every device of the domain in the area
        named = [d for d in home.devices if name in d.names or name == d.id]
        in_area = [d for d in named if area_id is None or d.area == area_id]
        return in_area or named[:1]
    domain = slots.get("domain")
    device_class = slots.get("device_class")
    if not domain and not area_id:
        return []
    if name == "all" and area_id is None:
        candidates = home.devices_in(None, domain or None)
    else:
        candidates = home.devices_in(area_id or home.speaker_area, domain or None)
    if not candidates and area_id is None:
        candidates = home.devices_in(None, domain or None)
    return [d for d in candidates if not device_class or d.device_class == device_class]


def on_speaker(intent: str, slots: Mapping[str, Any]) -> bool:
    """Volume and mute act on the speaker itself unless a media player is named ("티비
    볼륨 20" goes to the TV)."""
    if intent not in SPEAKER_INTENTS:
        return False
    return slots.get("domain") != "media_player" and slots.get("name") in (None, "all")


def _area_id(home: Home, value: Any) -> str | None:
    if not value:
        return None
    return next((a.id for a in home.areas if value in a.names or value == a.id), None)


class ActionRegistry:
    """Runs each committed intent through the right handlers, with a deadline each."""

    def __init__(
        self,
        home: Home,
        handlers: Mapping[str, Handler],
        local: LocalHandler,
        routes: Mapping[str, Route] | None = None,
        default_handler: str = "dry_run",
        timeout_s: float = 3.0,
        clock: Clock | None = None,
        player: MusicPlayer | None = None,
        state: Any = None,
        brightness_step: int = DEFAULT_STEP_PCT,
    ) -> None:
        self.state = state
        """Where a light's level is read for a brightness step (a state source: `covers`,
        `async read`); None: every light is taken to be at levels.DEFAULT_LEVEL_PCT."""
        self.brightness_step = brightness_step
        """How far "밝게" / "어둡게" moves a light, in percent."""
        self.clock = clock or MonotonicClock()
        self.player = player or MusicPlayer()
        self.handlers = dict(handlers)
        self.local = local
        self.default_handler = default_handler
        self.timeout_s = timeout_s
        self.home = home
        self.routes = dict(routes or {})

    def reload(self, home: Home, routes: Mapping[str, Route]) -> None:
        """Swap in a new home and device routes (SIGHUP); handlers stay connected."""
        self.home, self.routes = home, dict(routes)

    def commands(
        self, committed: IntentCommitted, deadline_ns: int = 0
    ) -> list[tuple[str, Command]]:
        """(handler name, command) pairs for an intent; empty when there is nothing to do.

        A query or a no-op gets no device handler at all, whatever its slots name: only the
        speaker's own handler answers (the time, a timer's state)."""
        base = Command(
            committed.intent, dict(committed.slots), None, "", committed.text,
            committed.utterance_id, deadline_ns,
        )  # fmt: skip
        if committed.intent == "HassNevermind" and not self.local.timers.ringing():
            return []  # "그만" stops a ringing alarm; otherwise it does nothing
        if committed.intent in LOCAL_INTENTS:
            return [("local", base)]
        if on_speaker(committed.intent, committed.slots):
            return [("speaker", base)]
        if not is_command(committed.intent):
            log.info("%s asks, it does not act: nothing is sent", committed.intent)
            return []
        targets, slots = resolve(self.home, committed.slots), base.slots
        if not targets and self.player.takes(committed.intent, committed.slots):
            player = self.player.device(self.home)  # "음악 틀어줘": the configured player
            targets = [player] if player else []
            slots = self.player.slots(committed.intent, slots)
        pairs = []
        for device in targets:
            route = self.routes.get(device.id, Route(""))
            name = route.handler or self.default_handler
            command = Command(
                base.intent, slots, device, route.topic, base.text, base.utterance_id,
                deadline_ns, route.payload_on, route.payload_off, dict(route.payload),
            )  # fmt: skip
            pairs.append((name, command))
        return pairs

    async def act(self, committed: IntentCommitted) -> list[ActionFinished]:
        """Carry out `committed`; one ActionFinished per target, failures included."""
        deadline_ns = time.monotonic_ns() + int(self.timeout_s * 1e9)
        pairs = self.commands(committed, deadline_ns)
        if not pairs:
            return self._no_target(committed)
        if is_step(committed.intent, committed.slots):
            return await self._step(committed, pairs, deadline_ns)
        return list(await asyncio.gather(*(self._one(n, c) for n, c in pairs)))

    async def _step(
        self, committed: IntentCommitted, pairs: list[tuple[str, Command]], deadline_ns: int
    ) -> list[ActionFinished]:
        """A brightness step: each light's level read, the step added, the level sent
        (`actions.levels`); a light that is off and asked to be darker is left alone. The
        reply names the level."""
        step = step_percent(committed.slots, self.brightness_step)
        devices = [c.device for _, c in pairs if c.device is not None]
        on_255 = frozenset(
            d.id for d in devices if "{brightness_255}" in repr(self.routes.get(d.id, Route("")))
        )
        # reading may take at most half the time the command has
        left_s = max(0.0, (deadline_ns - time.monotonic_ns()) / 2e9)
        levels = await read_levels(self.state, devices, left_s, on_255)
        runs, kept, after = [], [], []
        for name, command in pairs:
            level = stepped(levels.get(command.entity_id), step)
            after.append(level)
            if level is None:  # off, and asked to be darker: stays off
                kept.append(
                    ActionFinished(
                        self.clock.now_ns(), committed.utterance_id, committed.intent, name,
                        command.entity_id, ok=True, detail="off; left off",
                    )
                )  # fmt: skip
                continue
            slots = {k: v for k, v in command.slots.items() if k != "amount"}
            slots.update(brightness=level, brightness_step=step)
            runs.append(self._one(name, replace(command, slots=slots)))
        finished = [*kept, *await asyncio.gather(*runs)]
        if finished and all(f.ok for f in finished) and not any(f.speech for f in finished):
            names = [c.device.name if c.device else c.entity_id for _, c in pairs]
            reply = said(self.local.language, names, after, step)
            finished[0] = replace(finished[0], speech=reply)
        return finished

    def _no_target(self, committed: IntentCommitted) -> list[ActionFinished]:
        """A failure that says why, for a command that needed a target and found none (no
        player configured, no device matched); nothing for one that needs no target."""
        speech = ""
        if self.player.takes(committed.intent, committed.slots):
            detail, speech = self.player.missing()
            log.warning("%s: %s", committed.intent, detail)
        elif committed.intent in DEVICE_INTENTS:
            detail = f"no device matches {dict(committed.slots)}"
        else:
            return []
        return [
            ActionFinished(
                self.clock.now_ns(),
                committed.utterance_id,
                committed.intent,
                "none",
                ok=False,
                detail=detail,
                speech=speech,
            )
        ]

    async def _one(self, name: str, command: Command) -> ActionFinished:
        handler = self.local if name == "local" else self.handlers.get(name)
        started = self.clock.now_ns()
        ok, unconfirmed, detail, speech = True, False, "", ""
        try:
            if handler is None:
                raise LookupError(f"handler {name!r} is not configured")
            grace_s = GRACE_S if getattr(handler, "enforces_deadline", False) else 0.0
            wait_s = command.remaining_s(self.timeout_s) + grace_s
            result: Result = await asyncio.wait_for(handler.handle(command), wait_s)
            detail, speech = result.detail, result.speech
        except TimeoutError as exc:
            ok, detail = False, f"{name} took over {self.timeout_s:g} s"
            if str(exc):
                detail += f": {exc}"
        except NotConfirmed as exc:
            ok, unconfirmed, detail = False, True, str(exc)
        except Exception as exc:  # a handler's failure is reported, never fatal
            ok, detail = False, str(exc) or type(exc).__name__
        if not ok:
            log.warning("%s failed for %s: %s", name, command.entity_id or command.intent, detail)
        finished = self.clock.now_ns()
        return ActionFinished(
            t_ns=finished,
            utterance_id=command.utterance_id,
            intent=command.intent,
            handler=name,
            target=command.entity_id,
            ok=ok,
            detail=detail,
            speech=speech,
            elapsed_ns=finished - started,
            unconfirmed=unconfirmed,
        )

    async def close(self) -> None:
        for handler in [*self.handlers.values(), self.local]:
            try:
                await handler.close()
            except Exception as exc:  # closing must go on for the others
                log.warning("closing %s: %s", handler.name, exc)
