"""Board profiles: per-board threads, chunk sizes, onnxruntime provider and suggested
models, chosen by `[board] profile` or detected from /proc/device-tree/model and the CPU.

A profile only fills keys the config leaves at their defaults, so anything set by hand
wins. Figures behind the choices are unmeasured unless the README's board table says
otherwise.
"""

from __future__ import annotations

import dataclasses
import logging
import platform
from dataclasses import dataclass, field
from pathlib import Path

from sori.core.config import Config

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BoardProfile:
    name: str
    """Profile name, as in `[board] profile`."""
    stt_threads: int
    """sherpa-onnx recognizer threads (stt.sherpa.threads)."""
    provider: str
    """onnxruntime execution provider for sherpa-onnx (stt.sherpa.provider)."""
    vosk_chunk_ms: int
    """Audio vosk evaluates at once, in milliseconds (stt.vosk.chunk_ms)."""
    tts_threads: int
    """VITS synthesis threads (tts.vits.threads)."""
    llm_threads: int
    """llama.cpp generation threads (llm.threads); 0 = cores minus one, at most 4."""
    llm_ctx: int
    """llama.cpp context window in tokens (llm.n_ctx)."""
    models: list[str] = field(default_factory=list)
    """Suggested catalog models (`sori models fetch`)."""
    llama_cmake: str = ""
    """CMAKE_ARGS for building llama-cpp-python on this board."""
    denoise_engine: str = "deepfilter"
    """The denoiser `audio.denoise = "auto"` runs (audio.denoise_engine): DeepFilterNet3
    where a core spares 0.05-0.1 of itself for it, RNNoise (about half its CPU, and close
    to it in steady noise) on the Pi (docs/hearing.md, "Denoising")."""


PROFILES = {
    "x86": BoardProfile("x86", 2, "cpu", 60, 1, 0, 2048,
                        ["silero_vad.onnx", "qwen2.5-1.5b-instruct-q4_k_m.gguf"]),
    "pi4": BoardProfile("pi4", 2, "cpu", 100, 1, 3, 1024,
                        ["vits-mimic3-ko_KO-kss_low", "qwen2.5-0.5b-instruct-q4_k_m.gguf"],
                        "-DGGML_NATIVE=ON", denoise_engine="rnnoise"),
    "pi5": BoardProfile("pi5", 3, "cpu", 60, 2, 3, 2048,
                        ["sherpa-onnx-streaming-zipformer-korean-2024-06-16",
                         "vits-mimic3-ko_KO-kss_low", "qwen2.5-0.5b-instruct-q4_k_m.gguf"],
                        "-DGGML_NATIVE=ON", denoise_engine="rnnoise"),
    "rk3588": BoardProfile("rk3588", 4, "cpu", 60, 2, 4, 2048,
                           ["sherpa-onnx-streaming-zipformer-korean-2024-06-16",
                            "vits-mimic3-ko_KO-kss_low", "qwen2.5-1.5b-instruct-q4_k_m.gguf"],
                           "-DGGML_NATIVE=ON"),
    "jetson-orin-nano": BoardProfile(
        "jetson-orin-nano", 2, "cuda", 60, 2, 4, 4096,
        ["sherpa-onnx-streaming-zipformer-korean-2024-06-16", "vits-mimic3-ko_KO-kss_low",
         "qwen2.5-1.5b-instruct-q4_k_m.gguf"],
        "-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=87",
    ),
}  # fmt: skip
"""The profiles; x86 holds the config's own defaults, so it changes nothing."""


def detect_board(device_tree_model: str, cpuinfo: str, machine: str) -> str:
    """The profile for a board, from /proc/device-tree/model, /proc/cpuinfo and the
    machine name (platform.machine())."""
    model = device_tree_model.strip("\x00 \n").lower()
    if "raspberry pi 5" in model:
        return "pi5"
    if "raspberry pi 4" in model or "raspberry pi compute module 4" in model:
        return "pi4"
    if "jetson" in model and "orin" in model:
        return "jetson-orin-nano"
    if "rk3588" in model or "rock 5" in model or "orange pi 5" in model:
        return "rk3588"
    if machine in ("aarch64", "arm64"):
        # No device tree name we know: pick by cores (the RK3588's Cortex-A76, part 0xd0b,
        # is also the Pi 5's; four A76 plus A55 cores (0xd05) is an RK3588).
        parts = {line.split(":")[1].strip() for line in cpuinfo.splitlines()
                 if line.startswith("CPU part")}  # fmt: skip
        if {"0xd0b", "0xd05"} <= parts:
            return "rk3588"
        if "0xd0b" in parts:
            return "pi5"
        if "0xd08" in parts:  # Cortex-A72
            return "pi4"
        if "0xd42" in parts:  # Cortex-A78AE: Jetson Orin
            return "jetson-orin-nano"
        return "pi4"  # the most careful choice for an unknown ARM board
    return "x86"


def this_board() -> str:
    def read(path: str) -> str:
        try:
            return Path(path).read_text(errors="replace")
        except OSError:
            return ""

    return detect_board(read("/proc/device-tree/model"), read("/proc/cpuinfo"),
                        platform.machine())  # fmt: skip


def apply_board(config: Config, detected: str | None = None) -> Config:
    """`config` with the profile's values in the keys still at their defaults."""
    name = config.board.profile
    if name == "auto":
        name = detected or this_board()
    profile = PROFILES[name]
    defaults = Config()

    def pick(current: object, default: object, wanted: object) -> object:
        return wanted if current == default else current

    sherpa = dataclasses.replace(
        config.stt.sherpa,
        threads=pick(config.stt.sherpa.threads, defaults.stt.sherpa.threads, profile.stt_threads),
        provider=pick(config.stt.sherpa.provider, defaults.stt.sherpa.provider, profile.provider),
    )
    vosk = dataclasses.replace(
        config.stt.vosk,
        chunk_ms=pick(config.stt.vosk.chunk_ms, defaults.stt.vosk.chunk_ms, profile.vosk_chunk_ms),
    )
    vits = dataclasses.replace(
        config.tts.vits,
        threads=pick(config.tts.vits.threads, defaults.tts.vits.threads, profile.tts_threads),
    )
    llm = dataclasses.replace(
        config.llm,
        threads=pick(config.llm.threads, defaults.llm.threads, profile.llm_threads),
        n_ctx=pick(config.llm.n_ctx, defaults.llm.n_ctx, profile.llm_ctx),
    )
    audio = dataclasses.replace(
        config.audio,
        denoise_engine=pick(
            config.audio.denoise_engine, defaults.audio.denoise_engine, profile.denoise_engine
        ),
    )
    if name != config.board.profile:
        log.info("board profile: %s (detected)", name)
    return dataclasses.replace(
        config,
        audio=audio,
        stt=dataclasses.replace(config.stt, sherpa=sherpa, vosk=vosk),
        tts=dataclasses.replace(config.tts, vits=vits),
        llm=llm,
    )
