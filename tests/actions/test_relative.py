"""Relative changes carried out (issue 27): a brightness step becomes a level per light,
read through the state source (Home Assistant's 0-255, Sori's own percent, a template's
0-255) or, unknown, from the documented default level; a volume step goes to Home
Assistant's own volume_up / volume_down; the replies say what was done."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from sori.acting.actions import ActionRegistry, LocalHandler, Route, Timers
from sori.acting.actions.base import Command, Result
from sori.acting.actions.home_assistant import service_call
from sori.acting.actions.levels import (
    DEFAULT_LEVEL_PCT,
    level_of,
    said,
    step_percent,
    stepped,
)
from sori.core.events import IntentCommitted
from sori.core.home import Area, Device, Home

LIVING = Device("light.living_room", "거실 조명", "light", "living_room")
BEDROOM = Device("light.bedroom", "안방 조명", "light", "bedroom")
KITCHEN = Device("light.kitchen", "주방 조명", "light", "kitchen")
TV = Device("media_player.tv", "티비", "media_player", "living_room")
HOME = Home(
    areas=(Area("living_room", "거실"), Area("bedroom", "안방"), Area("kitchen", "주방")),
    devices=(LIVING, BEDROOM, KITCHEN, TV),
    speaker_area="living_room",
)


@dataclass
class Reading:
    entity_id: str
    state: str
    attributes: dict[str, Any] = field(default_factory=dict)
    source: str = "mqtt"


class FakeState:
    """A state source with fixed readings; a device not listed is not covered."""

    name = "fake"

    def __init__(self, readings: dict[str, Reading | Exception | None]) -> None:
        self.readings = readings
        self.asked: list[str] = []

    def covers(self, device: Device) -> bool:
        return device.id in self.readings

    async def read(self, device: Device):
        self.asked.append(device.id)
        found = self.readings[device.id]
        if isinstance(found, Exception):
            raise found
        return found


class Sent:
    """Records each command it is handed."""

    name = "sent"

    def __init__(self) -> None:
        self.commands: list[Command] = []

    async def handle(self, command: Command) -> Result:
        self.commands.append(command)
        return Result(command.entity_id)

    async def close(self) -> None:
        return None


def registry(state, routes=None, step=20) -> tuple[ActionRegistry, Sent]:
    sent = Sent()
    reg = ActionRegistry(
        HOME, {"sent": sent}, LocalHandler(Timers()), routes or {}, "sent", state=state,
        brightness_step=step,
    )  # fmt: skip
    return reg, sent


def commit(text: str, intent: str, **slots) -> IntentCommitted:
    return IntentCommitted(0, 1, text, intent, slots)


# -- the level of a light, as a state source reports it --------------------------------------


def test_a_level_is_read_in_the_scale_its_source_uses():
    assert level_of(Reading("l", "on", {"brightness": 128}, "home_assistant")) == 50
    assert level_of(Reading("l", "on", {"brightness": 255}, "home_assistant")) == 100
    assert level_of(Reading("l", "ON", {"brightness": 40})) == 40  # Sori's MQTT: percent
    assert level_of(Reading("l", "ON", {"brightness": 127}), scale_255=True) == 50
    assert level_of(Reading("l", "on", {"brightness_pct": 35, "brightness": 1})) == 35
    assert level_of(Reading("l", "off", {"brightness": 200})) == 0
    assert level_of(Reading("l", "ON")) is None  # on, at a level nobody said
    assert level_of(Reading("l", "on", {"brightness": "bright"})) is None
    assert level_of(None) is None


def test_a_step_from_the_level_stays_within_1_and_100():
    assert (stepped(40, 20), stepped(90, 20), stepped(10, -20)) == (60, 100, 1)
    assert stepped(None, 20) == DEFAULT_LEVEL_PCT + 20 == 70
    assert stepped(None, -20) == 30
    assert stepped(0, 20) == 20  # off: brighter turns it on at one step
    assert stepped(0, -20) is None  # off: darker leaves it off


def test_the_step_size_comes_from_the_config_and_little_halves_it():
    assert step_percent({"brightness_step": "up"}, 20) == 20
    assert step_percent({"brightness_step": "down"}, 20) == -20
    assert step_percent({"brightness_step": "down", "amount": "little"}, 20) == -10
    assert step_percent({"brightness_step": "up"}, 30) == 30
    assert step_percent({"brightness_step": -10}, 20) == -10  # a follow-up's own number
    assert step_percent({"brightness_step": "sideways"}, 20) == 0


def test_the_reply_names_the_level_or_the_step():
    assert said("ko", ["거실 조명"], [70], 20) == "거실 조명 밝기를 70%로 올렸어요"
    assert said("ko", ["거실 조명", "안방 조명"], [30, 30], -20) == "조명 2개 밝기를 30%로 내렸어요"
    assert said("ko", ["거실 조명", "안방 조명"], [60, 70], 20) == "조명 2개 밝기를 20%씩 올렸어요"
    assert said("ko", ["안방 조명"], [None], -20) == "안방 조명은 꺼져 있어서 그대로 뒀어요"
    assert said("en", ["desk lamp"], [70], 20) == "Turned the desk lamp up to 70%."


# -- the registry makes each light's level ----------------------------------------------------


def test_every_light_steps_from_its_own_level():
    state = FakeState({
        "light.living_room": Reading("light.living_room", "on", {"brightness": 102},
                                     "home_assistant"),
        "light.bedroom": Reading("light.bedroom", "off"),
        "light.kitchen": None,  # covered, no message yet
    })  # fmt: skip
    reg, sent = registry(state)
    done = asyncio.run(
        reg.act(commit("모든 불 밝게 해 줘", "HassLightSet", domain="light", name="all",
                       brightness_step="up"))
    )  # fmt: skip
    levels = {c.entity_id: c.slots["brightness"] for c in sent.commands}
    assert levels == {"light.living_room": 60, "light.bedroom": 20, "light.kitchen": 70}
    assert all(c.slots["brightness_step"] == 20 for c in sent.commands)
    assert all(a.ok for a in done) and len(done) == 3
    assert done[0].speech == "조명 3개 밝기를 20%씩 올렸어요"


def test_darker_leaves_a_light_that_is_off_alone_and_says_so():
    state = FakeState({"light.bedroom": Reading("light.bedroom", "OFF")})
    reg, sent = registry(state)
    done = asyncio.run(
        reg.act(commit("안방 불 어둡게", "HassLightSet", domain="light", name="안방 조명",
                       brightness_step="down"))
    )  # fmt: skip
    assert sent.commands == []
    assert [(a.target, a.ok, a.detail) for a in done] == [("light.bedroom", True, "off; left off")]
    assert done[0].speech == "안방 조명은 꺼져 있어서 그대로 뒀어요"


def test_without_a_state_source_the_default_level_is_stepped_from():
    reg, sent = registry(None, step=25)
    done = asyncio.run(
        reg.act(commit("불 조금만 어둡게", "HassLightSet", domain="light", name="all",
                       area="거실", brightness_step="down", amount="little"))
    )  # fmt: skip
    (command,) = sent.commands
    assert command.slots["brightness"] == DEFAULT_LEVEL_PCT - 12 == 38  # half of 25, rounded
    assert "amount" not in command.slots  # folded into the step
    assert done[0].speech == "거실 조명 밝기를 38%로 내렸어요"


def test_a_failing_source_or_a_template_on_0_255_is_read_right():
    state = FakeState({
        "light.living_room": RuntimeError("broker gone"),
        "light.bedroom": Reading("light.bedroom", "ON", {"brightness": 191}),
    })  # fmt: skip
    z2m = {"light.bedroom": Route("sent", payload=(("brightness", "{brightness_255}"),))}
    reg, sent = registry(state, routes=z2m)
    asyncio.run(
        reg.act(commit("불 다 밝게", "HassLightSet", domain="light", name="all",
                       brightness_step="up"))
    )  # fmt: skip
    levels = {c.entity_id: c.slots["brightness"] for c in sent.commands}
    assert levels["light.living_room"] == 70  # could not read: the default level
    assert levels["light.bedroom"] == 95  # 191/255 = 75 %, + 20


def test_a_level_said_outright_is_not_read():
    state = FakeState({"light.living_room": Reading("light.living_room", "on", {"brightness": 9})})
    reg, sent = registry(state)
    asyncio.run(reg.act(commit("거실 불 50%", "HassLightSet", domain="light", name="all",
                               area="거실", brightness=50)))  # fmt: skip
    assert state.asked == []
    assert sent.commands[0].slots == {"domain": "light", "name": "all", "area": "거실",
                                      "brightness": 50}  # fmt: skip


# -- Home Assistant's services ---------------------------------------------------------------


def test_home_assistant_gets_a_level_or_a_step_never_both():
    computed = Command("HassLightSet", {"brightness": 70, "brightness_step": 20}, LIVING)
    assert service_call(computed) == (
        "light", "turn_on", {"entity_id": "light.living_room", "brightness_pct": 70},
    )  # fmt: skip
    step_only = Command("HassLightSet", {"brightness_step": -20}, LIVING)
    assert service_call(step_only)[2] == {
        "entity_id": "light.living_room", "brightness_step_pct": -20,
    }  # fmt: skip


@pytest.mark.parametrize("way", ["up", "down"])
def test_a_tvs_volume_step_is_home_assistants_own(way):
    command = Command("HassSetVolumeRelative", {"volume_step": way, "domain": "media_player"}, TV)
    assert service_call(command) == (
        "media_player", f"volume_{way}", {"entity_id": "media_player.tv"},
    )  # fmt: skip


def test_a_named_timer_is_named_in_the_reply():
    async def main():
        local = LocalHandler(Timers(autorun=False))
        started = await local.handle(Command("HassStartTimer", {"minutes": 3, "name": "라면"}))
        cancelled = await local.handle(Command("HassCancelTimer", {"name": "라면"}))
        return started.speech, cancelled.speech

    assert asyncio.run(main()) == ("라면 삼 분 타이머를 시작했어요.", "라면 타이머를 취소했어요.")
