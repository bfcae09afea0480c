"""Announcing the server with zeroconf (`_wyoming._tcp`), so Home Assistant discovers it."""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Any

from sori import __version__
from sori.core.config import Config
from sori.core.errors import DependencyError

log = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
"""The zeroconf service type Home Assistant browses for Wyoming servers."""


def service_info(name: str, address: str, port: int) -> Any:
    """The `_wyoming._tcp` record Home Assistant discovers: `name`, at `address` (IPv4 or
    IPv6, as `announced_address` gives it) and `port`."""
    from zeroconf.asyncio import AsyncServiceInfo

    return AsyncServiceInfo(
        SERVICE_TYPE,
        f"{name}.{SERVICE_TYPE}",
        addresses=[ipaddress.ip_address(address).packed],
        port=port,
        properties={"version": __version__},
    )


def announced_address(host: str) -> str | None:
    """The address to announce for a server bound to `host`: the address the LAN reaches
    this machine at when `host` is every interface (0.0.0.0, ::), else `host`'s own. None
    when it is a loopback address (127.0.0.0/8, ::1, localhost): only this machine reaches
    such a server, so announcing it on the LAN would only send multicast for nothing."""
    if host in ("0.0.0.0", "", "::"):
        address = lan_address()
    else:
        try:
            address = str(ipaddress.ip_address(host))
        except ValueError:  # a name: the address it resolves to
            address = socket.gethostbyname(host)
    return None if ipaddress.ip_address(address).is_loopback else address


def lan_address() -> str:
    """This machine's address on the network with the default route (no packet is sent:
    connecting a UDP socket only picks the route)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("224.0.0.251", 5353))  # mDNS's group: the interface it goes out on
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


class Announcer:
    """A zeroconf registration of the server, removed again on close."""

    def __init__(self, info: Any) -> None:
        self.info = info
        self._zeroconf: Any = None

    async def start(self) -> None:
        try:
            from zeroconf.asyncio import AsyncZeroconf
        except ImportError:
            raise DependencyError(
                "announcing the Wyoming server needs zeroconf: pip install 'sori[wyoming]', "
                "or set [wyoming] zeroconf = false"
            ) from None
        self._zeroconf = AsyncZeroconf()
        await self._zeroconf.async_register_service(self.info)
        log.info("wyoming: announced as %s", self.info.name)

    async def close(self) -> None:
        if self._zeroconf is not None:
            await self._zeroconf.async_unregister_service(self.info)
            await self._zeroconf.async_close()
            self._zeroconf = None


def announce_name(config: Config, zeroconf: bool | None = None) -> str:
    """The zeroconf name to announce under ([wyoming] name, else sori-HOSTNAME); empty when
    zeroconf is off (`zeroconf` overrides [wyoming] zeroconf)."""
    if not (config.wyoming.zeroconf if zeroconf is None else zeroconf):
        return ""
    return config.wyoming.name or f"sori-{socket.gethostname().split('.')[0]}"
