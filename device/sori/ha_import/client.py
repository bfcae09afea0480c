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
import logging
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from sori.errors import BackendError

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
    """The raw results, in the shapes HA sends them."""

    areas: list[dict[str, Any]] = field(default_factory=list)
    """config/area_registry/list: area_id, name, aliases, floor_id."""
    floors: list[dict[str, Any]] = field(default_factory=list)
    """config/floor_registry/list: floor_id, name, aliases, level."""
    devices: list[dict[str, Any]] = field(default_factory=list)
    """config/device_registry/list: id, name, name_by_user, area_id."""
    entities: list[dict[str, Any]] = field(default_factory=list)
    """config/entity_registry/list: entity_id, device_id, area_id, name, original_name,
    has_entity_name, device_class, original_device_class, disabled_by; aliases come from
    config/entity_registry/get_entries for the exposed ones."""
    exposed: dict[str, Any] = field(default_factory=dict)
    """homeassistant/expose_entity/list: {"exposed_entities": {entity_id: {assistant: bool}}}."""
    states: list[dict[str, Any]] = field(default_factory=list)
    """get_states: entity_id, attributes.friendly_name."""


def websocket_url(base: str) -> str:
    """ws(s)://HOST/api/websocket for an http(s)://HOST base URL."""
    base = base.rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base.removeprefix("https://") + "/api/websocket"
    if base.startswith("http://"):
        return "ws://" + base.removeprefix("http://") + "/api/websocket"
    raise BackendError(f"--ha-url {base!r} must start with http:// or https://")


async def fetch_registries(base_url: str, token: str, timeout_s: float = 10.0) -> Registries:
    """Everything `home_tables` needs, read once over one websocket."""
    url = websocket_url(base_url)
    timeout = aiohttp.ClientTimeout(total=None, connect=timeout_s, sock_read=timeout_s)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.ws_connect(url, heartbeat=None, max_msg_size=64 << 20) as ws,
        ):
            return await _read(ws, url, token, timeout_s)
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        reason = str(exc) or type(exc).__name__
        raise BackendError(
            f"cannot reach Home Assistant at {url}: {reason}; check --ha-url and that HA runs"
        ) from None


async def _read(ws: aiohttp.ClientWebSocketResponse, url: str, token: str, timeout_s: float):
    async def receive() -> dict[str, Any]:
        message = await asyncio.wait_for(ws.receive(), timeout_s)
        if message.type != aiohttp.WSMsgType.TEXT:
            raise BackendError(f"{url} closed the connection or sent no text ({message.type})")
        try:
            data = message.json()
        except ValueError:
            raise BackendError(
                f"{url} sent something that is not JSON: {message.data[:80]!r}"
            ) from None
        if not isinstance(data, dict):
            raise BackendError(f"{url} sent {type(data).__name__}, not a JSON object")
        return data

    hello = await receive()
    if hello.get("type") != "auth_required":
        raise BackendError(f"{url} did not ask to authenticate (got {hello.get('type')!r})")
    await ws.send_json({"type": "auth", "access_token": token})
    answer = await receive()
    if answer.get("type") == "auth_invalid":
        raise BackendError(
            f"Home Assistant refused the token ({answer.get('message', 'auth_invalid')}); make "
            "a long-lived access token (your HA profile > Security) and put it in the variable"
        )
    if answer.get("type") != "auth_ok":
        raise BackendError(f"{url}: expected auth_ok, got {answer.get('type')!r}")
    found = Registries()
    next_id = 0

    async def call(command: str, **extra: Any) -> tuple[bool, Any]:
        nonlocal next_id
        next_id += 1
        await ws.send_json({"id": next_id, "type": command, **extra})
        while True:
            reply = await receive()
            if reply.get("id") == next_id and reply.get("type") == "result":
                if not isinstance(reply.get("success"), bool):
                    raise BackendError(f"{url}: the answer to {command} has no success flag")
                return reply["success"], reply.get("result", reply.get("error"))

    for name, command in {**REQUIRED, **OPTIONAL}.items():
        ok, result = await call(command)
        if not ok:
            if name in OPTIONAL:
                log.info("%s is not supported by this Home Assistant: %s", command, result)
                continue
            raise BackendError(f"Home Assistant refused {command}: {result}")
        expected = dict if name == "exposed" else list
        if not isinstance(result, expected):
            raise BackendError(
                f"{url}: {command} answered {type(result).__name__}, not a {expected.__name__}"
            )
        setattr(found, name, result)
    exposed = sorted(assist_exposed(found.exposed))
    if exposed:  # aliases are in the extended entries only
        ok, result = await call("config/entity_registry/get_entries", entity_ids=exposed)
        if ok and isinstance(result, dict):
            by_id = {e.get("entity_id"): e for e in found.entities if isinstance(e, dict)}
            for entity_id, entry in result.items():
                if isinstance(entry, dict) and entity_id in by_id:
                    by_id[entity_id] = {**by_id[entity_id], **entry}
            found.entities = list(by_id.values())
    return found


def assist_exposed(exposed: dict[str, Any]) -> set[str]:
    """Entity ids exposed to Assist ("conversation")."""
    table = exposed.get("exposed_entities", {})
    if not isinstance(table, dict):
        raise BackendError("homeassistant/expose_entity/list: exposed_entities is not a table")
    return {
        entity_id
        for entity_id, assistants in table.items()
        if isinstance(assistants, dict) and assistants.get("conversation") is True
    }
