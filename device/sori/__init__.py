"""Sori (소리): an on-device voice assistant runtime, Korean first.

The public surface: configuration, the home, preset understanding, the event types
that flow between stages, and the error tree. Everything else is internal.
"""

from sori.core.config import Config, load_config
from sori.core.errors import (
    AudioError,
    BackendError,
    BundleError,
    ConfigError,
    DependencyError,
    ModelError,
    PackError,
    SoriError,
)
from sori.core.home import Area, Device, Home
from sori.understanding.intents import IntentMatch, Presets, load_presets

__version__ = "0.1.0"

__all__ = [
    "Area",
    "AudioError",
    "BackendError",
    "BundleError",
    "Config",
    "ConfigError",
    "DependencyError",
    "Device",
    "Home",
    "IntentMatch",
    "ModelError",
    "PackError",
    "Presets",
    "SoriError",
    "__version__",
    "load_config",
    "load_presets",
]
