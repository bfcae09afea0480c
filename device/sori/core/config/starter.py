"""The first sori.toml of a home, as `sori setup` writes it: a few answers in, commented
TOML out. Every key it does not write keeps its default (device/sori.example.toml)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from sori.core.config.edit import toml_string

KNOWN_AREAS = {
    "거실": "living_room",
    "안방": "bedroom",
    "침실": "bedroom",
    "주방": "kitchen",
    "부엌": "kitchen",
    "아이방": "kids_room",
    "작은방": "kids_room",
    "서재": "study",
    "화장실": "bathroom",
    "욕실": "bathroom",
    "현관": "entrance",
}
"""Area ids for common Korean room names (those of the example home); others keep the
name itself as the id."""


@dataclass(frozen=True)
class Answers:
    """What `sori setup` asked or was given."""

    area: str = ""
    """Spoken name of the room the speaker stands in ("거실"); empty for none."""
    ha_url: str = ""
    """Home Assistant base URL (http://homeassistant.local:8123); empty for none."""
    ha_token_env: str = "SORI_HA_TOKEN"
    """Environment variable that holds Home Assistant's long-lived access token."""
    mqtt_url: str = ""
    """MQTT broker URL (mqtt://HOST:1883); empty for none."""
    wake: list[str] = field(default_factory=list)
    """Wake phrases ("소리야")."""
    token_file: str = ""
    """The HTTP API token file; empty leaves [http] at its defaults."""
    across_room: bool = True
    """People talk to the speaker from a step (0.7 m) away or more, as to any speaker in a
    room, not into its microphone from close by: dereverberation on."""
    arbitrate: bool = False
    """Another Sori speaker of the home shares the MQTT broker: only the one that heard the
    wake phrase clearest answers."""
    array: str = ""
    """The microphone array it hears through (`audio.array.geometry`); empty for one
    microphone."""
    array_channels: int = 0
    """The channels the array's driver gives (`audio.channels`)."""
    array_device: str = ""
    """The array's sound device (`audio.device`); empty when it was not found."""


def area_id(name: str) -> str:
    """A stable id for a spoken room name."""
    return KNOWN_AREAS.get(name, name)


def node_id(area: str) -> str:
    """`mqtt.node_id` for a speaker in room `area`: `sori_<area id>` in the characters
    Home Assistant's discovery reads, so the speakers of a home, one per room, differ.
    A room name with none of them ("다락방") gets a short digest of itself."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", area_id(area)).strip("_")
    return f"sori_{slug or hashlib.sha1(area.encode('utf-8')).hexdigest()[:8]}"


def starter_toml(answers: Answers, written_on: str = "", wake_section: bool = False) -> str:
    """Commented TOML for `answers`; `parse_config` accepts it. `wake_section`: this Sori's
    config has a [wake] section (else the wake phrases are written commented out)."""
    handler = "home_assistant" if answers.ha_url else "mqtt" if answers.mqtt_url else "dry_run"
    lines = [
        f"# sori.toml, written by `sori setup`{' on ' + written_on if written_on else ''}.",
        "# Every key not here keeps its default; device/sori.example.toml documents them all.",
        '# Check it: sori intent --config THIS_FILE "불 켜줘"',
        "",
        "[home]",
    ]
    if answers.ha_url:
        lines += [
            "# Areas, devices and aliases come from Home Assistant (those exposed to Assist),",
            "# read at start-up and again on SIGHUP (sudo systemctl reload sori).",
            "# `sori home import` writes them here instead, to edit by hand.",
            'source = "home_assistant"',
        ]
    if answers.area:
        lines += [
            '# The room the speaker stands in: "불 켜줘" means its lights. With none, Sori asks',
            "# which room; only 다/모든/전부 means every light.",
            f"area = {toml_string(area_id(answers.area))}",
            "",
            "[[home.areas]]",
            f"id = {toml_string(area_id(answers.area))}",
            f"name = {toml_string(answers.area)}",
        ]
    lines += [
        "",
        "# Add your devices (domain is the part of id before the dot):",
        "# [[home.devices]]",
        '# id = "light.living_room"',
        '# name = "거실 조명"',
        '# aliases = ["거실 불"]',
        f"# area = {toml_string(area_id(answers.area) if answers.area else 'living_room')}",
        "",
        "[actions]",
        "# dry_run only logs; mqtt, home_assistant, webhook or shell act for real.",
        f"default_handler = {toml_string(handler)}",
    ]
    if answers.ha_url:
        lines += [
            "",
            "[home_assistant]",
            f"url = {toml_string(answers.ha_url)}",
            "# A long-lived access token (HA: your profile > Security), from the environment:",
            f"token_env = {toml_string(answers.ha_token_env)}",
        ]
    if answers.mqtt_url:
        lines += ["", "[mqtt]", f"url = {toml_string(answers.mqtt_url)}"]
        if answers.area:
            lines += [
                "# This speaker's id in Home Assistant's MQTT discovery and its sori/<node_id>/",
                "# topics: a different one on each speaker of the home.",
                f"node_id = {toml_string(node_id(answers.area))}",
            ]
    if answers.token_file:
        lines += [
            "",
            "[http]",
            "# The local HTTP API; clients send `Authorization: Bearer $(cat TOKEN_FILE)`.",
            f"token_file = {toml_string(answers.token_file)}",
        ]
    audio = array_lines(answers)
    if answers.across_room:
        audio += [
            "# Talked to from a step away or more: the room's late echoes are taken out, which",
            "# hears far more commands from 0.7 m on (16 -> 28 of 40 at 0.7 m, 8 -> 15 at 2 m).",
            "# It delays everything by 32 ms and costs a little to a voice at the microphone",
            '# itself; "off" for that (docs/hearing.md, Reverberation).',
            'dereverb = "spectral"',
        ]
    if audio:
        lines += ["", "[audio]", *audio]
    if answers.array:
        lines += [
            "",
            "[audio.array]",
            "# The board's microphone positions, and which of its channels are microphones",
            "# and which what it plays (docs/hearing.md, A board's channels).",
            f"geometry = {toml_string(answers.array)}",
        ]
    if (answers.wake or answers.arbitrate) and wake_section:
        lines += ["", "[wake]"]
        if answers.wake:
            lines.append(f"phrases = [{', '.join(toml_string(p) for p in answers.wake)}]")
        if answers.arbitrate:
            lines += [
                "# Another Sori speaker shares the broker: each that hears the wake phrase tells",
                "# the others, and only the one that heard it clearest answers (turn it on on",
                "# each; docs/hearing.md, Several speakers in one home).",
                "arbitrate = true",
            ]
    elif answers.wake:
        phrases = ", ".join(toml_string(p) for p in answers.wake)
        lines += [
            "",
            "# Wake phrases: uncomment once your Sori has the [wake] section (`sori run --help`",
            "# lists it); a Sori without it refuses an unknown section.",
            "# [wake]",
            f"# phrases = [{phrases}]",
        ]
    return "\n".join(lines) + "\n"


def array_lines(answers: Answers) -> list[str]:
    """The [audio] keys that hear through the array `answers` names (none without one)."""
    if not answers.array:
        return []
    if answers.array_device:
        device = [
            f"# The {answers.array}, as this machine named it when `sori setup` ran.",
            f"device = {toml_string(answers.array_device)}",
        ]
    else:
        device = [
            "# The array's sound device (`python -m sounddevice` lists them); until set, the",
            "# default input, which may be another microphone.",
            '# device = ""',
        ]
    return [
        *device,
        "# Every channel its driver gives: the microphones, and what it plays, which is the",
        "# echo canceller's reference.",
        f"channels = {answers.array_channels}",
    ]
