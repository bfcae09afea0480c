"""A stand-in for Home Assistant on loopback: its websocket API (auth flow, registries,
expose list) and its conversation API, answering in the shapes HA's documentation gives
(developers.home-assistant.io: WebSocket API, Conversation API). Real Home Assistant does
not install and start on this machine within the test budget; this replays its messages.

    with HaServer(token="t") as ha:  # ha.url = http://127.0.0.1:PORT
        ...

It can also play a hostile or broken HA: redirect elsewhere (`redirect_to`), chatter
instead of answering (`chatter_s`), or answer a command with raw text (`Raw`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from aiohttp import web

TOKEN = "ha-test-token-0123456789"

AREAS = [
    {"area_id": "living_room", "name": "거실", "aliases": ["리빙룸"], "floor_id": "first",
     "icon": None, "labels": [], "picture": None},
    {"area_id": "bedroom", "name": "안방", "aliases": ["침실", "큰방"], "floor_id": "second",
     "icon": None, "labels": [], "picture": None},
    {"area_id": "garage", "name": "차고", "aliases": [], "floor_id": None,
     "icon": None, "labels": [], "picture": None},
]  # fmt: skip
FLOORS = [
    {"floor_id": "first", "name": "1층", "aliases": [], "level": 1, "icon": None},
    {"floor_id": "second", "name": "2층", "aliases": ["위층"], "level": 2, "icon": None},
]
DEVICES = [
    {"id": "dev-hue-1", "name": "Hue color lamp", "name_by_user": "거실 스탠드",
     "area_id": "living_room", "manufacturer": "Signify", "model": "LCA001"},
    {"id": "dev-ac-1", "name": "에어컨", "name_by_user": None, "area_id": "bedroom",
     "manufacturer": "LG", "model": "X"},
]  # fmt: skip
ENTITIES = [
    # exposed, in an area through its device, named by the device (has_entity_name)
    {"entity_id": "light.hue_lamp", "device_id": "dev-hue-1", "area_id": None, "name": None,
     "original_name": None, "has_entity_name": True, "disabled_by": None,
     "device_class": None, "original_device_class": None, "platform": "hue"},
    # exposed, its own area and name
    {"entity_id": "light.bedroom_ceiling", "device_id": None, "area_id": "bedroom",
     "name": "안방 천장등", "original_name": "Ceiling", "has_entity_name": False,
     "disabled_by": None, "device_class": None, "original_device_class": None,
     "platform": "mqtt"},
    {"entity_id": "climate.bedroom_ac", "device_id": "dev-ac-1", "area_id": None,
     "name": None, "original_name": None, "has_entity_name": True, "disabled_by": None,
     "device_class": None, "original_device_class": None, "platform": "lg"},
    {"entity_id": "cover.garage_door", "device_id": None, "area_id": "garage", "name": None,
     "original_name": "Garage door", "has_entity_name": False, "disabled_by": None,
     "device_class": None, "original_device_class": "garage", "platform": "mqtt"},
    # not exposed to Assist: never imported
    {"entity_id": "switch.secret_relay", "device_id": None, "area_id": "living_room",
     "name": "비밀 릴레이", "original_name": None, "has_entity_name": False,
     "disabled_by": None, "device_class": None, "original_device_class": None,
     "platform": "mqtt"},
]  # fmt: skip
EXTENDED = {  # config/entity_registry/get_entries adds aliases
    "light.hue_lamp": {"entity_id": "light.hue_lamp", "aliases": ["스탠드", "거실 불"]},
    "light.bedroom_ceiling": {"entity_id": "light.bedroom_ceiling", "aliases": ["안방 불"]},
    "climate.bedroom_ac": {"entity_id": "climate.bedroom_ac", "aliases": []},
    "cover.garage_door": {"entity_id": "cover.garage_door", "aliases": ["차고 문"]},
}
EXPOSED = {
    "exposed_entities": {
        "light.hue_lamp": {"conversation": True, "cloud.alexa": False},
        "light.bedroom_ceiling": {"conversation": True},
        "climate.bedroom_ac": {"conversation": True},
        "cover.garage_door": {"conversation": True},
        "switch.secret_relay": {"conversation": False, "cloud.google_assistant": True},
    }
}
STATES = [
    {"entity_id": "light.hue_lamp", "state": "off",
     "attributes": {"friendly_name": "거실 스탠드"}},
    {"entity_id": "climate.bedroom_ac", "state": "cool",
     "attributes": {"friendly_name": "안방 에어컨"}},
    {"entity_id": "cover.garage_door", "state": "closed",
     "attributes": {"friendly_name": "차고 문", "device_class": "garage"}},
]  # fmt: skip
RESULTS = {
    "config/area_registry/list": AREAS,
    "config/floor_registry/list": FLOORS,
    "config/device_registry/list": DEVICES,
    "config/entity_registry/list": ENTITIES,
    "homeassistant/expose_entity/list": EXPOSED,
    "get_states": STATES,
}


class Raw(str):
    """A command's result sent as these characters, unchecked (hostile JSON: deep nesting,
    lone surrogates), inside a well-formed result message."""


class HaServer:
    """aiohttp on a thread of its own, on a free loopback port."""

    def __init__(
        self,
        token: str = TOKEN,
        results: dict[str, Any] | None = None,
        redirect_to: str = "",
        chatter_s: float = 0.0,
    ) -> None:
        self.token = token
        self.results = dict(RESULTS if results is None else results)
        self.redirect_to = redirect_to
        """Base URL every request is redirected to (302), when set."""
        self.chatter_s = chatter_s
        """When set, commands are never answered: an unrelated event comes every chatter_s."""
        self.credentials: list[str] = []
        """Every token received: websocket auth messages and Authorization headers."""
        self.conversation: list[dict[str, Any]] = []
        """Bodies POSTed to /api/conversation/process."""
        self.conversation_answer: dict[str, Any] | None = None
        """What /api/conversation/process answers (None: the default, below)."""
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> HaServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/api/websocket", self._websocket)
        app.router.add_post("/api/conversation/process", self._converse)
        app.router.add_route("*", "/{rest:.*}", self._elsewhere)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def _note_credentials(self, request: web.Request) -> None:
        if "Authorization" in request.headers:
            self.credentials.append(request.headers["Authorization"])

    async def _elsewhere(self, request: web.Request) -> web.Response:
        self._note_credentials(request)
        if self.redirect_to:
            raise web.HTTPFound(self.redirect_to + request.path)
        raise web.HTTPNotFound()

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        self._note_credentials(request)
        if self.redirect_to:
            raise web.HTTPFound(self.redirect_to + request.path)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"type": "auth_required", "ha_version": "2025.1.0"})
        auth = await ws.receive_json()
        if "access_token" in auth:
            self.credentials.append(auth["access_token"])
        if auth.get("type") != "auth" or auth.get("access_token") != self.token:
            await ws.send_json({"type": "auth_invalid", "message": "Invalid access token"})
            await ws.close()
            return ws
        await ws.send_json({"type": "auth_ok", "ha_version": "2025.1.0"})
        async for message in ws:
            call = message.json()
            kind = call.get("type")
            if self.chatter_s:
                await self._chatter(ws)
                break
            if kind == "config/entity_registry/get_entries":
                result = {e: EXTENDED.get(e) for e in call.get("entity_ids", [])}
            elif kind in self.results:
                result = self.results[kind]
            else:
                await ws.send_json({"id": call["id"], "type": "result", "success": False,
                                    "error": {"code": "unknown_command",
                                              "message": "Unknown command."}})  # fmt: skip
                continue
            if result == "malformed":
                await ws.send_str("{not json")
                continue
            if isinstance(result, Raw):
                await ws.send_str(
                    f'{{"id": {call["id"]}, "type": "result", "success": true, "result": {result}}}'
                )
                continue
            await ws.send_json({"id": call["id"], "type": "result", "success": True,
                                "result": result})  # fmt: skip
        return ws

    async def _chatter(self, ws: web.WebSocketResponse) -> None:
        """Send unrelated events (as a busy HA does) and never the answer, until closed."""
        with contextlib.suppress(ConnectionError):
            while not ws.closed:
                await ws.send_json({"id": 0, "type": "event", "event": {"a": 1}})
                await asyncio.sleep(self.chatter_s)

    async def _converse(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response({"message": "Unauthorized"}, status=401)
        body = await request.json()
        self.conversation.append(body)
        answer = self.conversation_answer or {
            "continue_conversation": False,
            "conversation_id": "01JTEST",
            "response": {
                "response_type": "action_done",
                "language": body.get("language", "ko"),
                "data": {
                    "targets": [],
                    "success": [{"name": "차고 문", "type": "entity", "id": "cover.garage_door"}],
                    "failed": [],
                },
                "speech": {"plain": {"speech": "차고 문을 열었어요", "extra_data": None}},
            },
        }
        return web.json_response(answer)
