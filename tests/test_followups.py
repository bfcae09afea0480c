"""Follow-ups: the last command's intent and targets are context for `context_s` seconds.

The daemon tests run text turns through the real presets, handlers and a real mosquitto
broker, with a fake clock so that time passes only when a test says so."""

from __future__ import annotations

import asyncio
import json
import queue

import pytest

from daemon_kit import build, write_config
from sori.core.clock import FakeClock
from sori.core.events import ActionFinished, IntentCommitted, IntentNotRecognized
from sori.core.home import Area, Device, Home
from sori.serving.conversation.context import Context, parse, remember, resolve
from sori.understanding.screening import MISHEARD

BEDROOM_LIGHT = """
[[home.devices]]
id = "light.bedroom"
name = "안방 조명"
area = "bedroom"
handler = "mqtt"
"""

HOME = Home(
    areas=(Area("living_room", "거실"), Area("bedroom", "안방")),
    devices=(
        Device("light.living_room", "거실 조명", "light", "living_room", ("거실 불",)),
        Device("light.bedroom", "안방 조명", "light", "bedroom"),
        Device("climate.bedroom", "에어컨", "climate", "bedroom"),
    ),
    speaker_area="living_room",
)
S = 1_000_000_000


def lights_on(t_ns: int = 0, uid: int = 7) -> Context:
    committed = IntentCommitted(
        t_ns, uid, "거실 불 켜줘", "HassTurnOn", {"domain": "light", "name": "all", "area": "거실"}
    )
    acted = [ActionFinished(t_ns, uid, "HassTurnOn", "mqtt", "light.living_room")]
    context = remember(committed, acted, t_ns)
    assert context is not None
    return context


# -- the grammar and the resolver, pure -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("안방도", "also"), ("안방 것도", "also"), ("안방에 있는 것도", "also"),
        ("에어컨도", "also"), ("다시 켜줘", "again"), ("다시 꺼 줘", "again"),
        ("그거 꺼줘", "that"), ("그것도 꺼 줘", "that"), ("더 밝게", "brighter"),
        ("더 밝게 해줘", "brighter"), ("좀 더 어둡게", "darker"),
    ],
)  # fmt: skip
def test_the_follow_up_forms_are_recognised(text, form):
    found = parse(text)
    assert found is not None and found[0] == form


@pytest.mark.parametrize("text", ["안방", "다시", "거실", "밝게", "그거", "다시 해줘", "불 켜줘"])
def test_a_bare_word_is_no_follow_up(text):
    assert parse(text) is None
    assert resolve(lights_on(), text, 0, HOME) is None


@pytest.mark.parametrize(
    ("text", "intent", "slots"),
    [
        ("안방도", "HassTurnOn", {"domain": "light", "name": "all", "area": "안방"}),
        ("안방 것도", "HassTurnOn", {"domain": "light", "name": "all", "area": "안방"}),
        ("에어컨도", "HassTurnOn", {"name": "에어컨", "domain": "climate"}),
        ("다시 꺼줘", "HassTurnOff", {"domain": "light", "name": "all", "area": "거실"}),
        ("그것도 꺼 줘", "HassTurnOff", {"domain": "light", "name": "all", "area": "거실"}),
        ("더 밝게", "HassLightSet",
         {"domain": "light", "name": "all", "area": "거실", "brightness_step": 20}),
        ("조금만 더 어둡게", "HassLightSet",
         {"domain": "light", "name": "all", "area": "거실", "brightness_step": -10}),
    ],
)  # fmt: skip
def test_a_follow_up_becomes_a_full_intent(text, intent, slots):
    found = resolve(lights_on(), text, 3 * S, HOME)
    assert found is not None
    assert (found.match.intent, found.match.slots) == (intent, slots)
    assert found.context.utterance_id == 7 and found.match.response


def test_a_known_brightness_is_stepped_to_a_level_within_bounds():
    uid, slots = 3, {"domain": "light", "name": "all", "area": "거실", "brightness": 90}
    committed = IntentCommitted(0, uid, "거실 불 90%로", "HassLightSet", slots)
    context = remember(committed, [ActionFinished(0, uid, "HassLightSet", "mqtt", "light.x")], 0)
    assert resolve(context, "더 밝게", S, HOME).match.slots["brightness"] == 100
    assert resolve(context, "좀 더 어둡게", S, HOME).match.slots["brightness"] == 70


