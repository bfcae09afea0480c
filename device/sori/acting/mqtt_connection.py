"""What every MQTT client of Sori's sets up the same way (the command handler, the state
source, the discovery presence): the broker URL read, paho imported with the fix in the
error, and the credentials and TLS applied to a client."""

from __future__ import annotations

from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from sori.core.errors import ConfigError, DependencyError


def parse_url(url: str) -> tuple[str, int, bool]:
    """ "mqtt://host:1883" → ("host", 1883, False); "mqtts://host" → ("host", 8883, True)."""
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts", "tcp", "ssl") or not parts.hostname:
        raise ConfigError(f"mqtt.url = {url!r} must look like mqtt://HOST:PORT or mqtts://HOST")
    tls = parts.scheme in ("mqtts", "ssl")
    try:
        port = parts.port or (8883 if tls else 1883)
    except ValueError:
        raise ConfigError(f"mqtt.url = {url!r} has an invalid port") from None
    return parts.hostname, port, tls


def import_paho() -> ModuleType:
    """`paho.mqtt.client`, or a DependencyError naming the package to install."""
    try:
        import paho.mqtt.client as mqtt
    except ImportError:
        raise DependencyError("MQTT needs paho-mqtt; run 'pip install paho-mqtt'") from None
    return mqtt


def authenticate(client: Any, tls: bool, username: str = "", password: str = "") -> None:
    """The broker's user (when one is set) and TLS (mqtts://) on a paho client."""
    if username:
        client.username_pw_set(username, password or None)
    if tls:
        client.tls_set()
