"""Each device read from the source that goes with its handler (`[state] source = "auto"`):
a device Home Assistant acts on is read from Home Assistant, an MQTT device from its
state topic; a device with neither has no source."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from sori.acting.state.base import Reading, StateSource
from sori.core.home import Device


class RoutedStateSource:
    """Dispatches each read to the source named for the device."""

    name = "routed"

    def __init__(
        self, sources: Mapping[str, StateSource], route: Mapping[str, str], default: str = ""
    ) -> None:
        self.sources = dict(sources)
        self.route = dict(route)
        """Entity id → source name; devices not listed use `default`."""
        self.default = default
        """Source name of devices not in `route`; "" means none."""

    def source_of(self, device: Device) -> StateSource | None:
        return self.sources.get(self.route.get(device.id, self.default))

    def covers(self, device: Device) -> bool:
        source = self.source_of(device)
        return source is not None and source.covers(device)

    async def read(self, device: Device) -> Reading | None:
        source = self.source_of(device)
        return None if source is None else await source.read(device)

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.sources.values()), return_exceptions=True)
