"""Build understanding from the config: the home it describes and the preset matcher
over the configured sentence packs."""

from __future__ import annotations

from typing import Any

from sori.core.config import HomeConfig, IntentsConfig
from sori.core.home import Area, Device, Home
from sori.understanding.intents import Presets, load_presets
from sori.understanding.multi_command import shares_a_verb


def home_from_config(home: HomeConfig) -> Home:
    return Home(
        areas=tuple(Area(a.id, a.name, tuple(a.aliases)) for a in home.areas),
        devices=tuple(
            Device(
                id=d.id,
                name=d.name,
                domain=d.domain or d.id.split(".", 1)[0],
                area=d.area or None,
                aliases=tuple(d.aliases),
                device_class=d.device_class or None,
            )
            for d in home.devices
        ),
        speaker_area=home.area or None,
    )


def presets_from_config(intents: IntentsConfig, home: Home) -> Presets:
    return load_presets(
        intents.language,
        home,
        extra_packs=intents.packs,
        include_home_assistant=intents.home_assistant,
        fuzzy_threshold=intents.fuzzy_threshold if intents.fuzzy else None,
    )


class Swappable:
    """Preset understanding that a reload (SIGHUP) can replace while hearing holds on to it."""

    def __init__(self, presets: Any) -> None:
        self.current = presets

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current, name)

    def match(self, text: str) -> Any:
        # "거실이랑 안방 불 꺼줘" matched whole acts on 안방 alone: it is several commands,
        # which the turn carries out part by part (sori.understanding.multi_command) once this
        # says no.
        if shares_a_verb(self.current, text):
            return None
        return self.current.match(text)
