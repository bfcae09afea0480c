"""Spoken answers to questions, from the values a state source read ("거실은 지금 23.5도예요",
"거실 조명은 켜져 있어요"), and the honest one-sentence replies when there is no value.

Pure functions of plain values: the turn logic (`sori.understanding.answering`) reads the state and
calls these.
"""

from __future__ import annotations

from sori.understanding.intents.korean import josa
from sori.understanding.intents.responses import target_en, target_ko

_ON_OFF_DOMAINS = frozenset(
    {"light", "switch", "fan", "humidifier", "air_purifier", "input_boolean", "climate"}
)
_OPENINGS = frozenset({"door", "window", "garage_door", "opening", "garage"})

# (domain, state) → Korean predicate; ("*", state) applies to any domain.
_STATES_KO = {
    ("*", "on"): "켜져 있어요",
    ("*", "off"): "꺼져 있어요",
    ("cover", "open"): "열려 있어요",
    ("cover", "closed"): "닫혀 있어요",
    ("cover", "opening"): "열리는 중이에요",
    ("cover", "closing"): "닫히는 중이에요",
    ("lock", "locked"): "잠겨 있어요",
    ("lock", "unlocked"): "열려 있어요",
    ("lock", "locking"): "잠기는 중이에요",
    ("lock", "unlocking"): "열리는 중이에요",
    ("lock", "jammed"): "걸려서 움직이지 않아요",
    ("media_player", "playing"): "재생 중이에요",
    ("media_player", "paused"): "일시 정지돼 있어요",
    ("media_player", "idle"): "대기 중이에요",
    ("media_player", "standby"): "대기 중이에요",
    ("vacuum", "cleaning"): "청소 중이에요",
    ("vacuum", "docked"): "충전대에 있어요",
    ("vacuum", "returning"): "충전대로 돌아가는 중이에요",
    ("vacuum", "idle"): "쉬고 있어요",
    ("vacuum", "paused"): "멈춰 있어요",
    ("climate", "cool"): "냉방 중이에요",
    ("climate", "heat"): "난방 중이에요",
    ("climate", "dry"): "제습 중이에요",
    ("climate", "fan_only"): "송풍 중이에요",
    ("climate", "auto"): "자동으로 켜져 있어요",
    ("climate", "heat_cool"): "자동으로 켜져 있어요",
}
_STATES_EN = {
    "on": "on", "off": "off", "open": "open", "closed": "closed", "opening": "opening",
    "closing": "closing", "locked": "locked", "unlocked": "unlocked", "playing": "playing",
    "paused": "paused", "idle": "idle", "cleaning": "cleaning", "docked": "docked",
    "cool": "cooling", "heat": "heating",
}  # fmt: skip
_WEATHER_KO = {
    "sunny": "맑아요", "clear-night": "맑아요", "cloudy": "흐려요",
    "partlycloudy": "구름이 조금 있어요", "rainy": "비가 와요", "pouring": "비가 많이 와요",
    "snowy": "눈이 와요", "snowy-rainy": "눈비가 와요", "fog": "안개가 꼈어요",
    "hail": "우박이 내려요", "lightning": "번개가 쳐요", "lightning-rainy": "천둥 번개에 비가 와요",
    "windy": "바람이 불어요", "windy-variant": "구름 끼고 바람이 불어요",
    "exceptional": "날씨가 험해요",
}  # fmt: skip
_UNITS_KO = {"°C": "도", "°F": "화씨 도", "%": "%", "℃": "도"}


def number_text(value: float) -> str:
    """23.0 → "23", 23.5 → "23.5", 23.456 → "23.5"."""
    rounded = round(float(value), 1)
    return str(int(rounded)) if rounded.is_integer() else str(rounded)


def _copula(word: str) -> str:
    """The word with 예요/이에요 as its last sound asks."""
    return josa(word, "이에요/예요")


def _state_key(domain: str, device_class: str | None, state: str) -> tuple[str, str]:
    state = state.strip().lower()
    if domain == "binary_sensor":
        return "binary_sensor", state
    return domain, state


