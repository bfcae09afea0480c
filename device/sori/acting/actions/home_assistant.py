"""Home Assistant REST service calls (`POST /api/services/<domain>/<service>`).

The long-lived access token comes from the environment (`$SORI_HA_TOKEN` by default),
never from the config file. Intents without a direct service go to HA's own intent
endpoint (`POST /api/intent/handle`), which needs `intent:` in HA's configuration.
"""

from __future__ import annotations

import logging
from typing import Any

from sori.acting.actions.base import Command, Result
from sori.acting.ha_rest import rest_client
from sori.core.errors import BackendError
from sori.core.redact import redact

log = logging.getLogger(__name__)

_ON_OFF = {
    "cover": ("open_cover", "close_cover"),
    "valve": ("open_valve", "close_valve"),
    "lock": ("lock", "unlock"),
}

_SIMPLE = {
    "HassToggle": "toggle",
    "HassMediaPause": "media_pause",
    "HassMediaUnpause": "media_play",
    "HassMediaNext": "media_next_track",
    "HassMediaPrevious": "media_previous_track",
    "HassVacuumStart": "start",
    "HassVacuumReturnToBase": "return_to_base",
}


def service_call(command: Command) -> tuple[str, str, dict[str, Any]] | None:
    """(domain, service, data) for `command`, or None when HA has no direct service."""
    domain, data = command.domain, {"entity_id": command.entity_id}
    s = command.slots
    on, off = _ON_OFF.get(domain, ("turn_on", "turn_off"))
    if command.intent == "HassTurnOn":
        return domain, on, data
    if command.intent == "HassTurnOff":
        return domain, off, data
    if command.intent in _SIMPLE:
        return domain, _SIMPLE[command.intent], data
    if command.intent == "HassMediaSearchAndPlay":  # "음악 틀어줘" on the configured player
        if s.get("media_content_id"):
            return (
                domain,
                "play_media",
                {
                    **data,
                    "media_content_id": s["media_content_id"],
                    "media_content_type": s.get("media_content_type") or "music",
                },
            )
        return domain, "media_play", data
    if command.intent == "HassLightSet":
        if "brightness" in s:
            data["brightness_pct"] = s["brightness"]
        elif isinstance(s.get("brightness_step"), int | float):  # a step the level of
            data["brightness_step_pct"] = s["brightness_step"]  # which was not worked out
        if "color" in s:
            data["color_name"] = s["color"]
        return "light", "turn_on", data
    if command.intent == "HassClimateSetTemperature" and "temperature" in s:
        return "climate", "set_temperature", {**data, "temperature": s["temperature"]}
    if command.intent == "HassSetPosition" and "position" in s:
        return domain, "set_cover_position", {**data, "position": s["position"]}
    if command.intent == "HassSetVolumeRelative" and s.get("volume_step") in ("up", "down"):
        return domain, f"volume_{s['volume_step']}", data  # the player's own step
    if command.intent == "HassSetVolume" and "volume_level" in s:
        return domain, "volume_set", {**data, "volume_level": s["volume_level"] / 100}
    if command.intent == "HassFanSetSpeed" and "percentage" in s:
        return "fan", "set_percentage", {**data, "percentage": s["percentage"]}
    return None


class HomeAssistantHandler:
    """Calls Home Assistant's REST API with a long-lived access token."""

    name = "home_assistant"

    def __init__(self, url: str, token_env: str = "SORI_HA_TOKEN", timeout_s: float = 3.0):
        self._httpx, self._client = rest_client(url, token_env, timeout_s)
        self.url = url.rstrip("/")

    async def handle(self, command: Command) -> Result:
        call = service_call(command)
        if call is None:
            path = "/api/intent/handle"
            body: dict[str, Any] = {"name": command.intent, "data": command.slots}
        else:
            domain, service, body = call
            path = f"/api/services/{domain}/{service}"
        try:
            reply = await self._client.post(path, json=body)
        except self._httpx.HTTPError as exc:
            raise BackendError(
                f"Home Assistant at {redact(self.url)} failed: {redact(repr(exc))}"
            ) from None
        if reply.status_code == 401:
            raise BackendError("Home Assistant refused the token (401); renew it")
        if reply.status_code >= 300:
            raise BackendError(f"Home Assistant answered {reply.status_code} to {path}")
        speech = ""
        if call is None:
            speech = (
                reply.json().get("speech", {}).get("plain", {}).get("speech", "")
                if reply.headers.get("content-type", "").startswith("application/json")
                else ""
            )
        return Result(detail=f"POST {path} {reply.status_code}", speech=speech)

    async def close(self) -> None:
        await self._client.aclose()