def test_context_expires_and_zero_turns_follow_ups_off():
    context = lights_on(t_ns=5 * S)
    assert resolve(context, "안방도", 13 * S, HOME) is not None  # 8 s later: still on
    assert resolve(context, "안방도", 13 * S + 1, HOME) is None
    assert resolve(context, "안방도", 6 * S, HOME, context_s=0) is None
    assert resolve(None, "안방도", 0, HOME) is None


def test_only_a_command_that_acted_on_a_device_sets_context():
    asked = IntentCommitted(0, 1, "거실 불 켜져 있어?", "HassGetState", {"area": "거실"})
    answered = [ActionFinished(0, 1, "HassGetState", "local", "light.living_room")]
    assert remember(asked, answered, 0) is None  # a query, whatever it reports
    timer = IntentCommitted(0, 2, "5분 타이머", "HassStartTimer", {"minutes": 5})
    assert remember(timer, [ActionFinished(0, 2, "HassStartTimer", "local")], 0) is None
    turn_on = IntentCommitted(0, 3, "거실 불 켜줘", "HassTurnOn", {"area": "거실"})
    failed = [ActionFinished(0, 3, "HassTurnOn", "mqtt", "light.living_room", ok=False)]
    assert remember(turn_on, failed, 0) is None


def test_a_brightness_step_needs_lights_and_a_place_must_be_in_the_home():
    uid = 4
    committed = IntentCommitted(0, uid, "에어컨 꺼줘", "HassTurnOff", {"name": "에어컨"})
    acted = [ActionFinished(0, uid, "HassTurnOff", "mqtt", "climate.bedroom")]
    context = remember(committed, acted, 0)
    assert resolve(context, "더 밝게", S, HOME) is None
    assert resolve(context, "부엌도", S, HOME) is None
    # by name before, by place now: the same kind of device in that place
    found = resolve(context, "거실도", S, HOME)
    assert found.match.slots == {"domain": "climate", "name": "all", "area": "거실"}


# -- through the daemon, on a real broker ----------------------------------------------------


def daemon_for(tmp_path, mosquitto, extra: str = ""):
    clock = FakeClock(1_000 * S)
    config = write_config(tmp_path, mosquitto, BEDROOM_LIGHT + extra)
    return build(config, tmp_path / "reply.wav", clock=clock), clock


async def closing(daemon, coro):
    try:
        return await asyncio.wait_for(coro, 60)
    finally:
        await daemon.close()


def test_each_form_acts_on_the_right_device_and_names_the_turn_it_used(
    tmp_path, mosquitto, subscriber
):
    daemon, clock = daemon_for(tmp_path, mosquitto)
    events = daemon.subscribe(1024)

    async def turns():
        done = []
        for text in ["거실 불 켜줘", "안방도", "다시 꺼줘", "그거 켜줘", "더 밝게",
                     "거실 불 50%로 해줘", "좀 더 어둡게", "에어컨도"]:  # fmt: skip
            done.append(await daemon.say(text))
            clock.advance_ns(2 * S)
        return done

    done = asyncio.run(closing(daemon, turns()))
    published = [subscriber.next() for _ in range(7)]
    assert published[:4] == [
        ("sori/light/living_room/set", "ON"),
        ("sori/light/bedroom/set", "ON"),  # 안방도
        ("sori/light/bedroom/set", "OFF"),  # 다시 꺼줘: the last turn's target
        ("sori/light/bedroom/set", "ON"),  # 그거 켜줘
    ]
    assert published[4][0] == "sori/light/bedroom/set"  # 더 밝게: the level is not known
    assert json.loads(published[4][1])["brightness_step"] == 20
    assert published[5][0] == "sori/light/living_room/set"
    assert published[6][0] == "sori/light/living_room/set"  # 좀 더 어둡게: 50 → 30
    assert json.loads(published[6][1])["brightness"] == 30
    # 에어컨도 after a brightness: a level means nothing to another kind of device
    assert (done[7]["intent"], done[7]["actions"]) == (None, [])
    assert subscriber.messages.empty()
    ids = [t["turn"] for t in done]
    used = [t["context_utterance_id"] for t in done]
    assert used == [None, ids[0], ids[1], ids[2], ids[3], None, ids[5], None]
    assert all(t["tier"] == "preset" and t["actions"][0]["ok"] for t in done[:7])
    assert done[1]["intent"] == "HassTurnOn" and done[1]["response"] == "안방 조명을 켰어요"
    seen = []
    while not events.empty():
        seen.append(events.get_nowait())
    resolved = [e for e in seen if e["type"] == "FollowUpResolved"]
    assert [(e["text"], e["form"], e["context_utterance_id"]) for e in resolved[:2]] == [
        ("안방도", "also", ids[0]),
        ("다시 꺼줘", "again", ids[1]),
    ]
    assert resolved[0]["context_text"] == "거실 불 켜줘"


