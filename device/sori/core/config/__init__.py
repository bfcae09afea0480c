"""Configuration: one TOML file, parsed and validated once into frozen dataclasses.

Lookup order: `--config`, then `$SORI_CONFIG`, then `./sori.toml`,
`~/.config/sori/sori.toml`, `/etc/sori/sori.toml`. No file at all means the embedded
defaults. Every error names the offending key (`stt.vosk.model`) and what is wrong.

Each section is a dataclass; a field's type is its schema. To add a key, add a field
with a default and a docstring in `sections.py`; `schema.build` does the checking.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sori.core.config.schema import build, check_depth, long_number_error
from sori.core.config.sections import (
    ActionsConfig,
    AlarmsConfig,
    AreaConfig,
    AudioConfig,
    BoardConfig,
    CommitConfig,
    ConversationConfig,
    DaemonConfig,
    DeviceConfig,
    EdgeConfig,
    EdgeEndpointConfig,
    EspeakTtsConfig,
    HomeAssistantConfig,
    HomeConfig,
    HttpConfig,
    IntentsConfig,
    LlmConfig,
    MqttConfig,
    PhrasesConfig,
    PiperTtsConfig,
    RouterConfig,
    ShellConfig,
    SherpaConfig,
    SpeakerConfig,
    StateConfig,
    SttConfig,
    TtsConfig,
    VadConfig,
    VitsTtsConfig,
    VoskConfig,
    WakeConfig,
    WebhookConfig,
    WyomingConfig,
)
from sori.core.errors import ConfigError
from sori.core.home import MAX_NAME_CHARS, unsafe_character
from sori.core.shipped import shipped_path

__all__ = [
    "ActionsConfig",
    "AlarmsConfig",
    "AreaConfig",
    "AudioConfig",
    "CommitConfig",
    "Config",
    "BoardConfig",
    "ConversationConfig",
    "DaemonConfig",
    "DeviceConfig",
    "EXAMPLE_CONFIG",
    "EdgeConfig",
    "EdgeEndpointConfig",
    "EspeakTtsConfig",
    "HomeAssistantConfig",
    "HomeConfig",
    "HttpConfig",
    "IntentsConfig",
    "LlmConfig",
    "MqttConfig",
    "PhrasesConfig",
    "PiperTtsConfig",
    "RouterConfig",
    "SEARCH_PATHS",
    "ShellConfig",
    "SherpaConfig",
    "SpeakerConfig",
    "StateConfig",
    "SttConfig",
    "TtsConfig",
    "VadConfig",
    "VitsTtsConfig",
    "VoskConfig",
    "WakeConfig",
    "WebhookConfig",
    "WyomingConfig",
    "FIRST_RUN_NOTE",
    "check_home",
    "find_config",
    "first_run_config",
    "load_config",
    "parse_config",
    "parse_toml",
]


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
    llm: LlmConfig = field(default_factory=LlmConfig)
    """The local language model (llama.cpp)."""
    router: RouterConfig = field(default_factory=RouterConfig)
    """Which tier answers a turn: budgets, thresholds, escalation rules."""
    edge: EdgeConfig = field(default_factory=EdgeConfig)
    """Edge servers (vLLM, OpenAI-compatible) for questions that need reasoning."""
    tts: TtsConfig = field(default_factory=TtsConfig)
    """Text-to-speech voices and the fixed-reply cache."""
    actions: ActionsConfig = field(default_factory=ActionsConfig)
    """How intents act: the default handler and deadlines."""
    mqtt: MqttConfig = field(default_factory=MqttConfig)
    """MQTT broker for the "mqtt" handler."""
    home_assistant: HomeAssistantConfig = field(default_factory=HomeAssistantConfig)
    """Home Assistant REST API for the "home_assistant" handler."""
    state: StateConfig = field(default_factory=StateConfig)
    """Where questions are answered from: MQTT state topics or Home Assistant's states."""
    webhook: WebhookConfig = field(default_factory=WebhookConfig)
    """HTTP webhook for the "webhook" handler."""
    shell: ShellConfig = field(default_factory=ShellConfig)
    """Allow-listed programs for the "shell" handler."""
    http: HttpConfig = field(default_factory=HttpConfig)
    """The local HTTP API of `sori run`."""
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    """The `sori run` service: barge-in, logging."""
    speaker: SpeakerConfig = field(default_factory=SpeakerConfig)
    """The speaker's own volume and mute (ALSA mixer)."""
    alarms: AlarmsConfig = field(default_factory=AlarmsConfig)
    """Timers and alarms: time zone, where they are kept, how long they ring."""
    conversation: ConversationConfig = field(default_factory=ConversationConfig)
    """Follow-ups: how long a command stays the context of the next turn."""
    board: BoardConfig = field(default_factory=BoardConfig)
    """Board profile: threads, chunk sizes and providers for this board
    (`sori.provisioning.board`)."""
    wyoming: WyomingConfig = field(default_factory=WyomingConfig)
    """The Wyoming server for Home Assistant: address and discovery."""
    wake: WakeConfig = field(default_factory=WakeConfig)
    """Wake phrase, listening and follow-up windows, mute."""
    source: str = ""
    """Path of the file this config came from; empty for the embedded defaults."""


