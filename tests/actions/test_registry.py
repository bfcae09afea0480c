from __future__ import annotations

import asyncio
import time

from sori.acting.actions import ActionRegistry, LocalHandler, Route, Timers, resolve
from sori.acting.actions.base import Result
from sori.acting.actions.dry_run import DryRunHandler
from sori.core.events import IntentCommitted
from sori.core.home import Area, Device, Home

HOME = Home(
    areas=(Area("living_room", "거실"), Area("bedroom", "안방", ("침실",))),
    devices=(
        Device("light.living_room", "거실 조명", "light", "living_room", ("거실 등",)),
        Device("light.bedroom", "안방 조명", "light", "bedroom"),
        Device("climate.bedroom", "에어컨", "climate", "bedroom"),
        Device("cover.curtain", "커튼", "cover", "living_room", device_class="curtain"),
    ),
    speaker_area="living_room",
)


def ids(devices):
    return [d.id for d in devices]


def test_resolve_by_name_area_and_domain():
    assert ids(resolve(HOME, {"name": "거실 등"})) == ["light.living_room"]
    assert ids(resolve(HOME, {"area": "침실", "domain": "light"})) == ["light.bedroom"]
    assert ids(resolve(HOME, {"domain": "light"})) == ["light.living_room"]  # speaker's room
    assert ids(resolve(HOME, {"domain": "climate"})) == ["climate.bedroom"]  # only one
    assert ids(resolve(HOME, {"area": "부엌", "domain": "light"})) == []
    assert ids(resolve(HOME, {"name": "all", "area": "안방", "domain": "light"})) == [
        "light.bedroom"
    ]
    assert ids(resolve(HOME, {"domain": "cover", "device_class": "blind"})) == []


class Slow:
    name = "slow"

    async def handle(self, command):
        await asyncio.sleep(30)
        return Result("never")

    async def close(self):
        pass


class Broken:
    name = "broken"

    async def handle(self, command):
        raise RuntimeError("bulb exploded")

    async def close(self):
        pass


def commit(intent, **slots):
    return IntentCommitted(t_ns=0, utterance_id=7, text="...", intent=intent, slots=slots)


def registry(**kw):
    return ActionRegistry(
        HOME,
        {"dry_run": DryRunHandler(), "slow": Slow(), "broken": Broken()},
        LocalHandler(Timers()),
        **kw,
    )


def test_each_device_goes_to_its_own_handler():
    reg = registry(routes={"light.bedroom": Route("broken")})
    done = asyncio.run(reg.act(commit("HassTurnOn", domain="light", area="안방")))
    assert [(a.handler, a.target, a.ok) for a in done] == [("broken", "light.bedroom", False)]
    assert done[0].detail == "bulb exploded"
    assert done[0].utterance_id == 7
    done = asyncio.run(reg.act(commit("HassTurnOn", name="거실 조명")))
    assert [(a.handler, a.ok) for a in done] == [("dry_run", True)]


def test_a_hung_handler_times_out_without_blocking():
    reg = registry(routes={"light.living_room": Route("slow")}, timeout_s=0.1)
    done = asyncio.run(asyncio.wait_for(reg.act(commit("HassTurnOn", name="거실 조명")), 10))
    assert done[0].ok is False
    assert "took over 0.1 s" in done[0].detail


def test_unknown_handler_and_missing_device_are_failures():
    reg = registry(routes={"light.living_room": Route("zigbee")})
    (done,) = asyncio.run(reg.act(commit("HassTurnOn", name="거실 조명")))
    assert not done.ok and "zigbee" in done.detail
    (done,) = asyncio.run(reg.act(commit("HassTurnOff", area="부엌", domain="light")))
    assert not done.ok and done.handler == "none"
    assert asyncio.run(reg.act(commit("HassGetWeather"))) == []


def test_time_is_answered_locally():
    (done,) = asyncio.run(registry().act(commit("HassGetCurrentTime")))
    assert done.handler == "local" and done.ok
    assert done.speech.startswith("지금은")


def test_reload_swaps_home_and_routes():
    reg = registry()
    new_home = Home(devices=(Device("switch.fan", "선풍기", "switch"),))
    reg.reload(new_home, {"switch.fan": Route("broken")})
    (done,) = asyncio.run(reg.act(commit("HassTurnOn", name="선풍기")))
    assert (done.handler, done.target) == ("broken", "switch.fan")


class Recording:
    """A device handler that records every command it is given."""

    name = "recording"

    def __init__(self):
        self.commands = []

    async def handle(self, command):
        self.commands.append(command)
        return Result("sent")

    async def close(self):
        pass


def test_a_question_sends_nothing_to_any_device():
    handler = Recording()
    reg = ActionRegistry(HOME, {"recording": handler}, LocalHandler(Timers()))
    reg.default_handler = "recording"
    questions = [
        commit("HassClimateGetTemperature", area="거실"),
        commit("HassGetState", name="거실 조명", domain="light", state="on"),
        commit("HassGetState", area="거실"),
        commit("HassGetWeather", area="거실"),
        commit("HassNevermind", area="거실"),
    ]
    for question in questions:
        assert asyncio.run(reg.act(question)) == []
        assert reg.commands(question) == []
    assert handler.commands == []
    (done,) = asyncio.run(reg.act(commit("HassTurnOff", name="거실 조명")))
    assert done.ok and [c.entity_id for c in handler.commands] == ["light.living_room"]


def test_the_deadline_reaches_the_handler():
    handler = Recording()
    reg = ActionRegistry(HOME, {"recording": handler}, LocalHandler(Timers()), timeout_s=2.0)
    reg.default_handler = "recording"
    before = time.monotonic_ns()
    asyncio.run(reg.act(commit("HassTurnOn", name="거실 조명")))
    (command,) = handler.commands
    assert before + 2e9 <= command.deadline_ns <= time.monotonic_ns() + 2e9
    assert 0 < command.remaining_s(99) <= 2.0
