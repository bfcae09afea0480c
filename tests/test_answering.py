"""Questions are answered from state and never act: a real mosquitto broker with retained
state messages, and Home Assistant's REST states API served by aiohttp on loopback."""

from __future__ import annotations

import asyncio
import json

import paho.mqtt.client as mqtt
import pytest
from aiohttp import web

from broker import Subscriber
from daemon_kit import ENGLISH_HOME, build
from sori.acting.state import answering_devices
from sori.core.home import Area, Device, Home
from sori.core.intent_kinds import QUERY, kind_of

HOME = """
[intents]
home_assistant = true

[home]
area = "living_room"
areas = [{ id = "living_room", name = "거실" }, { id = "bedroom", name = "안방" }]

[[home.devices]]
id = "light.living_room"
name = "거실 조명"
area = "living_room"
aliases = ["거실 불"]

[[home.devices]]
id = "climate.bedroom"
name = "에어컨"
area = "bedroom"

[[home.devices]]
id = "sensor.living_room_temperature"
name = "거실 온도계"
area = "living_room"
device_class = "temperature"

[[home.devices]]
id = "lock.front_door"
name = "현관문"

[[home.devices]]
id = "cover.living_room_curtain"
name = "거실 커튼"
area = "living_room"
device_class = "curtain"

[[home.devices]]
id = "binary_sensor.kitchen_smoke"
name = "연기 감지기"
device_class = "smoke"

[[home.devices]]
id = "weather.home"
name = "날씨"

[tts]
backend = "espeak"

[daemon]
log_format = "text"
thinking = false
"""

STATES = {  # entity id → (state, attributes), as Home Assistant reports them
    "light.living_room": ("on", {}),
    "climate.bedroom": ("cool", {"current_temperature": 26, "temperature": 22}),
    "sensor.living_room_temperature": ("23.5", {"unit_of_measurement": "°C"}),
    "lock.front_door": ("unlocked", {}),
    "cover.living_room_curtain": ("closed", {}),
    "binary_sensor.kitchen_smoke": ("off", {}),
    "weather.home": ("sunny", {"temperature": 21}),
}

# One question per question intent of the Korean packs (ours and Home Assistant's), with
# the answer it gets from STATES.
QUESTIONS = [
    ("거실 온도 몇 도야", "HassClimateGetTemperature", "거실은 지금 23.5도예요"),
    ("안방 온도 몇 도야", "HassClimateGetTemperature", "안방은 지금 26도예요"),
    ("거실 불 켜져 있어?", "HassGetState", "네, 거실 조명은 켜져 있어요."),
    ("현관문 잠겨 있어?", "HassGetState", "아니요, 현관문은 열려 있어요."),
    ("거실 커튼 열려 있어?", "HassGetState", "아니요, 거실 커튼은 닫혀 있어요."),
    ("연기 감지됐어", "HassGetState", "아니요, 연기 감지기는 감지되지 않았어요."),
    ("날씨 어때", "HassGetWeather", "지금 밖은 맑아요, 기온은 21도예요"),
    ("지금 몇 시야", "HassGetCurrentTime", "지금은 "),
    ("오늘 며칠이야", "HassGetCurrentDate", "오늘은 "),
    ("타이머 얼마나 남았어", "HassTimerStatus", "맞춰 둔 타이머나 알람이 없어요."),
]


def config_file(tmp_path, extra: str):
    path = tmp_path / "sori.toml"
    path.write_text(HOME + extra, encoding="utf-8")
    return path


def payload(entity_id: str) -> str:
    state, attributes = STATES[entity_id]
    return json.dumps({"state": state, **attributes}) if attributes else state.upper()


@pytest.fixture
def retained(mosquitto):
    """Every device's state published retained (before Sori starts), cleared afterwards so
    no later test's subscriber sees it."""
    host, port = mosquitto.removeprefix("mqtt://").split(":")
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    client.connect(host, int(port))
    client.loop_start()
    topics = {}

    def publish(topic: str, value: str) -> None:
        client.publish(topic, value, qos=1, retain=True).wait_for_publish(5)
        topics[topic] = value

    for entity_id in STATES:
        domain, object_id = entity_id.split(".")
        publish(f"sori/{domain}/{object_id}/state", payload(entity_id))
    yield publish
    for topic in topics:
        client.publish(topic, "", qos=1, retain=True).wait_for_publish(5)
    client.disconnect()
    client.loop_stop()


