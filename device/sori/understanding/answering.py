"""Questions answered from the home's state: which devices can answer, what they read,
and the spoken answer with the value ("거실은 지금 23.5도예요").

Turn logic (floor 3): the daemon asks `Answerer.answer` for every question intent the
speaker does not answer itself (the time, the date and timers are the local handler's).
Nothing here can change a device: a `StateSource` only reads. Without a source, without
a device that can answer, or without a value, the reply says so in one sentence.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from sori.acting.actions.local import LOCAL_INTENTS
from sori.acting.state import Reading, StateSource, answering_devices
from sori.core.errors import BackendError
from sori.core.home import Device, Home
from sori.core.intent_kinds import QUERY, kind_of
from sori.understanding.intents import answers

log = logging.getLogger(__name__)

MAX_DEVICES = 3
"""At most this many devices are read and spoken about for one question."""


def answers_from_state(intent: str) -> bool:
    """True for the questions answered from state (not the time, date or timers)."""
    return kind_of(intent) == QUERY and intent not in LOCAL_INTENTS


class Answerer:
    """Answers question intents from a state source (or says honestly that it cannot)."""

    def __init__(self, source: StateSource | None, home: Home, language: str = "ko") -> None:
        self.source = source
        self.home = home
        """Swapped on reload, with the registry's."""
        self.language = language

    def answers(self, intent: str) -> bool:
        return answers_from_state(intent)

    async def answer(self, intent: str, slots: Mapping[str, Any]) -> str:
        """The spoken answer, with the value read; one honest sentence when there is none."""
        slots = dict(slots)
        lang = self.language
        what = answers.subject(lang, intent, slots)
        devices = answering_devices(self.home, intent, slots)
        if not devices:
            if intent == "HassGetWeather":
                return answers.no_source(lang, what)
            return answers.no_device(lang, what)
        covered = [d for d in devices if self.source is not None and self.source.covers(d)]
        if not covered:
            return answers.no_source(lang, what)
        readings = await self._read(covered[:MAX_DEVICES])
        if all(isinstance(r, BackendError) for r in readings.values()):
            return answers.unreachable(lang, what)
        found = {d: r for d, r in readings.items() if isinstance(r, Reading)}
        if intent == "HassClimateGetTemperature":
            return self._temperature(slots, found, what)
        if intent == "HassGetWeather":
            reading = next(iter(found.values()), None)
            if reading is None:
                return answers.no_value(lang, what)
            return answers.weather(lang, reading.state, reading.number("temperature"))
        if not found:
            return answers.no_value(lang, what)
        said = [self._state(device, reading, slots) for device, reading in found.items()]
        return " ".join(s if s.endswith(".") else s + "." for s in said)

    async def _read(self, devices: list[Device]) -> dict[Device, Reading | BackendError | None]:
        assert self.source is not None
        results = await asyncio.gather(
            *(self.source.read(d) for d in devices), return_exceptions=True
        )
        out: dict[Device, Reading | BackendError | None] = {}
        for device, result in zip(devices, results, strict=True):
            if isinstance(result, BaseException):
                log.warning("reading %s failed: %s", device.id, result)
                result = result if isinstance(result, BackendError) else BackendError(str(result))
            out[device] = result
        return out

    def _temperature(self, slots: dict, found: Mapping[Device, Reading], what: str) -> str:
        for device, reading in found.items():
            keys = ("current_temperature",) if device.domain == "climate" else ("temperature",)
            degrees = reading.number(*keys)
            if degrees is not None:
                area = self.home.area(device.area)
                place = slots.get("area") or (area.name if area else "")
                return answers.temperature(self.language, str(place), degrees)
        return answers.no_value(self.language, what)

    def _state(self, device: Device, reading: Reading, slots: Mapping[str, Any]) -> str:
        lang = self.language
        if device.domain == "sensor":
            value = reading.number()
            if value is not None:
                unit = str(reading.attributes.get("unit_of_measurement", ""))
                say = answers.value_en if lang == "en" else answers.value_ko
                return say(device.name, value, unit)
        say = answers.state_en if lang == "en" else answers.state_ko
        said = say(device.name, device.domain, device.device_class, reading.state)
        asked = slots.get("state")
        if asked:
            said = answers.yes_no(lang, str(asked), reading.state) + said
        return said

    async def close(self) -> None:
        if self.source is not None:
            await self.source.close()
