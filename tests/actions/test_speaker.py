"""The speaker's own volume through amixer. No ALSA card exists on the test machine (no
/proc/asound, snd-dummy cannot load in the container), so amixer is a recorded interface
(fake_amixer.py) run as a real subprocess."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import fake_amixer
import pytest

from sori.acting.actions import ActionRegistry, LocalHandler, Timers
from sori.acting.actions.base import Command
from sori.acting.actions.speaker import Mixer, SpeakerHandler
from sori.core.errors import BackendError
from sori.core.events import IntentCommitted
from sori.core.home import Home


@pytest.fixture
def amixer(tmp_path, monkeypatch):
    return fake_amixer.install(tmp_path, monkeypatch, "hw:1", "Speaker")


def level(state: Path) -> tuple[int, bool]:
    data = json.loads(state.read_text())
    return data["level"], data["on"]


def handler(program, step=10) -> SpeakerHandler:
    return SpeakerHandler(Mixer("hw:1", "Speaker", str(program)), step)


def test_absolute_relative_and_mute_change_the_mixer(amixer):
    program, state = amixer
    speaker = handler(program)

    async def main():
        said = [await speaker.handle(Command("HassSetVolume", {"volume_level": 50}))]
        assert level(state) == (50, True)
        said.append(await speaker.handle(Command("HassSetVolumeRelative", {"volume_step": "up"})))
        assert level(state) == (60, True)
        slots = {"volume_step": "down", "amount": "little"}
        said.append(await speaker.handle(Command("HassSetVolumeRelative", slots)))
        assert level(state) == (55, True)
        said.append(await speaker.handle(Command("HassMediaPlayerMute", {})))
        assert level(state) == (55, False)
        said.append(await speaker.handle(Command("HassMediaPlayerUnmute", {})))
        assert level(state) == (55, True)
        return [r.speech for r in said]

    assert asyncio.run(main()) == [
        "볼륨을 50%로 맞췄어요.", "볼륨을 60%로 맞췄어요.", "볼륨을 55%로 맞췄어요.",
        "음소거했어요.", "음소거를 풀었어요.",
    ]  # fmt: skip


def test_volume_stays_within_0_and_100(amixer):
    program, state = amixer
    speaker = handler(program, step=50)
    for _ in range(3):
        asyncio.run(speaker.handle(Command("HassSetVolumeRelative", {"volume_step": "up"})))
    assert level(state) == (100, True)


def test_a_wrong_control_names_the_fix(amixer):
    program, _ = amixer
    speaker = SpeakerHandler(Mixer("hw:1", "Master", str(program)))
    with pytest.raises(BackendError, match="mixer_control"):
        asyncio.run(speaker.handle(Command("HassSetVolumeRelative", {"volume_step": "up"})))
    missing = SpeakerHandler(Mixer("hw:1", "Speaker", "/nonexistent/amixer"))
    with pytest.raises(BackendError, match="alsa-utils"):
        asyncio.run(missing.handle(Command("HassSetVolume", {"volume_level": 5})))


def test_the_speakers_volume_goes_to_the_speaker_and_a_tvs_to_the_tv(amixer):
    program, state = amixer
    from sori.core.home import Device

    tv = Device("media_player.tv", "티비", "media_player", "living_room")
    home = Home(devices=(tv,))
    registry = ActionRegistry(
        home, {"speaker": handler(program), "dry_run": _Recorder()}, LocalHandler(Timers())
    )
    own = IntentCommitted(0, 1, "볼륨 50으로", "HassSetVolume", {"volume_level": 50})
    tvs = IntentCommitted(
        0, 2, "티비 볼륨 20", "HassSetVolume",
        {"volume_level": 20, "domain": "media_player", "name": "all"},
    )  # fmt: skip
    first = asyncio.run(registry.act(own))
    assert [(a.handler, a.ok) for a in first] == [("speaker", True)]
    assert level(state) == (50, True)
    second = asyncio.run(registry.act(tvs))
    assert [(a.handler, a.target) for a in second] == [("dry_run", "media_player.tv")]
    assert level(state) == (50, True)


class _Recorder:
    name = "dry_run"

    async def handle(self, command):
        from sori.acting.actions.base import Result

        return Result(command.entity_id)

    async def close(self):
        return None
