"""Preset intents: Korean-first template matching onto Home Assistant's intent schema."""

from sori.intents.compile import load_presets
from sori.intents.presets import IntentMatch, Presets

__all__ = ["IntentMatch", "Presets", "load_presets"]
