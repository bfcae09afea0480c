"""When an alarm rings: the next occurrence of a spoken clock time in the home's time zone.

Pure: the caller gives the time now (an aware datetime). "7시" is the next 7:00 or 19:00,
whichever comes first; "아침 7시" (am) and "저녁 7시" (pm) pick one; "내일 7시" is tomorrow
morning's 7:00 (a day named without a part of the day means its first such hour).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sori.core.errors import BackendError

DAY_OFFSETS = {"today": 0, "tomorrow": 1, "day_after": 2}
"""Days from today for the `alarm_day` slot."""


def zone(name: str) -> tzinfo | None:
    """The configured time zone ("Asia/Seoul"); None (the system's local zone) when empty."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BackendError(
            f"unknown time zone {name!r}; use an IANA name like 'Asia/Seoul' in [alarms] "
            "time_zone (apt-get install tzdata if none is known)"
        ) from None


def next_alarm(slots: Mapping[str, Any], now: datetime) -> datetime:
    """The next time matching the slots `hour`, `minute`, `day_part`, `alarm_day`."""
    try:
        hour = int(slots["hour"])
        minute = int(slots.get("minute") or 0)
    except (KeyError, TypeError, ValueError):
        raise BackendError(f"an alarm needs an hour, got {dict(slots)}") from None
    if not (0 <= hour <= 24 and 0 <= minute <= 59):
        raise BackendError(f"{hour}:{minute:02d} is not a clock time")
    part, day = slots.get("day_part"), slots.get("alarm_day")
    if part == "am":
        hours = [hour % 12]
    elif part == "pm":
        hours = [hour % 12 + 12]
    elif part == "noon":
        hours = [hour if hour >= 11 else hour + 12]
    elif hour >= 13 or hour in (0, 24):
        hours = [hour % 24]
    else:
        hours = [hour % 12, hour % 12 + 12]  # 7시: 7:00 or 19:00, the sooner
    start = now.replace(second=0, microsecond=0)
    if day in DAY_OFFSETS:
        date = (now + timedelta(days=DAY_OFFSETS[day])).date()
        times = [
            datetime.combine(date, start.timetz()).replace(hour=h, minute=minute) for h in hours
        ]
        later = [t for t in times if t > now]
        if later:
            return min(later)
        day = None  # "오늘 7시" already passed: the next one
    for days in range(3):
        date = (now + timedelta(days=days)).date()
        for h in sorted(hours):
            at = datetime.combine(date, start.timetz()).replace(hour=h, minute=minute)
            if at > now:
                return at
    raise BackendError("no next occurrence")  # unreachable: one comes within two days
