"""Preset intents: Korean-first template matching onto Home Assistant's intent schema."""

from sori.understanding.intents.compile import load_presets
from sori.understanding.intents.presets import IntentMatch, Presets

__all__ = ["IntentMatch", "Presets", "load_presets"]
