"""Turns that need no model to answer: a device the home does not have, and an utterance
the recognizer barely heard.

Turn logic (floor 3), run on what the presets did not settle and before any action or
language model: "세탁기 돌려 줘" in a home without a washing machine is answered at once
("세탁기는 연결돼 있지 않아요"), and command words with nothing to act on ("줘 꺼 주세요
꺼 줘") get "잘 못 들었어요" instead of a model's guess. Every front door (the microphone,
`POST /say`, `sori intent`, `sori ask`, Wyoming `recognize`) asks the same `screen`.
Pure: the home is read, nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sori.core.home import Device, Home
from sori.understanding.intents.korean import josa

DEVICE_WORDS: dict[str, tuple[str, ...]] = {
    "세탁기": ("washer",),
    "건조기": ("dryer",),
    "식기세척기": ("dishwasher",),
    "식세기": ("dishwasher",),
    "로봇청소기": ("vacuum",),
    "청소기": ("vacuum",),
    "에어컨": ("climate",),
    "냉방기": ("climate",),
    "보일러": ("climate", "water_heater"),
    "난방": ("climate", "water_heater"),
    "냉장고": ("refrigerator",),
    "전자레인지": ("microwave",),
    "오븐": ("oven",),
    "밥솥": ("rice_cooker",),
    "정수기": ("water_purifier",),
    "티비": ("media_player",),
    "텔레비전": ("media_player",),
    "TV": ("media_player",),
    "선풍기": ("fan",),
    "공기청정기": ("fan", "air_purifier"),
    "가습기": ("humidifier",),
    "제습기": ("dehumidifier", "humidifier"),
    "커튼": ("cover",),
    "블라인드": ("cover",),
    "환풍기": ("fan",),
    "도어락": ("lock",),
}
"""Household devices by the word people say, and the domains that can be one. A device of
the home is the one asked for when its name or an alias holds the word, or its domain or
device class is one of these."""

CONTROL_STEMS = (
    "켜", "켜", "꺼", "끄", "돌려", "돌리", "틀어", "틀", "열어", "닫아", "올려", "내려",
    "멈춰", "멈추", "세워", "잠가", "잠그", "작동", "시작", "가동", "해 줘", "해줘", "해 주",
)  # fmt: skip
"""Words that ask a device to do something: only then is a missing device named."""

COMMAND_WORDS = frozenset(
    "켜 켜줘 켜요 켜라 켜고 켜줄래 꺼 꺼줘 꺼요 꺼라 꺼고 꺼줄래 끄고 끄기 줘 줘요 줘라 "
    "주세요 주라 줄래 줄래요 좀 해 해줘 해요 하고 해라 틀어 틀어줘 돌려 돌려줘 열어 닫아 "
    "올려 내려 멈춰 그만 다시 또 어 음 아 저 저기 그 이 거 그거 이거 요 네 응".split()
)
"""Command words and fillers: an utterance of these alone names nothing to act on."""

_TOKEN = re.compile(r"[^\s.,!?~…]+")

MISSING = {"ko": "{word} 연결돼 있지 않아요.", "en": "There is no {word} connected here."}
MISHEARD = {"ko": "잘 못 들었어요. 다시 말씀해 주세요.", "en": "Sorry, I didn't catch that."}


@dataclass(frozen=True, slots=True)
class Screened:
    """A turn answered without acting or thinking."""

    kind: str
    """"missing_device" or "misheard"."""
    reply: str
    """What the speaker says."""
    reason: str
    """Why, for the trace and `sori ask` ("no 세탁기 in the home")."""


def screen(home: Home | None, text: str, language: str = "ko") -> Screened | None:
    """The answer to `text` that needs no action and no model, or None."""
    word = missing_device(home, text)
    if word is not None:
        named = josa(word, "은/는") if language == "ko" else word
        template = MISSING.get(language, MISSING["en"])
        return Screened("missing_device", template.format(word=named), f"no {word} in the home")
    if misheard(text):
        return Screened(
            "misheard", MISHEARD.get(language, MISHEARD["en"]), "only command words heard"
        )
    return None


def missing_device(home: Home | None, text: str) -> str | None:
    """The device word of a command in `text` that no device of `home` answers to."""
    if home is None or not any(stem in text for stem in CONTROL_STEMS):
        return None
    for token in _TOKEN.findall(text):
        for word, domains in DEVICE_WORDS.items():
            if token.startswith(word) and not any(_is(d, word, domains) for d in home.devices):
                return word
    return None


def misheard(text: str) -> bool:
    """Whether `text` is nothing but command words and fillers ("줘 꺼 주세요 꺼 줘")."""
    tokens = _TOKEN.findall(text)
    return bool(tokens) and all(t in COMMAND_WORDS for t in tokens)


def _is(device: Device, word: str, domains: tuple[str, ...]) -> bool:
    names = (device.name, *device.aliases)
    if any(word in name.replace(" ", "") for name in names):
        return True
    return device.domain in domains or (device.device_class or "") in domains
