"""Spoken replies for matched intents, filled from their slots ("거실 조명을 껐어요")."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sori.understanding.intents.korean import josa

DOMAIN_NOUNS_KO = {
    "light": "조명", "switch": "스위치", "fan": "선풍기", "climate": "에어컨", "cover": "커튼",
    "lock": "문", "media_player": "티비", "vacuum": "청소기", "humidifier": "가습기",
    "air_purifier": "공기청정기", "scene": "장면", "script": "스크립트", "valve": "밸브",
}  # fmt: skip
DEVICE_CLASS_NOUNS_KO = {
    "curtain": "커튼", "blind": "블라인드", "shade": "블라인드", "garage": "차고 문",
    "window": "창문", "door": "문", "gate": "대문", "awning": "어닝", "shutter": "셔터",
    "outlet": "플러그", "tv": "티비", "speaker": "스피커", "air_purifier": "공기청정기",
}  # fmt: skip

_ON_OFF_KO = {
    ("HassTurnOn", "cover"): "열었어요",
    ("HassTurnOff", "cover"): "닫았어요",
    ("HassTurnOn", "lock"): "잠갔어요",
    ("HassTurnOff", "lock"): "잠금을 풀었어요",
    ("HassTurnOn", "scene"): "실행했어요",
    ("HassTurnOn", "script"): "실행했어요",
    ("HassTurnOn", "vacuum"): "청소를 시작했어요",
    ("HassTurnOff", "vacuum"): "청소를 멈췄어요",
}
_FIXED_KO = {
    "HassCancelTimer": "타이머를 취소했어요",
    "HassCancelAllTimers": "모든 타이머를 취소했어요",
    "HassTimerStatus": "타이머를 확인할게요",
    "HassPauseTimer": "타이머를 멈췄어요",
    "HassUnpauseTimer": "타이머를 다시 시작했어요",
    "HassGetWeather": "날씨를 알아볼게요",
    "HassMediaSearchAndPlay": "음악을 틀었어요",
    "HassMediaPause": "일시 정지했어요",
    "HassMediaUnpause": "다시 재생할게요",
    "HassMediaNext": "다음 곡으로 넘길게요",
    "HassMediaPrevious": "이전 곡으로 돌아갈게요",
    "HassVacuumStart": "청소를 시작할게요",
    "HassVacuumReturnToBase": "청소기를 충전대로 보낼게요",
    "HassNevermind": "네",
}


def target_ko(slots: Mapping[str, Any]) -> str:
    """What the command acts on, spoken: "거실 조명", "침실 커튼", "모든 조명"."""
    name = slots.get("name")
    if name and name != "all":
        return str(name)
    noun = DEVICE_CLASS_NOUNS_KO.get(str(slots.get("device_class")), "") or DOMAIN_NOUNS_KO.get(
        str(slots.get("domain")), "기기"
    )
    area = slots.get("area")
    if area:
        return f"{area} {noun}"
    return f"모든 {noun}" if name == "all" else noun


def duration_ko(slots: Mapping[str, Any]) -> str:
    parts = []
    for key, unit in (("hours", "시간"), ("minutes", "분"), ("seconds", "초")):
        if slots.get(key) not in (None, ""):
            parts.append(f"{_number(slots[key])}{unit}")
    return " ".join(parts)


def respond_ko(intent: str, slots: Mapping[str, Any], now: datetime | None = None) -> str:
    domain = str(slots.get("domain", ""))
    if intent in ("HassTurnOn", "HassTurnOff"):
        verb = _ON_OFF_KO.get((intent, domain), "켰어요" if intent == "HassTurnOn" else "껐어요")
        if domain == "vacuum":  # "청소기 청소를 멈췄어요"
            return f"{target_ko(slots)} {verb}"
        return f"{josa(target_ko(slots), '을/를')} {verb}"
    if intent == "HassLightSet":
        lights = target_ko({**slots, "domain": "light"})
        if "brightness" in slots:
            level = f"{_number(slots['brightness'])}%"
            return f"{lights} 밝기를 {josa(level, '으로/로')} 맞췄어요"
        if "brightness_step" in slots:  # "거실 불 밝게 해 줘", a follow-up's "더 밝게"
            way = "밝게" if step_sign(slots["brightness_step"]) > 0 else "어둡게"
            return f"{josa(lights, '을/를')} {_how_far(slots)} {way} 했어요"
        return f"{lights} 색을 바꿨어요"
    if intent == "HassClimateSetTemperature":
        place = next(
            (f"{slots[k]} " for k in ("name", "area") if slots.get(k) not in (None, "all")), ""
        )
        degrees = f"{_number(slots.get('temperature'))}도"
        return f"{place}온도를 {josa(degrees, '으로/로')} 맞췄어요"
    if intent == "HassClimateGetTemperature":
        return f"{slots['area']} 온도를 확인할게요" if slots.get("area") else "온도를 확인할게요"
    if intent == "HassSetPosition":
        level = f"{_number(slots.get('position'))}%"
        return f"{josa(target_ko(slots), '을/를')} {josa(level, '으로/로')} 맞췄어요"
    if intent == "HassSetVolume":
        level = f"{_number(slots.get('volume_level'))}%"
        return f"볼륨을 {josa(level, '으로/로')} 맞췄어요"
    if intent == "HassSetVolumeRelative":
        way = "올렸어요" if step_sign(slots.get("volume_step")) > 0 else "내렸어요"
        what = f"{target_ko(slots)} 볼륨" if slots.get("domain") or slots.get("name") else "볼륨"
        little = "조금 " if slots.get("amount") == "little" else ""
        return f"{josa(what, '을/를')} {little}{way}"
    if intent == "HassStartTimer":
        called = " ".join(str(x) for x in (slots.get("name"), duration_ko(slots)) if x)
        return f"{called} 타이머를 시작했어요".strip()
    if intent == "HassCancelTimer" and slots.get("name"):
        return f"{slots['name']} 타이머를 취소했어요"
    if intent == "HassGetCurrentTime":
        now = now or datetime.now()
        half = "오전" if now.hour < 12 else "오후"
        return f"지금은 {half} {now.hour % 12 or 12}시 {now.minute}분이에요"
    if intent == "HassGetCurrentDate":
        now = now or datetime.now()
        weekday = "월화수목금토일"[now.weekday()]
        return f"오늘은 {now.month}월 {now.day}일 {weekday}요일이에요"
    if intent == "HassGetState":
        return f"{target_ko(slots)} 상태를 확인할게요"
    if intent == "HassShoppingListAddItem":
        return f"{josa(str(slots.get('item', '')), '을/를')} 쇼핑 리스트에 추가했어요"
    return _FIXED_KO.get(intent, "알겠어요")


def target_en(slots: Mapping[str, Any]) -> str:
    name = slots.get("name")
    if name and name != "all":
        return f"the {name}"
    noun = {"light": "lights", "fan": "fans", "cover": "covers", "climate": "air conditioning"}
    what = noun.get(str(slots.get("domain")), "devices")
    if slots.get("area"):
        return f"the {slots['area']} {what}"
    return f"all {what}" if name == "all" else f"the {what}"


def respond_en(intent: str, slots: Mapping[str, Any], now: datetime | None = None) -> str:
    if intent == "HassTurnOn":
        return f"Turned on {target_en(slots)}."
    if intent == "HassTurnOff":
        return f"Turned off {target_en(slots)}."
    if intent == "HassStartTimer":
        units = (("hours", "hour"), ("minutes", "minute"), ("seconds", "second"))
        parts = [f"{_number(slots[k])} {unit}" for k, unit in units if k in slots]
        return f"Started a {' '.join(parts)} timer."
    if intent == "HassGetCurrentTime":
        return f"It is {(now or datetime.now()):%-I:%M %p}."
    if intent == "HassGetCurrentDate":
        return f"Today is {(now or datetime.now()):%A, %B %-d}."
    if intent == "HassClimateSetTemperature":
        return f"Set the temperature to {_number(slots.get('temperature'))} degrees."
    return "Okay."


RESPONDERS = {"ko": respond_ko, "en": respond_en}


CLARIFY = "HassRespond"
"""The intent of a question back ("어느 방 조명을 켤까요?"): it speaks, nothing acts."""


def respond(language: str, intent: str, slots: Mapping[str, Any]) -> str:
    if intent == CLARIFY:
        return str(slots.get("response", ""))
    return RESPONDERS.get(language, respond_en)(intent, slots)


def which_room(language: str, intent: str, slots: Mapping[str, Any], rooms: list[str]) -> str:
    """The question back when a command needs a room and the speaker has none
    (home.area unset): it names the rooms there are, or says how to set one."""
    plain = {k: v for k, v in slots.items() if k not in ("name", "area")}
    if language == "ko":
        noun = target_ko(plain)
        verbs = {"HassTurnOn": "켤까요", "HassTurnOff": "끌까요"}
        if plain.get("domain") == "cover":
            verbs = {"HassTurnOn": "열까요", "HassTurnOff": "닫을까요"}
        verb = verbs.get(intent, "바꿀까요")
        if not rooms:
            return f"어느 방 {noun}인지 몰라요. sori.toml의 [home] area에 방을 정해 주세요"
        return f"어느 방 {josa(noun, '을/를')} {verb}? {', '.join(rooms[:6])} 중에서 말해 주세요"
    noun = target_en(plain).removeprefix("the ")
    if not rooms:
        return f"Which room's {noun}? Set [home] area in sori.toml to choose one."
    return f"Which room's {noun}? Say one of: {', '.join(rooms[:6])}."


def step_sign(step: Any) -> int:
    """+1 or -1 for a relative step: "up" / "down" (Home Assistant's volume_step) or a
    signed number of percent; 0 when it is neither."""
    if step in ("up", "down"):
        return 1 if step == "up" else -1
    try:
        number = float(step)
    except (TypeError, ValueError):
        return 0
    return (number > 0) - (number < 0)


def _how_far(slots: Mapping[str, Any]) -> str:
    return "조금 더" if slots.get("amount") == "little" else "더"


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
