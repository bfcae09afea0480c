from __future__ import annotations

import asyncio

import pytest
from recorder import Recorder

from sori.acting.actions.base import Command
from sori.acting.actions.home_assistant import HomeAssistantHandler, service_call
from sori.acting.actions.webhook import WebhookHandler
from sori.core.errors import BackendError, ConfigError
from sori.core.home import Device

LAMP = Device("light.living_room", "거실 조명", "light", "living_room")
AIRCON = Device("climate.bedroom", "에어컨", "climate", "bedroom")
LOCK = Device("lock.front_door", "현관문", "lock")


@pytest.fixture
def server():
    rec = Recorder()
    yield rec
    rec.close()


def test_service_mapping():
    assert service_call(Command("HassTurnOn", {}, LAMP)) == (
        "light",
        "turn_on",
        {"entity_id": "light.living_room"},
    )
    assert service_call(Command("HassTurnOff", {}, LOCK))[:2] == ("lock", "unlock")
    assert service_call(Command("HassClimateSetTemperature", {"temperature": 23}, AIRCON)) == (
        "climate",
        "set_temperature",
        {"entity_id": "climate.bedroom", "temperature": 23},
    )
    assert service_call(Command("HassLightSet", {"brightness": 40}, LAMP))[2] == {
        "entity_id": "light.living_room",
        "brightness_pct": 40,
    }
    assert service_call(Command("HassShoppingListAddItem", {"item": "우유"}, None)) is None


def test_home_assistant_calls_the_service_with_the_token(server, monkeypatch):
    monkeypatch.setenv("TEST_HA_TOKEN", "secret-token")

    async def main():
        handler = HomeAssistantHandler(server.url, token_env="TEST_HA_TOKEN")
        try:
            return await handler.handle(
                Command("HassClimateSetTemperature", {"temperature": 23}, AIRCON)
            )
        finally:
            await handler.close()

    result = asyncio.run(main())
    path, headers, body = server.requests[0]
    assert path == "/api/services/climate/set_temperature"
    assert headers["Authorization"] == "Bearer secret-token"
    assert body == {"entity_id": "climate.bedroom", "temperature": 23}
    assert result.detail.endswith("200")


def test_home_assistant_needs_a_token_from_the_environment(monkeypatch):
    monkeypatch.delenv("TEST_HA_TOKEN", raising=False)
    with pytest.raises(ConfigError, match=r"home_assistant\.token_env: \$TEST_HA_TOKEN"):
        HomeAssistantHandler("http://ha:8123", token_env="TEST_HA_TOKEN")


def test_home_assistant_errors_become_backend_errors(server, monkeypatch):
    monkeypatch.setenv("TEST_HA_TOKEN", "expired")
    server.status = 401

    async def main():
        handler = HomeAssistantHandler(server.url, token_env="TEST_HA_TOKEN")
        try:
            await handler.handle(Command("HassTurnOn", {}, LAMP))
        finally:
            await handler.close()

    with pytest.raises(BackendError, match="refused the token"):
        asyncio.run(main())


def test_webhook_posts_the_command(server):
    async def main():
        handler = WebhookHandler(server.url + "/hook", headers={"X-Key": "k"})
        try:
            return await handler.handle(
                Command("HassTurnOn", {"name": "거실 조명"}, LAMP, text="거실 불 켜줘")
            )
        finally:
            await handler.close()

    asyncio.run(main())
    path, headers, body = server.requests[0]
    assert path == "/hook"
    assert headers["X-Key"] == "k"
    assert body == {
        "intent": "HassTurnOn",
        "entity_id": "light.living_room",
        "domain": "light",
        "slots": {"name": "거실 조명"},
        "text": "거실 불 켜줘",
    }


def test_webhook_failure_status_is_an_error(server):
    server.status = 500

    async def main():
        handler = WebhookHandler(server.url)
        try:
            await handler.handle(Command("HassTurnOn", {}, LAMP))
        finally:
            await handler.close()

    with pytest.raises(BackendError, match="answered 500"):
        asyncio.run(main())
