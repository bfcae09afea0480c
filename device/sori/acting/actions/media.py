"""Music with no player named ("음악 틀어줘", "다음 곡", "음악 멈춰") plays on the home's
configured player (`[actions] media_player`), through that device's own handler: Home
Assistant's media_player services, or an MQTT command for an MQTT home.

With no player configured nothing is sent, and the speaker says how to set one: music
guessed onto some TV in the house is worse than none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sori.acting.actions.base import TARGET_SLOTS
from sori.core.home import Device, Home

MEDIA_INTENTS = frozenset(
    {
        "HassMediaSearchAndPlay",
        "HassMediaPause",
        "HassMediaUnpause",
        "HassMediaNext",
        "HassMediaPrevious",
    }
)
"""Intents that go to the configured player when the sentence names no device or room."""


@dataclass(frozen=True, slots=True)
class MusicPlayer:
    """The player that music commands with no target go to."""

    entity_id: str = ""
    """Entity id of a media_player device of the home; empty: none is configured."""
    content_id: str = ""
    """What "음악 틀어줘" plays (Home Assistant's play_media media_content_id); empty:
    resume the player."""
    content_type: str = "music"
    """play_media's media_content_type for `content_id`."""
    language: str = "ko"
    """Language of the reply when no player is configured."""

    def takes(self, intent: str, slots: Mapping[str, Any]) -> bool:
        """Whether `intent` is a media command that names no device, room or domain."""
        return intent in MEDIA_INTENTS and not any(slots.get(k) for k in TARGET_SLOTS)

    def device(self, home: Home) -> Device | None:
        """The configured player in `home`, or None (not configured, or not there)."""
        if not self.entity_id:
            return None
        return next((d for d in home.devices if d.id == self.entity_id), None)

    def slots(self, intent: str, slots: Mapping[str, Any]) -> dict[str, Any]:
        """`slots` with what "음악 틀어줘" plays added, when configured."""
        out = dict(slots)
        if intent == "HassMediaSearchAndPlay" and self.content_id:
            out["media_content_id"] = self.content_id
            out["media_content_type"] = self.content_type
        return out

    def missing(self) -> tuple[str, str]:
        """(detail, spoken reply) when there is no player to send to."""
        if self.entity_id:
            detail = (
                f"actions.media_player = {self.entity_id!r} is not a device of the home; "
                "add it to [home] (or expose it to Assist) or fix the id"
            )
        else:
            detail = "no player for music: set actions.media_player to a media_player device"
        if self.language == "en":
            return detail, "No music player is set up. Set actions.media_player in sori.toml."
        return detail, (
            "음악을 틀 기기가 정해져 있지 않아요. sori.toml의 actions.media_player에 정해 주세요."
        )