async def run(daemon, coro):
    try:
        return await asyncio.wait_for(coro, 60)
    finally:
        await daemon.close()


async def ask_all(daemon) -> list[dict]:
    return [await daemon.say(text) for text, _, _ in QUESTIONS]


def check_answers(turns) -> None:
    for turn, (text, intent, answer) in zip(turns, QUESTIONS, strict=True):
        assert turn["intent"] == intent, text
        assert all(a["handler"] == "local" for a in turn["actions"]), text
        assert turn["response"].startswith(answer), (text, turn["response"])
        assert not turn["error"], text


def test_every_question_intent_of_the_korean_packs_is_covered(tmp_path, mosquitto):
    daemon = build(config_file(tmp_path, f'[mqtt]\nurl = "{mosquitto}"\n'), tmp_path / "r.wav")
    asked = {intent for _, intent, _ in QUESTIONS}
    try:
        names = daemon.understanding.current.intent_names()
        assert {i for i in names if kind_of(i) == QUERY} <= asked
    finally:
        asyncio.run(daemon.close())


def test_questions_are_answered_from_retained_mqtt_state_and_publish_nothing(
    tmp_path, mosquitto, retained
):
    extra = f'[actions]\ndefault_handler = "mqtt"\n\n[mqtt]\nurl = "{mosquitto}"\n'
    daemon = build(config_file(tmp_path, extra), tmp_path / "r.wav")
    seen = Subscriber(mosquitto)  # every message on the broker, from now on
    try:

        async def turns():
            answered = await ask_all(daemon)
            retained("sori/light/living_room/state", "OFF")  # kept current after start-up
            await asyncio.sleep(0.3)
            later = await daemon.say("거실 불 켜져 있어?")
            command = await daemon.say("거실 불 꺼줘")  # one publisher: it arrives last
            return answered, later, command

        answered, later, command = asyncio.run(run(daemon, turns()))
        check_answers(answered)
        assert later["response"] == "아니요, 거실 조명은 꺼져 있어요."
        assert command["actions"][0]["ok"]
        messages = []
        while True:
            messages.append(seen.next())
            if messages[-1][0].endswith("/set"):
                break
        assert messages[-1] == ("sori/light/living_room/set", "OFF")
        assert not [m for m in messages[:-1] if not m[0].endswith("/state")], messages
    finally:
        seen.close()


def test_questions_are_answered_from_home_assistant_states(tmp_path, monkeypatch):
    monkeypatch.setenv("SORI_TEST_HA_TOKEN", "secret-token")
    requests: list[tuple[str, str, str]] = []

    async def state(request: web.Request) -> web.Response:
        requests.append((request.method, request.path, request.headers.get("Authorization")))
        entity_id = request.match_info["entity_id"]
        if entity_id not in STATES:
            return web.json_response({"message": "Entity not found."}, status=404)
        value, attributes = STATES[entity_id]
        return web.json_response({"entity_id": entity_id, "state": value, "attributes": attributes})

    async def refuse(request: web.Request) -> web.Response:
        requests.append((request.method, request.path, request.headers.get("Authorization")))
        return web.json_response({}, status=200)

    async def scenario():
        app = web.Application()
        app.router.add_get("/api/states/{entity_id}", state)
        app.router.add_route("*", "/{tail:.*}", refuse)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        extra = (
            '[actions]\ndefault_handler = "home_assistant"\n\n'
            f'[home_assistant]\nurl = "http://127.0.0.1:{port}"\n'
            'token_env = "SORI_TEST_HA_TOKEN"\n'
        )
        daemon = build(config_file(tmp_path, extra), tmp_path / "r.wav")
        try:
            return await run(daemon, ask_all(daemon))
        finally:
            await runner.cleanup()

    turns = asyncio.run(scenario())
    check_answers(turns)
    assert requests, "Home Assistant was never asked"
    assert {method for method, _, _ in requests} == {"GET"}  # nothing was sent to act
    assert all(path.startswith("/api/states/") for _, path, _ in requests)
    assert all(auth == "Bearer secret-token" for _, _, auth in requests)


