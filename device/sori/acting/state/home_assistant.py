"""Device state from Home Assistant's REST states API (`GET /api/states/<entity_id>`).

The long-lived access token comes from the environment (`$SORI_HA_TOKEN` by default),
never from the config file. Only GET requests are made: reading changes nothing.
"""

from __future__ import annotations

import logging

from sori.acting.ha_rest import rest_client
from sori.acting.state.base import Reading
from sori.core.errors import BackendError
from sori.core.home import Device
from sori.core.redact import redact

log = logging.getLogger(__name__)


class HomeAssistantStateSource:
    """Reads one entity's state per question from Home Assistant."""

    name = "home_assistant"

    def __init__(self, url: str, token_env: str = "SORI_HA_TOKEN", timeout_s: float = 2.0):
        self._httpx, self._client = rest_client(url, token_env, timeout_s)
        self.url = url.rstrip("/")

    def covers(self, device: Device) -> bool:
        return True

    async def read(self, device: Device) -> Reading | None:
        path = f"/api/states/{device.id}"
        try:
            reply = await self._client.get(path)
        except self._httpx.HTTPError as exc:
            raise BackendError(
                f"Home Assistant at {redact(self.url)} failed: {redact(repr(exc))}"
            ) from None
        if reply.status_code == 404:
            return None  # HA knows no such entity
        if reply.status_code == 401:
            raise BackendError("Home Assistant refused the token (401); renew it")
        if reply.status_code >= 300:
            raise BackendError(f"Home Assistant answered {reply.status_code} to GET {path}")
        try:
            data = reply.json()
        except ValueError:
            raise BackendError(f"Home Assistant's answer to GET {path} is not JSON") from None
        state = data.get("state")
        if state in (None, "unknown", "unavailable"):
            return None
        attributes = data.get("attributes")
        return Reading(device.id, str(state), dict(attributes or {}), self.name)

    async def close(self) -> None:
        await self._client.aclose()
