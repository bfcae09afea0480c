"""A small client of Home Assistant's websocket API (`/api/websocket`): authenticate, then
read the registries a home is made of.

The flow (developers.home-assistant.io/docs/api/websocket): the server sends
`auth_required`; we send `{"type": "auth", "access_token": ...}`; it answers `auth_ok` or
`auth_invalid`. Each command then carries an `id` and is answered by
`{"id": N, "type": "result", "success": true, "result": ...}` (or `success: false` with an
`error`). Every failure is a BackendError that says what to check.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from sori.core.errors import BackendError

log = logging.getLogger(__name__)

REQUIRED = {
    "areas": "config/area_registry/list",
    "devices": "config/device_registry/list",
    "entities": "config/entity_registry/list",
    "exposed": "homeassistant/expose_entity/list",
}
"""What a home cannot be read without."""
OPTIONAL = {
    "floors": "config/floor_registry/list",  # HA 2024.4 and later
    "states": "get_states",  # friendly names
}
"""What older versions may lack; missing, it is empty."""


@dataclass
class Registries:
    """The raw results, in the shapes HA sends them (checked by `home_tables`)."""

    areas: list[Any] = field(default_factory=list)
    """config/area_registry/list: area_id, name, aliases, floor_id."""
    floors: list[Any] = field(default_factory=list)
    """config/floor_registry/list: floor_id, name, aliases, level."""
    devices: list[Any] = field(default_factory=list)
    """config/device_registry/list: id, name, name_by_user, area_id."""
    entities: list[Any] = field(default_factory=list)
    """config/entity_registry/list: entity_id, device_id, area_id, name, original_name,
    has_entity_name, device_class, original_device_class, disabled_by."""
    entries: dict[str, Any] = field(default_factory=dict)
    """config/entity_registry/get_entries for the exposed entities: entity_id → its
    extended entry, where the aliases are."""
    exposed: dict[str, Any] = field(default_factory=dict)
    """homeassistant/expose_entity/list: {"exposed_entities": {entity_id: {assistant: bool}}}."""
    states: list[Any] = field(default_factory=list)
    """get_states: entity_id, attributes.friendly_name."""


MAX_MESSAGE_BYTES = 32 << 20
"""Largest message read: the states of thousands of entities are a few MB, and a message
costs a few times its size once parsed (bounded on a 2 GB board too)."""


def websocket_url(base: str) -> str:
    """ws(s)://HOST/api/websocket for an http(s)://HOST base URL."""
    base = base.rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base.removeprefix("https://") + "/api/websocket"
    if base.startswith("http://"):
        return "ws://" + base.removeprefix("http://") + "/api/websocket"
    raise BackendError(f"--ha-url {base!r} must start with http:// or https://")


async def fetch_registries(base_url: str, token: str, timeout_s: float = 10.0) -> Registries:
    """Everything `home_tables` needs, read once over one websocket within `timeout_s` in
    all: the deadline is total, so an HA that keeps sending other messages cannot stretch
    it. A redirect is never followed (the token would go wherever it points)."""
    url = websocket_url(base_url)
    link = _Link(url)
    try:
        async with (
            asyncio.timeout(timeout_s),
            aiohttp.ClientSession(trace_configs=[_refusing_redirects()]) as session,
            session.ws_connect(url, heartbeat=None, max_msg_size=MAX_MESSAGE_BYTES) as ws,
        ):
            link.ws = ws
            return await _read(link, token)
    except TimeoutError:
        raise BackendError(
            f"Home Assistant at {url} did not answer within {timeout_s:g} s ({link.step}); "
            "check that it runs, or allow it longer (--timeout-s, home.source_timeout_s)"
        ) from None
    except _Redirected as redirect:
        raise BackendError(
            f"Home Assistant at {url} redirects to {redirect.location!r:.200}; nothing was "
            "sent there: give the address Home Assistant answers on itself"
        ) from None
    except (aiohttp.ClientError, OSError) as exc:
        reason = str(exc) or type(exc).__name__
        raise BackendError(
            f"cannot reach Home Assistant at {url}: {reason}; check the URL (--ha-url, "
            "home_assistant.url) and that HA runs"
        ) from None