def state_ko(name: str, domain: str, device_class: str | None, state: str) -> str:
    """ "거실 조명은 켜져 있어요", "현관문은 잠겨 있어요", "거실 습도 센서는 45%예요"."""
    domain, state = _state_key(domain, device_class, state)
    subject = josa(name, "은/는")
    if domain == "binary_sensor":
        if device_class in _OPENINGS:
            said = {"on": "열려 있어요", "off": "닫혀 있어요"}.get(state)
        else:
            said = {"on": "감지됐어요", "off": "감지되지 않았어요"}.get(state)
        if said:
            return f"{subject} {said}"
    said = _STATES_KO.get((domain, state))
    if said is None and (domain in _ON_OFF_DOMAINS or state in ("on", "off")):
        said = _STATES_KO.get(("*", state))
    if said is not None:
        return f"{subject} {said}"
    return f"{subject} 지금 '{state}' 상태예요"


def value_ko(name: str, value: float, unit: str = "") -> str:
    """A sensor's value: "거실 습도 센서는 45%예요"."""
    said = number_text(value) + _UNITS_KO.get(unit, unit)
    return f"{josa(name, '은/는')} {_copula(said)}"


def state_en(name: str, domain: str, device_class: str | None, state: str) -> str:
    domain, state = _state_key(domain, device_class, state)
    if domain == "binary_sensor":
        if device_class in _OPENINGS:
            state = {"on": "open", "off": "closed"}.get(state, state)
        else:
            return f"The {name} {'detects something' if state == 'on' else 'detects nothing'}."
    return f"The {name} is {_STATES_EN.get(state, state)}."


def value_en(name: str, value: float, unit: str = "") -> str:
    return f"The {name} reads {number_text(value)}{(' ' + unit) if unit else ''}."


def yes_no(language: str, asked: str, state: str) -> str:
    """The yes or no a question about one state ("켜져 있어?") starts with."""
    same = asked.strip().lower() == state.strip().lower()
    if language == "en":
        return "Yes. " if same else "No. "
    return "네, " if same else "아니요, "


def temperature(language: str, place: str, degrees: float) -> str:
    """ "거실은 지금 23.5도예요" / "It is 23.5 degrees in the 거실." """
    said = number_text(degrees)
    if language == "en":
        return f"It is {said} degrees in the {place}." if place else f"It is {said} degrees."
    if place:
        return f"{josa(place, '은/는')} 지금 {said}도예요"
    return f"지금 {said}도예요"


def weather(language: str, condition: str, degrees: float | None) -> str:
    """ "지금 밖은 맑아요, 기온은 23도예요" / "It is sunny, 23 degrees." """
    if language == "en":
        tail = f", {number_text(degrees)} degrees" if degrees is not None else ""
        return f"It is {condition.replace('-', ' ')}{tail}."
    said = _WEATHER_KO.get(condition, f"'{condition}' 날씨예요")
    tail = f", 기온은 {number_text(degrees)}도예요" if degrees is not None else ""
    return f"지금 밖은 {said}{tail}"


def subject(language: str, intent: str, slots: dict) -> str:
    """What the question is about, spoken: "거실 온도", "거실 조명 상태", "날씨"."""
    area = slots.get("area")
    if language == "en":
        if intent == "HassClimateGetTemperature":
            return f"the {area} temperature" if area else "the temperature"
        if intent == "HassGetWeather":
            return "the weather"
        return f"the state of {target_en(slots)}"
    if intent == "HassClimateGetTemperature":
        return f"{area} 온도" if area else "온도"
    if intent == "HassGetWeather":
        return "날씨"
    return f"{target_ko(slots)} 상태"


def no_source(language: str, what: str) -> str:
    """No state source is configured for it."""
    if language == "en":
        return f"I have no source to tell {what}."
    return f"{josa(what, '을/를')} 알려 줄 곳이 설정돼 있지 않아요."


def no_device(language: str, what: str) -> str:
    """No device of the home can answer it."""
    if language == "en":
        return f"No device here can tell {what}."
    return f"{josa(what, '을/를')} 알려 줄 기기가 없어요."


def no_value(language: str, what: str) -> str:
    """The source has no value for it (yet)."""
    if language == "en":
        return f"I have no reading for {what} yet."
    return f"{what} 값을 아직 받지 못했어요."


def unreachable(language: str, what: str) -> str:
    """The source could not be read."""
    if language == "en":
        return f"I could not read {what}; the state source did not answer."
    return f"{josa(what, '을/를')} 읽어 오지 못했으니 연결을 확인해 주세요."
