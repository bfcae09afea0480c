"""Preset intents: Korean-first template matching onto Home Assistant's intent schema."""

from sori.intents.presets import IntentMatch, Presets, load_presets

__all__ = ["IntentMatch", "Presets", "load_presets"]
