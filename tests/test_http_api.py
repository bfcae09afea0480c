"""The local HTTP API against a real daemon: health, metrics, say, server-sent events."""

from __future__ import annotations

import pytest

from daemon_kit import build, events_of_turn, serve_api, write_config

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def api_run(tmp_path, mosquitto):
    """Run `scenario(client, api)` against a started API; returns what it returns."""

    def run(scenario):
        return serve_api(build(write_config(tmp_path, mosquitto), tmp_path / "reply.wav"), scenario)

    return run


def test_health(api_run):
    async def scenario(client, api):
        return await client.get("/health")

    reply = api_run(scenario)
    assert reply.status_code == 200
    assert reply.json()["status"] == "ok"


def test_say_returns_the_turn_and_metrics_count_it(api_run, subscriber):
    async def scenario(client, api):
        said = await client.post("/say", json={"text": "거실 불 켜줘"})
        metrics = await client.get("/metrics")
        return said, metrics

    said, metrics = api_run(scenario)
    assert said.status_code == 200
    turn = said.json()
    assert (turn["intent"], turn["tier"]) == ("HassTurnOn", "preset")
    assert turn["actions"][0]["ok"]
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert 'sori_turns_total{tier="preset"} 1' in text
    assert 'sori_actions_total{handler="mqtt",outcome="ok"} 1' in text
    assert 'sori_stage_seconds_count{stage="first_audio"} 1' in text
    assert "# TYPE sori_edge_ttfb_seconds histogram" in text


def test_metrics_show_each_edge_endpoints_ttfb_p95_and_rotation(tmp_path, mosquitto):
    slow, fresh = "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"
    edge = f'[[edge.endpoints]]\nurl = "{slow}"\n[[edge.endpoints]]\nurl = "{fresh}"\n'
    config = write_config(tmp_path, mosquitto, edge).read_text(encoding="utf-8")
    path = tmp_path / "sori.toml"
    path.write_text(config.replace("thinking = false", "thinking = true"), encoding="utf-8")
    daemon = build(path, tmp_path / "reply.wav")
    health = daemon.thinker.edge.health(slow)
    for ttfb_ms in (200.0, 250.0, 300.0, 400.0, 2500.0):  # the p95 crosses 1500 ms
        health.record_ttfb(ttfb_ms, 0)

    async def metrics(client, api):
        return (await client.get("/metrics")).text

    text = serve_api(daemon, metrics)
    assert "# TYPE sori_edge_endpoint_ttfb_p95_seconds gauge" in text
    assert f'sori_edge_endpoint_ttfb_p95_seconds{{endpoint="{slow}"}} 2.500000' in text
    assert f'endpoint="{fresh}"}} ' not in text.split("sori_edge_endpoint_in_rotation")[0]
    assert f'sori_edge_endpoint_in_rotation{{endpoint="{slow}"}} 0' in text
    assert f'sori_edge_endpoint_in_rotation{{endpoint="{fresh}"}} 1' in text


def test_bad_requests_are_refused_with_a_reason(api_run):
    async def scenario(client, api):
        return [
            await client.post("/say", content=b"not json", headers=JSON),
            await client.post("/say", json={"text": "  "}),
            await client.get("/say"),
            await client.get("/nope"),
            await client.get("/health"),  # still serving after all that
        ]

    bad_json, empty, wrong_method, missing, health = api_run(scenario)
    assert bad_json.status_code == 400 and "JSON" in bad_json.json()["error"]
    assert empty.status_code == 400 and "text" in empty.json()["error"]
    assert wrong_method.status_code == 405
    assert missing.status_code == 404
    assert health.status_code == 200


def test_events_stream_one_event_per_stage(api_run):
    async def scenario(client, api):
        _, seen = await events_of_turn(client, "지금 몇 시야")
        return seen

    seen = api_run(scenario)
    kinds = [e["type"] for e in seen]
    assert kinds[0] == "IntentCommitted"
    assert "ActionFinished" in kinds and "PlaybackStarted" in kinds
    assert kinds.index("PlaybackStarted") < kinds.index("PlaybackStopped")
    assert kinds[-1] == "TurnFinished"
    assert seen[-1]["intent"] == "HassGetCurrentTime"
    assert seen[-1]["stages_ns"]["first_audio"] > 0
