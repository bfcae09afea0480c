"""Which intents ask and which act: the one place that says whether an intent may change
the world.

A query ("거실 온도 몇 도야", "거실 불 켜져 있어?") asks about the home; nothing may be
sent to a device for it. A command changes something. "Nothing" intents (HassNevermind,
HassRespond) neither ask nor act. Every intent of the Home Assistant intents project
(`home_assistant_intents/intents.json`, and every intent of Sori's `intents/*/*.yaml`) is
listed; an intent not listed is a query when its name says it reads ("Get", "Status",
"List...Items"), else a command, so a custom acting intent still reaches its device.
"""

from __future__ import annotations

QUERY = "query"
"""Asks about the home or the speaker; changes nothing."""
COMMAND = "command"
"""Changes a device, a list, a timer or the speaker."""
NOTHING = "nothing"
"""Neither asks nor acts (cancel the request, a bare reply)."""

KINDS: dict[str, str] = {
    # queries
    "HassGetState": QUERY,
    "HassClimateGetTemperature": QUERY,
    "HassGetWeather": QUERY,
    "HassGetCurrentTime": QUERY,
    "HassGetCurrentDate": QUERY,
    "HassTimerStatus": QUERY,
    # neither
    "HassNevermind": NOTHING,
    "HassRespond": NOTHING,
    # commands: devices
    "HassTurnOn": COMMAND,
    "HassTurnOff": COMMAND,
    "HassToggle": COMMAND,
    "HassLightSet": COMMAND,
    "HassClimateSetTemperature": COMMAND,
    "HassClimateSetFanMode": COMMAND,
    "HassFanSetSpeed": COMMAND,
    "HassSetPosition": COMMAND,
    "HassSetVolume": COMMAND,
    "HassSetVolumeRelative": COMMAND,
    "HassMediaPause": COMMAND,
    "HassMediaUnpause": COMMAND,
    "HassMediaNext": COMMAND,
    "HassMediaPrevious": COMMAND,
    "HassMediaPlayerMute": COMMAND,
    "HassMediaPlayerUnmute": COMMAND,
    "HassMediaSearchAndPlay": COMMAND,
    "HassVacuumStart": COMMAND,
    "HassVacuumReturnToBase": COMMAND,
    "HassVacuumCleanArea": COMMAND,
    "HassLawnMowerStartMowing": COMMAND,
    "HassLawnMowerDock": COMMAND,
    "HassBroadcast": COMMAND,
    # commands: lists (completing an item checks it off; it is not a question)
    "HassListAddItem": COMMAND,
    "HassListCompleteItem": COMMAND,
    "HassListRemoveItem": COMMAND,
    "HassShoppingListAddItem": COMMAND,
    "HassShoppingListCompleteItem": COMMAND,
    # commands: timers, on the speaker
    "HassStartTimer": COMMAND,
    "HassCancelTimer": COMMAND,
    "HassCancelAllTimers": COMMAND,
    "HassPauseTimer": COMMAND,
    "HassUnpauseTimer": COMMAND,
    "HassIncreaseTimer": COMMAND,
    "HassDecreaseTimer": COMMAND,
    # commands: alarms at clock times, on the speaker
    "SoriSetAlarm": COMMAND,
    "SoriCancelAlarm": COMMAND,
}
"""Kind of every known intent."""


def kind_of(intent: str) -> str:
    """QUERY, COMMAND or NOTHING for an intent name; unknown names are judged by their words."""
    known = KINDS.get(intent)
    if known is not None:
        return known
    if "Get" in intent or intent.endswith("Status") or intent.endswith("Items"):
        return QUERY
    return COMMAND


def is_command(intent: str) -> bool:
    """True only for intents that may change something; queries and no-ops never act."""
    return kind_of(intent) == COMMAND
