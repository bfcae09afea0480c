"""Every front door understands a sentence alike: `sori intent` and `sori ask` (run as a
user runs them), `POST /say` on a real daemon on loopback, and Wyoming `recognize` with
the wyoming package's own client. A device the home lacks is named and command-word
salad gets "잘 못 들었어요", both at once and without the language model."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("wyoming")

from wyoming.intent import Intent, NotRecognized, Recognize  # noqa: E402

from daemon_kit import build, load, serve_api, write_config  # noqa: E402
from sori.serving.wyoming_server import load_services  # noqa: E402
from sori.thinking.base import Ask, Judgment, Token  # noqa: E402
from sori.thinking.router import Router, RouterSettings  # noqa: E402
from wyoming_kit import serving, talk  # noqa: E402

COMMAND = "거실 불 꺼 줘"
SEVERAL = "거실 불 켜고 에어컨 꺼 줘"
MISSING = "세탁기 돌려 줘"
SALAD = "줘 꺼 주세요 꺼 줘"
WEATHER = "오늘 날씨 어때?"
SENTENCES = (COMMAND, SEVERAL, MISSING, SALAD, WEATHER)

REPLIES = {
    MISSING: "세탁기는 연결돼 있지 않아요.",
    SALAD: "잘 못 들었어요. 다시 말씀해 주세요.",
    WEATHER: "날씨를 알려 줄 곳이 설정돼 있지 않아요.",  # this home has no weather entity
}
INTENTS = {
    COMMAND: "HassTurnOff",
    SEVERAL: "HassTurnOn+HassTurnOff",
    MISSING: None,
    SALAD: None,
    WEATHER: "HassGetWeather",
}


class LoudLocal:
    """A local tier that counts its calls and fails loudly: it must not be asked."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def judge(self, ask: Ask) -> Judgment:
        self.calls.append(ask.text)
        raise RuntimeError(f"the local model was asked {ask.text!r}")

    async def stream(self, ask: Ask) -> AsyncIterator[Token]:
        self.calls.append(ask.text)
        raise RuntimeError(f"the local model was asked {ask.text!r}")
        yield Token("")  # pragma: no cover


def sori(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sori", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module", name="config_path")
def config_path_fixture(tmp_path_factory, mosquitto):
    return write_config(tmp_path_factory.mktemp("doors"), mosquitto)


def by_intent(config_path) -> dict[str, tuple]:
    done = sori("intent", "--config", str(config_path), "--json", *SENTENCES)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return {r["text"]: (r["intent"], r["response"]) for r in lines}


def by_ask(config_path) -> dict[str, tuple]:
    found = {}
    for text in SENTENCES[1:]:  # a plain command goes to the router's presets, as before
        done = sori("ask", "--config", str(config_path), "--json", text)
        record = json.loads(done.stdout.splitlines()[-1])
        found[text] = (record["intent"], record["answer"])
    return found


def by_say(config_path, tmp_path) -> tuple[dict[str, tuple], LoudLocal]:
    daemon = build(config_path, tmp_path / "reply.wav")
    local = LoudLocal()
    daemon.thinker = Router(None, local, None, RouterSettings(language="ko"))

    async def scenario(client, api) -> dict[str, tuple]:
        found = {}
        for text in SENTENCES:
            said = await client.post("/say", json={"text": text})
            assert said.status_code == 200, said.text
            turn = said.json()
            found[text] = (turn["intent"], turn["response"])
        return found

    return serve_api(daemon, scenario), local


def by_wyoming(config_path) -> dict[str, tuple]:
    from sori.assemble.state import build_answerer

    config, home = load(config_path)
    found = {}
    services = load_services(config, home)
    services.answerer = build_answerer(config, home)  # as `sori wyoming` serves, and closes
    try:
        with serving(services) as server:
            for text in SENTENCES:
                last = ("intents-stop",) if text == SEVERAL else ("intent", "not-recognized")
                got = talk(server, [Recognize(text=text)], last)
                intents = [Intent.from_event(e) for e in got if Intent.is_type(e.type)]
                if intents:  # several commands: intents-start, one intent each, intents-stop
                    names = "+".join(i.name for i in intents)
                    found[text] = (names, " ".join(i.text for i in intents))
                else:
                    found[text] = (None, NotRecognized.from_event(got[-1]).text)
    finally:
        asyncio.run(services.answerer.close())
    return found


def test_every_front_door_commits_the_same_intents_and_replies(config_path, tmp_path):
    said, local = by_say(config_path, tmp_path)
    doors = {
        "sori intent": by_intent(config_path),
        "sori ask": by_ask(config_path),
        "/say": said,
        "wyoming": by_wyoming(config_path),
    }
    for door, found in doors.items():
        for text, (intent, reply) in found.items():
            assert intent == INTENTS[text], (door, text, intent, reply)
            if text in REPLIES:
                assert reply == REPLIES[text], (door, text, reply)
    assert local.calls == []  # the daemon's model was never asked


def test_a_missing_device_of_a_matched_command_is_named_not_acted_on(tmp_path, mosquitto):
    """ "세탁기" is no device of this home, and "에어컨" is one that a home without it
    lacks: the daemon names it instead of "could not control the device"."""
    path = write_config(tmp_path, mosquitto)
    path.write_text(
        path.read_text(encoding="utf-8").replace('id = "climate.bedroom"', 'id = "fan.bedroom"')
        .replace('name = "에어컨"', 'name = "선풍기"'),
        encoding="utf-8",
    )  # fmt: skip
    done = sori("intent", "--config", str(path), "에어컨 켜줘")
    assert done.stdout.split("\t")[1:] == ["(no match)", "에어컨은 연결돼 있지 않아요.\n"]
    said, local = by_say_one(path, tmp_path, "에어컨 켜줘")
    assert (said["intent"], said["response"], said["actions"]) == (
        None, "에어컨은 연결돼 있지 않아요.", []
    )  # fmt: skip
    assert said["reason"] == "no 에어컨 in the home"
    assert local.calls == []


def by_say_one(config_path, tmp_path, text: str) -> tuple[dict, LoudLocal]:
    daemon = build(config_path, tmp_path / "reply.wav")
    local = LoudLocal()
    daemon.thinker = Router(None, local, None, RouterSettings(language="ko"))

    async def scenario(client, api) -> dict:
        said = await client.post("/say", json={"text": text})
        assert said.status_code == 200, said.text
        return said.json()

    return serve_api(daemon, scenario), local