class _Redirected(Exception):
    """The handshake was answered with a redirect to `location`."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


def _refusing_redirects() -> aiohttp.TraceConfig:
    """A trace that stops a request at its first redirect, before it is followed: the
    websocket's auth message would carry the token to whatever host the redirect names."""
    trace = aiohttp.TraceConfig()

    async def refuse(_session: Any, _context: Any, params: Any) -> None:
        raise _Redirected(params.response.headers.get("Location", ""))

    trace.on_request_redirect.append(refuse)
    return trace


@dataclass
class _Link:
    """One websocket to HA, and the step it is at (for the message when time runs out)."""

    url: str
    ws: aiohttp.ClientWebSocketResponse | None = None
    step: str = "connecting"
    last_id: int = 0

    async def receive(self) -> dict[str, Any]:
        assert self.ws is not None
        message = await self.ws.receive()
        if message.type != aiohttp.WSMsgType.TEXT:
            raise BackendError(
                f"Home Assistant at {self.url} closed the connection or sent no text "
                f"({message.type.name}) while {self.step}"
            )
        try:
            data = json.loads(message.data)
        except RecursionError:
            raise BackendError(
                f"Home Assistant at {self.url} sent JSON nested too deeply to read"
            ) from None
        except ValueError:
            raise BackendError(
                f"Home Assistant at {self.url} sent something that is not JSON: "
                f"{message.data[:80]!r}"
            ) from None
        if not isinstance(data, dict):
            raise BackendError(
                f"Home Assistant at {self.url} sent {type(data).__name__}, not a JSON object"
            )
        return data

    async def call(self, command: str, **extra: Any) -> tuple[bool, Any]:
        """(success, result or error) of one command; other messages are skipped."""
        assert self.ws is not None
        self.last_id += 1
        self.step = f"waiting for the answer to {command}"
        await self.ws.send_json({"id": self.last_id, "type": command, **extra})
        while True:
            reply = await self.receive()
            if reply.get("id") == self.last_id and reply.get("type") == "result":
                if not isinstance(reply.get("success"), bool):
                    raise BackendError(
                        f"Home Assistant at {self.url}: the answer to {command} has no success flag"
                    )
                return reply["success"], reply.get("result", reply.get("error"))


async def _read(link: _Link, token: str) -> Registries:
    url = link.url
    link.step = "waiting for auth_required"
    hello = await link.receive()
    if hello.get("type") != "auth_required":
        raise BackendError(
            f"Home Assistant at {url} did not ask to authenticate (got {hello.get('type')!r:.80})"
        )
    assert link.ws is not None
    await link.ws.send_json({"type": "auth", "access_token": token})
    link.step = "waiting for auth_ok"
    answer = await link.receive()
    if answer.get("type") == "auth_invalid":
        raise BackendError(
            f"Home Assistant refused the token ({answer.get('message', 'auth_invalid')!r:.200}); "
            "make a long-lived access token (your HA profile > Security) and put it in the "
            "variable"
        )
    if answer.get("type") != "auth_ok":
        raise BackendError(
            f"Home Assistant at {url}: expected auth_ok, got {answer.get('type')!r:.80}"
        )
    found = Registries()
    for name, command in {**REQUIRED, **OPTIONAL}.items():
        ok, result = await link.call(command)
        if not ok:
            if name in OPTIONAL:
                log.info("%s is not supported by this Home Assistant: %.200r", command, result)
                continue
            raise BackendError(f"Home Assistant refused {command}: {result!r:.200}")
        expected = dict if name == "exposed" else list
        if not isinstance(result, expected):
            raise BackendError(
                f"Home Assistant at {url}: {command} answered {type(result).__name__}, "
                f"not a {expected.__name__}"
            )
        setattr(found, name, result)
    exposed = sorted(assist_exposed(found.exposed))
    if exposed:  # aliases are in the extended entries only
        ok, result = await link.call("config/entity_registry/get_entries", entity_ids=exposed)
        if ok and isinstance(result, dict):
            found.entries = result
    return found


def assist_exposed(exposed: dict[str, Any]) -> set[str]:
    """Entity ids exposed to Assist ("conversation")."""
    table = exposed.get("exposed_entities", {})
    if not isinstance(table, dict):
        raise BackendError(
            "Home Assistant's homeassistant/expose_entity/list: exposed_entities is "
            f"{type(table).__name__}, not a table; is this a Home Assistant websocket API?"
        )
    return {
        entity_id
        for entity_id, assistants in table.items()
        if isinstance(assistants, dict) and assistants.get("conversation") is True
    }
