"""The shipped model catalog: its schema, and the models issue 15 asks for."""

from __future__ import annotations

import re

import pytest

from sori.core.errors import ModelError
from sori.provisioning.models import load_catalog
from sori.provisioning.models.catalog import BOARDS, KINDS


def test_shipped_catalog_loads_and_covers_every_kind_and_board():
    entries = load_catalog()
    assert {e.kind for e in entries} == set(KINDS)
    for board in BOARDS:
        kinds = {e.kind for e in entries if board in e.boards}
        assert {"stt", "vad", "tts", "llm"} <= kinds, board


def test_required_models_are_listed():
    names = {e.name for e in load_catalog()}
    for wanted in ("vosk-model-small-ko", "sherpa-onnx-streaming-zipformer-korean",
                   "sherpa-onnx-kws", "silero_vad", "vits-mimic3-ko_KO-kss", "vits-mms-kor",
                   "en_US-lessac", "qwen2.5-0.5b-instruct", "qwen2.5-1.5b-instruct",
                   "gemma-3-1b-it"):  # fmt: skip
        assert any(n.startswith(wanted) for n in names), wanted


def test_checksums_are_real_or_marked_unverified():
    for entry in load_catalog():
        if entry.verified:
            assert re.fullmatch(r"[0-9a-f]{64}", entry.sha256), entry.name
        else:
            assert entry.sha256 == "", f"{entry.name}: an unverified checksum must be empty"


def test_use_keys_name_real_config_keys():
    from sori.core.config import Config

    for entry in load_catalog():
        for dotted in entry.config:
            node = Config()
            for part in dotted.split("."):
                assert hasattr(node, part), f"{entry.name}: {dotted}"
                node = getattr(node, part)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('kind = "asr"', "kind must be one of"),
        ('sha256 = "abc"', "sha256 must be 64"),
        ('boards = ["pi9"]', "boards must be among"),
        ('archive = "rar"', "archive must be one of"),
        ("verified = true", "verified = true needs a sha256"),
        ('urls = ["ftp://x"]', "urls must be http(s)"),
    ],
)
def test_bad_entries_are_refused_with_the_field(tmp_path, body, message):
    fields = {
        "name": '"m"', "kind": '"stt"', "languages": '["ko"]', "urls": '["https://x/m"]',
        "archive": '""', "size_mb": "1", "sha256": '""', "verified": "false",
        "license": '"MIT"', "memory_mb": "1", "memory_measured": "false", "boards": '["x86"]',
    }  # fmt: skip
    key = body.split(" = ")[0]
    fields[key] = body.split(" = ", 1)[1]
    path = tmp_path / "c.toml"
    path.write_text("[[model]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items()))
    with pytest.raises(ModelError, match=re.escape(message)):
        load_catalog(path)
