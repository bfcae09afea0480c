"""What every MQTT client of Sori's sets up the same way (the command handler, the state
source, the discovery presence, the wake claims): the broker URL read, the client id
chosen, paho imported with the fix in the error, a client prepared (credentials, TLS,
small messages sent at once), and a clean leave that says goodbye."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import socket
import threading
from collections import Counter
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


def client_id_for(configured: str, role: str = "") -> str:
    """`mqtt.client_id` as set, or, when it is empty, an id of this run's own; with
    `role`, the id of one more client of the same run (`<id>-state`, `<id>-presence`).

    A broker keeps one connection per client id and drops the older one when another
    connects with it, so two clients sharing an id take the broker from each other in
    turn. So an empty id is never handed out twice: two speakers (or two runs) differ in
    the run's id, a process forked from a run (`sori test --jobs`) draws its own, and a
    second client of the same role in one process (daemons built side by side, as the
    tests build them) gets `-2`, then `-3`. Sessions are always clean, so nothing is lost
    by a new id. A configured id is used as it is: a broker's ACL may name it.
    """
    if configured:
        return f"{configured}-{role}" if role else configured
    base = f"{_this_run_client_id()}-{role}" if role else _this_run_client_id()
    with _ISSUING:
        _ISSUED[base] += 1
        count = _ISSUED[base]
    return base if count == 1 else f"{base}-{count}"


_ISSUED: Counter[str] = Counter()
"""How many clients of this process have had each id of `client_id_for`."""
_ISSUING = threading.Lock()


@functools.cache
def _this_run_client_id() -> str:
    """`sori-<host>-<6 hex digits>`: readable in the broker's log, different on two
    boards flashed from one image (same host name), and at most 23 characters, the
    length every MQTT 3.1.1 broker must accept."""
    host = re.sub(r"[^0-9A-Za-z]", "", socket.gethostname())[:11] or "host"
    return f"sori-{host}-{secrets.token_hex(3)}"


def _forget_this_run_in_a_forked_child() -> None:
    global _ISSUING
    _this_run_client_id.cache_clear()
    _ISSUED.clear()
    _ISSUING = threading.Lock()  # another thread of the parent may have held it


os.register_at_fork(after_in_child=_forget_this_run_in_a_forked_child)


def import_paho() -> ModuleType:
    """`paho.mqtt.client`, or a DependencyError naming the package to install."""
    try:
        import paho.mqtt.client as mqtt
    except ImportError:
        raise DependencyError("MQTT needs paho-mqtt; run 'pip install paho-mqtt'") from None
    return mqtt


def prepare(client: Any, tls: bool, username: str = "", password: str = "") -> None:
    """Set up a paho client before it connects: the broker's user (when one is set), TLS
    (mqtts://), and small messages sent at once (`_send_at_once`)."""
    if username:
        client.username_pw_set(username, password or None)
    if tls:
        client.tls_set()
    client.on_socket_open = _send_at_once


def _send_at_once(client: Any, userdata: Any, sock: Any) -> None:
    """TCP_NODELAY on a client's new socket: otherwise a command or a wake claim sent while
    the broker has not yet acknowledged the last packet waits for it, 40 ms on Linux
    (measured on loopback)."""
    with contextlib.suppress(OSError, AttributeError):  # a transport without the option
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def leave(client: Any, topic: str, goodbye: str | bytes, connected: threading.Event) -> None:
    """Publish `goodbye` retained on `topic` (what the last will would have said; waited
    for up to 2 s while `connected`), then disconnect and stop the network loop: a clean
    leave, so the broker does not send the will."""
    info = client.publish(topic, goodbye, qos=1, retain=True)
    if connected.is_set():
        info.wait_for_publish(2)
    client.disconnect()
    client.loop_stop()
