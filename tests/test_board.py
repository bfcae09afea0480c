"""Board profiles: detection from device-tree and cpuinfo strings, and how a profile fills
only the keys left at their defaults."""

from __future__ import annotations

import pytest

from sori.core.config import Config, parse_config
from sori.provisioning.board import PROFILES, apply_board, detect_board

A76 = "processor\t: 0\nCPU part\t: 0xd0b\n"
A55_A76 = "processor\t: 0\nCPU part\t: 0xd05\nprocessor\t: 4\nCPU part\t: 0xd0b\n"


@pytest.mark.parametrize(
    ("model", "cpuinfo", "machine", "board"),
    [
        ("Raspberry Pi 5 Model B Rev 1.0\x00", A76, "aarch64", "pi5"),
        ("Raspberry Pi 4 Model B Rev 1.4\x00", "", "aarch64", "pi4"),
        ("NVIDIA Jetson Orin Nano Developer Kit\x00", "", "aarch64", "jetson-orin-nano"),
        ("Radxa ROCK 5B\x00", A55_A76, "aarch64", "rk3588"),
        ("Rockchip RK3588 EVB\x00", "", "aarch64", "rk3588"),
        ("", A55_A76, "aarch64", "rk3588"),
        ("", A76, "aarch64", "pi5"),
        ("", "flags\t: fpu avx2\n", "x86_64", "x86"),
        ("Some Unknown Board\x00", "", "aarch64", "pi4"),
    ],
)
def test_detect_board(model, cpuinfo, machine, board):
    assert detect_board(model, cpuinfo, machine) == board


def test_x86_profile_is_the_defaults():
    assert apply_board(Config(), detected="x86") == Config()


def test_profile_fills_defaults_and_keeps_what_is_set():
    config = parse_config({"board": {"profile": "jetson-orin-nano"},
                           "stt": {"sherpa": {"threads": 6}}})  # fmt: skip
    applied = apply_board(config)
    assert applied.stt.sherpa.provider == "cuda"
    assert applied.stt.sherpa.threads == 6  # set by hand: kept
    assert applied.llm.n_ctx == PROFILES["jetson-orin-nano"].llm_ctx


def test_auto_uses_the_detected_board():
    applied = apply_board(Config(), detected="pi4")
    assert applied.stt.vosk.chunk_ms == 100 and applied.llm.threads == 3


def test_unknown_profile_is_refused():
    with pytest.raises(Exception, match="board.profile"):
        parse_config({"board": {"profile": "pi9"}})