def test_without_a_source_or_a_value_the_answer_says_so_in_one_sentence(tmp_path, mosquitto):
    none = config_file(tmp_path, f'[mqtt]\nurl = "{mosquitto}"\n\n[state]\nsource = "none"\n')
    daemon = build(none, tmp_path / "r.wav")
    no_source = asyncio.run(run(daemon, daemon.say("거실 온도 몇 도야")))
    assert no_source["response"] == "거실 온도를 알려 줄 곳이 설정돼 있지 않아요."
    assert no_source["actions"] == []
    # MQTT is the source, but nothing was ever published for the curtain. The answer
    # comes once the broker has acknowledged the subscription; the long deadline is for a
    # busy machine, where connecting can take longer than the default 2 s.
    extra = (
        f'[actions]\ndefault_handler = "mqtt"\n\n[mqtt]\nurl = "{mosquitto}"\n'
        "\n[state]\ntimeout_s = 15\n"
    )
    (tmp_path / "b").mkdir()
    daemon = build(config_file(tmp_path / "b", extra), tmp_path / "r.wav")
    no_value = asyncio.run(run(daemon, daemon.say("거실 커튼 열려 있어?")))
    assert no_value["response"] == "거실 커튼 상태 값을 아직 받지 못했어요."


def test_a_temperature_question_asks_sensors_and_climate_devices_never_a_light():
    home = Home(
        (Area("living_room", "거실"), Area("bedroom", "안방")),
        (
            Device("light.living_room", "거실 조명", "light", "living_room"),
            Device("climate.living_room", "거실 에어컨", "climate", "living_room"),
            Device("sensor.living_temp", "온도계", "sensor", "living_room", (), "temperature"),
            Device("sensor.living_humidity", "습도계", "sensor", "living_room", (), "humidity"),
            Device("climate.bedroom", "안방 에어컨", "climate", "bedroom"),
        ),
        speaker_area="living_room",
    )
    asked = answering_devices(home, "HassClimateGetTemperature", {"area": "거실"})
    assert [d.id for d in asked] == ["sensor.living_temp", "climate.living_room"]
    bedroom = answering_devices(home, "HassClimateGetTemperature", {"area": "안방"})
    assert [d.id for d in bedroom] == ["climate.bedroom"]
    assert answering_devices(home, "HassClimateGetTemperature", {"area": "다락"}) == []
    state = answering_devices(home, "HassGetState", {"name": "거실 조명", "domain": "light"})
    assert [d.id for d in state] == ["light.living_room"]


def test_an_unreachable_broker_is_said_in_one_sentence(tmp_path):
    from broker import free_port

    url = f"mqtt://127.0.0.1:{free_port()}"
    extra = f'[actions]\ndefault_handler = "mqtt"\n\n[mqtt]\nurl = "{url}"\n'
    extra += "\n[state]\ntimeout_s = 0.3\n"
    daemon = build(config_file(tmp_path, extra), tmp_path / "r.wav")
    turn = asyncio.run(run(daemon, daemon.say("거실 불 켜져 있어?")))
    assert turn["response"] == "거실 조명 상태를 읽어 오지 못했으니 연결을 확인해 주세요."


def test_english_questions_are_answered_from_state(tmp_path, mosquitto, retained):
    path = tmp_path / "sori.toml"
    path.write_text(ENGLISH_HOME + f'\n[mqtt]\nurl = "{mosquitto}"\n', encoding="utf-8")
    daemon = build(path, tmp_path / "r.wav")

    async def turns():
        return [
            await daemon.say(text)
            for text in (
                "what is the temperature in the living room",
                "what is the temperature in the bedroom",
                "is the living room light on",
                "is the front door locked",
                "what's the weather like",
            )
        ]

    answered = [t["response"] for t in asyncio.run(run(daemon, turns()))]
    assert answered == [
        "It is 23.5 degrees in the living room.",
        "It is 26 degrees in the bedroom.",
        "Yes. The living room light is on.",
        "No. The front door is unlocked.",
        "I have no source to tell the weather.",
    ]
