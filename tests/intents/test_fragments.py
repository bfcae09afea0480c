"""A subordinate clause with no request after it is no command (issue 25, item 10).

Korean connective endings (-아도/-어도 "even if", -(으)면 "if", -(으)면서 "while",
-는데/-은데 "and so", -(으)니까 "because", -지만 "but", -거든 "if", -다가 "while
doing", -더라도 "even though", -아서/-어서 "so") attach to the verb and leave its clause
hanging: "거실 불 켜도" is the start of a sentence ("even if the light is on, ..."),
never a request. A wish ("-(으)면 좋겠어", "I'd like the light on") is a polite request.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_kit import build, write_config

EXAMPLE = str(Path(__file__).resolve().parents[2] / "device" / "sori.example.toml")

FRAGMENTS = [
    "거실 불 켜도",
    "거실 불 꺼도",
    "창문 열어도",
    "커튼 닫아도",
    "불 켜도요",
    "거실 불 켜다가",
    "불 켜면",
    "거실 불 켜면",
    "불 켜 주면",
    "에어컨 끄면",
    "창문 닫으면",
    "거실 불 켜면서",
    "에어컨 켜는데",
    "커튼 닫는데",
    "불 켜니까",
    "에어컨 켜으니까",
    "거실 불 켜지만",
    "거실 불 켜거든",
    "거실 불 켜거든요",
    "불 켜더라도",
    "불 켜서",
    "에어컨 켜려면",
    "거실 불 켜는데도",
]

COMMANDS = {
    "불 켜줘": "HassTurnOn",
    "거실 불 켜 줄래": "HassTurnOn",
    "거실 불 켜": "HassTurnOn",
    "불 켜면 좋겠어": "HassTurnOn",
    "불 켜 주면 좋겠어": "HassTurnOn",
    "거실 불 끄면 좋겠어요": "HassTurnOff",
    "창문 닫으면 좋겠어": "HassTurnOff",
    "창문 열면 좋겠어": "HassTurnOn",
    "불 켰으면 좋겠어": "HassTurnOn",
    "불 꺼 줬으면 좋겠어": "HassTurnOff",
    "에어컨 26도": "HassClimateSetTemperature",
    "에어컨 26도로 맞춰": "HassClimateSetTemperature",
    "에어컨 온도 26도로 해줘": "HassClimateSetTemperature",
    "티비 꺼줘": "HassTurnOff",
}


@pytest.mark.parametrize("text", FRAGMENTS)
def test_a_clause_left_hanging_is_no_command(understand, text):
    assert understand(text) == (None, {})


@pytest.mark.parametrize(("text", "intent"), COMMANDS.items())
def test_requests_with_like_syllables_are_still_commands(understand, text, intent):
    assert understand(text)[0] == intent


def test_no_phrase_the_packs_say_is_taken_for_a_fragment(presets):
    """Every command the packs teach speech recognition still matches (none ends so)."""
    phrases = presets.phrases()
    assert len(phrases) > 100
    missed = [p for p in phrases if presets.match(p) is None]
    assert missed == []


def test_sori_intent_prints_no_match_for_a_fragment():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sori",
            "intent",
            "--config",
            EXAMPLE,
            "거실 불 켜도",
            "거실 불 켜줘",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "거실 불 켜도\t(no match)"
    assert "HassTurnOn" in lines[1]


def test_the_daemon_sends_nothing_for_a_fragment_alone_or_in_a_list(
    tmp_path, mosquitto, subscriber
):
    daemon = build(write_config(tmp_path, mosquitto), tmp_path / "reply.wav")

    async def turns():
        try:
            said = [await daemon.say(t) for t in ("거실 불 켜도", "거실 불 켜고 에어컨 꺼도")]
            await daemon.say("에어컨 꺼줘")
            return said
        finally:
            await daemon.close()

    alone, in_list = asyncio.run(asyncio.wait_for(turns(), 60))
    # one publisher, one broker: anything the fragments sent would arrive first
    assert subscriber.next() == ("sori/climate/bedroom/set", "OFF")
    assert alone["actions"] == [] and in_list["actions"] == []
    assert in_list["response"] == "'에어컨 꺼도' 부분을 이해하지 못해서 아무것도 하지 않았어요."