# The commented example shipped with the package (device/sori.example.toml in a checkout).
EXAMPLE_CONFIG = shipped_path("sori.example.toml")

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


FIRST_RUN_NOTE = "no sori.toml; using the example home, run `sori setup`"
"""What a command says (once, on stderr) when it runs on `first_run_config`."""


def first_run_config() -> Config:
    """The config of a fresh install, where no file is found: the example's home (so "거실
    불 켜줘" means something at once) with every other key at its default, and actions in the
    dry run whatever the example says, so nothing in the real home moves."""
    example = parse_toml(EXAMPLE_CONFIG.read_text(encoding="utf-8"), str(EXAMPLE_CONFIG))
    home = {"home": example.get("home", {}), "actions": {"default_handler": "dry_run"}}
    return parse_config(home, source="")


def load_config(explicit: str | None = None) -> Config:
    """Find, read and validate the config."""
    path = find_config(explicit)
    if path is None:
        return Config()
    try:
        text = path.read_text(encoding="utf-8-sig")  # "-sig": a UTF-8 BOM is dropped
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read as UTF-8 text: {exc}") from None
    return parse_config(parse_toml(text, str(path)), source=str(path))


_TOML_HINTS = (
    ("invalid statement", "each line is `key = value`, `[section]` or `[[list]]`"),
    ("after a key", "each line is `key = value`, `[section]` or `[[list]]`"),
    ("invalid value", 'strings need quotes (key = "text"); true/false are lower case'),
    ("unclosed", "close the bracket or quote opened on this line"),
    ("unterminated", 'close the quote (""" for text over several lines)'),
    ("cannot overwrite", "a key or section appears twice; keep one"),
    ("cannot declare", "a key or section appears twice; keep one"),
    ("expected", "check the punctuation around this point"),
)


def parse_toml(text: str, source: str = "") -> dict[str, Any]:
    """TOML text as a dict, or a ConfigError with the file, line and a hint."""
    where = source or "config"
    text = text.removeprefix("\ufeff")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"\(at line (\d+), column (\d+)\)", message)
        reason = message[: found.start()].strip() if found else message
        line = f":{found.group(1)}" if found else ""
        column = f" (column {found.group(2)})" if found else ""
        hint = next((h for k, h in _TOML_HINTS if k in reason.lower()), "see sori.example.toml")
        raise ConfigError(f"{where}{line}: not valid TOML{column}: {reason}; {hint}") from None
    except RecursionError:
        raise ConfigError(
            f"{where}: tables or lists are nested too deeply to read; "
            f"sori.toml needs no more than 4 levels (see sori.example.toml)"
        ) from None
    except ValueError:  # tomllib's int() refuses over 4,300 digits with a bare ValueError
        raise long_number_error(text, where) from None


