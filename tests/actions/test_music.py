"""Music with no player named ("음악 틀어줘", "다음 곡", "음악 꺼줘") plays on the configured
player ([actions] media_player), through Home Assistant on loopback or a real mosquitto;
with none configured nothing is sent and the speaker says so."""

from __future__ import annotations

import asyncio
import json

import pytest
from recorder import Recorder

from daemon_kit import build, write_config
from sori.core.config import parse_config
from sori.core.errors import ConfigError

PLAYER = """
[[home.devices]]
id = "media_player.kitchen_speaker"
name = "주방 스피커"
area = "living_room"
handler = "{handler}"

[actions]
media_player = "media_player.kitchen_speaker"
{content}
"""


async def turns(daemon, *texts):
    try:
        return [await asyncio.wait_for(daemon.say(t), 30) for t in texts]
    finally:
        await daemon.close()


def test_music_goes_to_the_configured_player_through_home_assistant(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_HA_TOKEN", "t")
    ha = Recorder()
    extra = PLAYER.format(handler="home_assistant", content='music_content_id = "FV:2/5"')
    extra += f'\n[home_assistant]\nurl = "{ha.url}"\ntoken_env = "TEST_HA_TOKEN"\n'
    extra += '\n[state]\nsource = "none"\n'
    try:
        daemon = build(write_config(tmp_path, "mqtt://127.0.0.1:1", extra), tmp_path / "r.wav")
        said = asyncio.run(turns(daemon, "음악 틀어줘", "다음 곡", "음악 꺼줘", "노래 틀어줘"))
    finally:
        ha.close()
    calls = [(path, body) for path, _, body in ha.requests]
    speaker = {"entity_id": "media_player.kitchen_speaker"}
    play = (
        "/api/services/media_player/play_media",
        {**speaker, "media_content_id": "FV:2/5", "media_content_type": "music"},
    )
    assert calls == [
        play,
        ("/api/services/media_player/media_next_track", speaker),
        ("/api/services/media_player/media_pause", speaker),
        play,
    ]
    assert [t["intent"] for t in said] == [
        "HassMediaSearchAndPlay", "HassMediaNext", "HassMediaPause", "HassMediaSearchAndPlay",
    ]  # fmt: skip
    assert said[0]["response"] == "음악을 틀었어요"
    assert all(a["ok"] for t in said for a in t["actions"])


def test_music_goes_to_an_mqtt_player_and_resumes_without_content(tmp_path, mosquitto, subscriber):
    extra = PLAYER.format(handler="mqtt", content="")
    daemon = build(write_config(tmp_path, mosquitto, extra), tmp_path / "r.wav")
    play, pause = asyncio.run(turns(daemon, "노래 틀어줘", "음악 멈춰"))
    topic, body = subscriber.next()
    assert topic == "sori/media_player/kitchen_speaker/set"
    assert json.loads(body) == {
        "intent": "HassMediaSearchAndPlay",
        "entity_id": "media_player.kitchen_speaker",
        "media_class": "music",
    }
    topic, body = subscriber.next()
    assert json.loads(body)["intent"] == "HassMediaPause"
    assert play["actions"][0]["target"] == "media_player.kitchen_speaker"
    assert pause["actions"][0]["ok"]


def test_without_a_player_nothing_is_sent_and_the_speaker_says_so(tmp_path, mosquitto, subscriber):
    daemon = build(write_config(tmp_path, mosquitto), tmp_path / "r.wav")
    music, after = asyncio.run(turns(daemon, "음악 틀어줘", "에어컨 꺼줘"))
    # one publisher, one broker: had anything been sent for the music, it would come first
    assert subscriber.next() == ("sori/climate/bedroom/set", "OFF")
    assert [a["ok"] for a in music["actions"]] == [False]
    assert "actions.media_player" in music["actions"][0]["detail"]
    assert music["response"].startswith("음악을 틀 기기가 정해져 있지 않아요")
    assert after["actions"][0]["ok"]


@pytest.mark.parametrize(
    ("player", "error"),
    [
        ("light.living_room", "must be a media_player entity id"),
        ("media_player.nowhere", "is not one of home.devices' ids"),
    ],
)
def test_a_player_that_is_not_a_media_player_of_the_home_is_refused(player, error):
    data = {
        "home": {"devices": [{"id": "light.living_room", "name": "거실 조명"}]},
        "actions": {"media_player": player},
    }
    with pytest.raises(ConfigError, match=f"actions.media_player = '{player}' {error}"):
        parse_config(data, "sori.toml")
