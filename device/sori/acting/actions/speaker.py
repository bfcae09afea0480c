"""The speaker's own volume and mute, through ALSA's mixer (`amixer`, from alsa-utils).

"볼륨 50으로", "볼륨 올려줘", "조금만 줄여", "음소거" change the speaker itself unless
they name a media player; the registry sends them here. The change is made before the
reply, so the reply is heard at the new volume.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from sori.acting.actions.base import Command, Result
from sori.core.errors import BackendError

log = logging.getLogger(__name__)

SPEAKER_INTENTS = frozenset(
    {"HassSetVolume", "HassSetVolumeRelative", "HassMediaPlayerMute", "HassMediaPlayerUnmute"}
)
"""Intents that act on the speaker itself when no media player is named."""

_LEVEL = re.compile(r"\[(\d+)%\]")
_SET = re.compile(r"volume (\d+)%")
_SWITCH = re.compile(r"\[(on|off)\]")


class Mixer:
    """One ALSA simple control, read and set through `amixer -D DEVICE`."""

    def __init__(self, device: str = "default", control: str = "Master", program: str = "amixer"):
        self.device, self.control, self.program = device, control, program

    async def _amixer(self, *args: str) -> str:
        try:
            proc = await asyncio.create_subprocess_exec(
                self.program, "-D", self.device, *args,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
        except FileNotFoundError:
            raise BackendError(
                f"{self.program!r} not found: apt-get install alsa-utils, or set [speaker] amixer"
            ) from None
        out, err = await proc.communicate()
        if proc.returncode:
            raise BackendError(
                f"amixer -D {self.device} {' '.join(args)} failed: "
                f"{err.decode(errors='replace').strip()}; check [speaker] mixer_device and "
                f"mixer_control (`amixer -D {self.device} scontrols` lists controls)"
            )
        return out.decode(errors="replace")

    async def read(self) -> tuple[int, bool]:
        """(volume in percent, muted) of the control (its first channel)."""
        out = await self._amixer("sget", self.control)
        level = _LEVEL.search(out)
        if level is None:
            raise BackendError(f"{self.control!r} on {self.device} has no volume; pick another")
        switch = _SWITCH.search(out)
        return int(level.group(1)), bool(switch and switch.group(1) == "off")

    async def set_volume(self, percent: int) -> None:
        await self._amixer("-q", "sset", self.control, f"{percent}%", "unmute")

    async def set_muted(self, muted: bool) -> None:
        await self._amixer("-q", "sset", self.control, "mute" if muted else "unmute")


def relative_step(slots: dict[str, Any], step: int) -> int:
    """Signed percent for HassSetVolumeRelative: "up"/"down" (half a step when "조금"), or
    a number."""
    value = slots.get("volume_step")
    scale = 0.5 if slots.get("amount") == "little" else 1.0
    if value == "up":
        return max(1, round(step * scale))
    if value == "down":
        return -max(1, round(step * scale))
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BackendError(f"volume step {value!r} is not up, down or a number") from None


def speaker_states(detail: str) -> dict[str, str]:
    """What a speaker action's detail ("volume 50%", "muted", "unmuted") says about the
    speaker now, as presence states: {"volume": "50", "mute": "OFF"} (setting a volume
    also unmutes); empty for anything else."""
    if detail == "muted":
        return {"mute": "ON"}
    if detail == "unmuted":
        return {"mute": "OFF"}
    level = _SET.fullmatch(detail)
    return {"volume": level.group(1), "mute": "OFF"} if level else {}


class SpeakerHandler:
    """Sets the speaker's own volume and mute."""

    name = "speaker"

    def __init__(self, mixer: Mixer, step: int = 10, language: str = "ko") -> None:
        self.mixer, self.step, self.language = mixer, step, language

    def _say(self, ko: str, en: str) -> str:
        return en if self.language == "en" else ko

    async def handle(self, command: Command) -> Result:
        intent, slots = command.intent, command.slots
        if intent == "HassMediaPlayerMute":
            await self.mixer.set_muted(True)
            return Result("muted", self._say("음소거했어요.", "Muted."))
        if intent == "HassMediaPlayerUnmute":
            await self.mixer.set_muted(False)
            return Result("unmuted", self._say("음소거를 풀었어요.", "Unmuted."))
        if intent == "HassSetVolume":
            try:
                level = int(float(slots["volume_level"]))
            except (KeyError, TypeError, ValueError):
                raise BackendError(
                    f"volume {slots.get('volume_level')!r} is not a number"
                ) from None
        elif intent == "HassSetVolumeRelative":
            now, _ = await self.mixer.read()
            level = now + relative_step(slots, self.step)
        else:
            raise BackendError(f"{intent} is not a speaker intent")
        level = max(0, min(100, level))
        await self.mixer.set_volume(level)
        return Result(
            f"volume {level}%", self._say(f"볼륨을 {level}%로 맞췄어요.", f"Volume {level}%.")
        )

    async def close(self) -> None:
        return None