def parse_config(data: dict[str, Any], source: str = "") -> Config:
    """Validate a parsed TOML document into a `Config`."""
    check_depth(data, source)
    if not isinstance(data, dict):
        raise ConfigError(f"{source or 'config'}: the top level must be a table")
    config = build(Config, {k: v for k, v in data.items() if k != "source"}, "", source)
    # A home read from Home Assistant is checked whole once read (its areas come later).
    check_home(config.home, source, complete=config.home.source == "config")
    _check_player(config, source)
    _check_edge(config.edge, source)
    _check_speaking(config, source)
    return dataclasses.replace(config, source=source)


def check_home(home: HomeConfig, source: str, complete: bool = True) -> None:
    """Refuse repeated ids and areas that are not there (also for a home read from HA);
    `complete=False`: the areas are not all known yet, only ids are checked."""
    where = f"{source}: " if source else ""
    _check_names(home, where)
    _unique([a.id for a in home.areas], "home.areas", where)
    _unique([d.id for d in home.devices], "home.devices", where)
    area_ids = [a.id for a in home.areas]
    if not complete:
        area_ids = [*area_ids, home.area, *(d.area for d in home.devices)]
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


def _check_names(home: HomeConfig, where: str) -> None:
    """Refuse control and format characters (newlines, ESC, U+202E) in the home's names,
    aliases and ids: they reach prompts, logs and files that `sori home import` writes.
    Refuse names and aliases longer than MAX_NAME_CHARS too: each is a path in the tries."""
    named = [("home.area", home.area)]
    for table, entries in (("home.areas", home.areas), ("home.devices", home.devices)):
        for i, entry in enumerate(entries):
            for key in ("id", "name", "aliases", "area", "domain", "device_class"):
                value = getattr(entry, key, "")  # an area has no domain
                values = value if isinstance(value, list) else [value]
                named += [(f"{table}[{i}].{key}", v) for v in values]
    for key, value in named:
        bad = unsafe_character(value)
        if bad:
            raise ConfigError(
                f"{where}{key} = {value!r} holds {bad}, a control or format character; remove it"
            )
        if key.endswith((".name", ".aliases")) and len(value) > MAX_NAME_CHARS:
            raise ConfigError(
                f"{where}{key} is {len(value)} characters long; a name or alias may have at "
                f"most {MAX_NAME_CHARS} characters: shorten it"
            )


def _check_player(config: Config, source: str) -> None:
    """actions.media_player names a media_player device of the home (of a home in the
    file; one read from Home Assistant is checked when a command needs it)."""
    player, where = config.actions.media_player, f"{source}: " if source else ""
    if not player:
        return
    if not player.startswith("media_player."):
        raise ConfigError(
            f"{where}actions.media_player = {player!r} must be a media_player entity id, "
            "e.g. 'media_player.living_room_speaker'"
        )
    ids = [d.id for d in config.home.devices]
    if config.home.source == "config" and player not in ids:
        raise ConfigError(
            f"{where}actions.media_player = {player!r} is not one of home.devices' ids; "
            "add it as a [[home.devices]] or fix the id"
        )


def _unique(ids: list[str], table: str, where: str) -> None:
    """Refuse a repeated id, naming both places it stands."""
    first: dict[str, int] = {}
    for i, id_ in enumerate(ids):
        if id_ in first:
            raise ConfigError(
                f"{where}{table}[{i}].id = {id_!r} repeats {table}[{first[id_]}].id; "
                "ids must be unique: rename or remove one"
            )
        first[id_] = i


def _port_ok(url: str) -> bool:
    """Whether a URL's port, when it has one, is 1-65535."""
    try:
        port = urllib.parse.urlsplit(url).port
    except ValueError:
        return False
    return port is None or 1 <= port <= 65535