def test_nothing_acts_after_context_s(tmp_path, mosquitto, subscriber):
    daemon, clock = daemon_for(tmp_path, mosquitto, "\n[conversation]\ncontext_s = 3.0\n")

    async def turns():
        first = await daemon.say("거실 불 켜줘")
        clock.advance_ns(3 * S + 1)
        return first, [await daemon.say(t) for t in ["안방도", "다시 꺼줘", "더 밝게"]]

    first, late = asyncio.run(closing(daemon, turns()))
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
    assert all((t["intent"], t["tier"], t["actions"]) == (None, "none", []) for t in late)
    # no context left: "안방도" is not understood, "다시 꺼줘" is command words alone
    assert {t["response"] for t in late} <= {"죄송해요, 잘 모르겠어요.", MISHEARD["ko"]}
    assert subscriber.messages.empty()


def test_without_context_a_follow_up_does_nothing(tmp_path, mosquitto, subscriber):
    daemon, _ = daemon_for(tmp_path, mosquitto)

    async def turns():
        return [await daemon.say(t) for t in ["안방도", "다시 꺼줘", "안방", "다시"]]

    turns_done = asyncio.run(closing(daemon, turns()))
    assert all(t["intent"] is None and t["actions"] == [] for t in turns_done)
    with pytest.raises(queue.Empty):  # nothing was published
        subscriber.next(timeout_s=0.5)


def test_a_query_does_not_set_context_and_a_follow_up_after_it_acts_on_nothing(
    tmp_path, mosquitto, subscriber
):
    config = write_config(tmp_path, mosquitto, BEDROOM_LIGHT)
    # Home Assistant's pack knows "켜져 있어?"
    config.write_text(config.read_text().replace("home_assistant = false", "home_assistant = true"))
    daemon = build(config, tmp_path / "reply.wav", clock=FakeClock())

    async def turns():
        asked = await daemon.say("거실 불 켜져 있어?")
        alone = await daemon.say("다시 꺼줘")
        command = await daemon.say("거실 불 켜줘")
        await daemon.say("거실 온도 몇 도야")
        return asked, alone, command, await daemon.say("안방도")

    asked, alone, command, after = asyncio.run(closing(daemon, turns()))
    assert asked["intent"] == "HassGetState" and alone["intent"] is None
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
    assert after["intent"] is None and after["actions"] == []
    assert subscriber.messages.empty()


def test_a_heard_follow_up_acts_too(tmp_path, mosquitto, subscriber):
    daemon, clock = daemon_for(tmp_path, mosquitto)

    async def heard():
        yield IntentCommitted(
            clock.now_ns(), 1, "거실 불 켜줘", "HassTurnOn",
            {"domain": "light", "name": "all", "area": "거실"}, 1.0, "거실 조명을 켰어요",
        )  # fmt: skip
        await daemon.drain()  # the first turn acts before the follow-up is heard
        clock.advance_ns(2 * S)
        yield IntentNotRecognized(clock.now_ns(), 2, "안방 것도")

    asyncio.run(closing(daemon, daemon.listen(heard())))
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
    assert subscriber.next() == ("sori/light/bedroom/set", "ON")
    assert daemon.turns_done == 2
