from __future__ import annotations

from pathlib import Path

import pytest

from sori.assemble.understanding import home_from_config
from sori.core.config import load_config
from sori.understanding.intents import Presets, load_presets

EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "device" / "sori.example.toml"


@pytest.fixture(scope="session")
def presets() -> Presets:
    """Our Korean pack plus Home Assistant's, for the example home (speaker in 거실)."""
    return load_presets("ko", home_from_config(load_config(str(EXAMPLE_CONFIG)).home))


@pytest.fixture
def understand(presets):
    def run(text: str) -> tuple[str | None, dict]:
        found = presets.match(text)
        return (found.intent, found.slots) if found else (None, {})

    return run