def _check_edge(edge: EdgeConfig, source: str) -> None:
    where = f"{source}: " if source else ""
    for i, endpoint in enumerate(edge.endpoints):
        if not endpoint.url.startswith(("http://", "https://")) or not _port_ok(endpoint.url):
            raise ConfigError(
                f"{where}edge.endpoints[{i}].url = {endpoint.url!r} must start with http:// or "
                "https:// (e.g. http://10.0.0.5:8000/v1)"
            )


HANDLERS = ("dry_run", "mqtt", "home_assistant", "webhook", "shell")
"""Action handler names a device or actions.default_handler may use."""
TTS_BACKENDS = ("auto", "piper", "vits", "espeak")


def _check_speaking(config: Config, source: str) -> None:
    """Checks of [tts], [actions], [mqtt], [home_assistant], [webhook], [shell], [http]."""
    where = f"{source}: " if source else ""

    def fail(message: str) -> None:
        raise ConfigError(f"{where}{message}")

    if config.tts.backend not in TTS_BACKENDS:
        fail(f"tts.backend = {config.tts.backend!r} must be one of {', '.join(TTS_BACKENDS)}")
    if config.actions.default_handler not in HANDLERS:
        fail(
            f"actions.default_handler = {config.actions.default_handler!r} must be one of "
            f"{', '.join(HANDLERS)}"
        )
    used = {config.actions.default_handler}
    for i, device in enumerate(config.home.devices):
        if device.handler and device.handler not in HANDLERS:
            fail(
                f"home.devices[{i}].handler = {device.handler!r} must be one of "
                f"{', '.join(HANDLERS)}"
            )
        used.add(device.handler or config.actions.default_handler)
    if "mqtt" in used and not (
        config.mqtt.url.startswith(("mqtt://", "mqtts://")) and _port_ok(config.mqtt.url)
    ):
        fail(f"mqtt.url = {config.mqtt.url!r} must look like mqtt://HOST:PORT (port 1-65535)")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", config.mqtt.node_id):
        # Home Assistant's discovery reads only these in a topic's node id, and ignores
        # the speaker silently otherwise
        fail(
            f"mqtt.node_id = {config.mqtt.node_id!r} may hold only letters a-z, A-Z, digits, "
            "_ and -, e.g. sori_living_room"
        )
    if "home_assistant" in used and not (
        config.home_assistant.url.startswith(("http://", "https://"))
        and _port_ok(config.home_assistant.url)
    ):
        fail("home_assistant.url must be set (http://HOST:8123) when a device uses it")
    if config.home_assistant.conversation and not (
        config.home_assistant.url.startswith(("http://", "https://"))
        and _port_ok(config.home_assistant.url)
    ):
        fail("home_assistant.url must be set (http://HOST:8123) for home_assistant.conversation")
    if "webhook" in used and not (
        config.webhook.url.startswith(("http://", "https://")) and _port_ok(config.webhook.url)
    ):
        fail("webhook.url must be set (http:// or https://) when a device uses it")
    for program in config.shell.allow:
        if not program.startswith("/"):
            fail(f"shell.allow: {program!r} must be an absolute path")
    for key, argv in config.shell.commands.items():
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            fail(f"shell.commands.{key} must be a non-empty list of strings")
        if argv[0] not in config.shell.allow:
            fail(f"shell.commands.{key}: {argv[0]!r} is not in shell.allow")
    if config.http.bind:
        host, _, port = config.http.bind.rpartition(":")
        if not host or not re.fullmatch(r"[0-9]{1,5}", port) or not 1 <= int(port) <= 65535:
            fail(
                f"http.bind = {config.http.bind!r} must be HOST:PORT with a port from 1 to "
                "65535, e.g. 127.0.0.1:8377"
            )
    if config.daemon.log_format not in ("json", "text"):
        fail(f"daemon.log_format = {config.daemon.log_format!r} must be json or text")
