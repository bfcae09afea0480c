"""A real mosquitto broker on a free loopback port (`mosquitto`, shared by a session's tests;
`Mosquitto`, a test's own), and a subscriber that records messages.

Import the fixtures where needed: `from broker import mosquitto, subscriber  # noqa: F401`.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def mosquitto_exe() -> str | None:
    """The mosquitto binary (the Debian package puts it in /usr/sbin), or None."""
    exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    return exe if os.path.exists(exe) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, deadline_s: float = 10.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


class Mosquitto:
    """One mosquitto process on a loopback port (a free one by default), its config and
    log in `folder`; restartable on that same port, and able to freeze (fault tests)."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"mqtt://127.0.0.1:{self.port}"
        self.conf = folder / f"mosquitto-{self.port}.conf"
        self.conf.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
        )
        self.log = folder / f"mosquitto-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        exe = mosquitto_exe() or "mosquitto"  # the fixture says when it is missing
        # Its log goes to a file: a pipe nobody reads fills after some 350 connections,
        # and then the broker stops answering.
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [exe, "-c", str(self.conf)], stdout=subprocess.DEVNULL, stderr=log
            )
        wait_for_port(self.port)

    def freeze(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.thaw()
            self.proc.terminate()
            self.proc.wait(timeout=10)


@pytest.fixture(scope="session")
def mosquitto(tmp_path_factory) -> Iterator[str]:
    """URL of a running mosquitto (Debian package; scripts/install.sh --test installs it)."""
    if mosquitto_exe() is None:
        pytest.fail("mosquitto is not installed; run 'bash scripts/install.sh --test'")
    broker = Mosquitto(tmp_path_factory.mktemp("mosquitto"))
    try:
        yield broker.url
    finally:
        broker.close()


class Subscriber:
    """Records every message on `#` of a broker."""

    def __init__(self, url: str) -> None:
        import paho.mqtt.client as mqtt

        host, port = url.removeprefix("mqtt://").split(":")
        self.messages: queue.Queue[tuple[str, str]] = queue.Queue()
        self._ready = queue.Queue()
        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self._client.on_connect = lambda c, *a: c.subscribe("#", qos=1)
        self._client.on_subscribe = lambda *a: self._ready.put(True)
        self._client.on_message = lambda c, u, m: self.messages.put(
            (m.topic, m.payload.decode("utf-8"))
        )
        self._client.connect(host, int(port))
        self._client.loop_start()
        self._ready.get(timeout=10)

    def next(self, timeout_s: float = 10.0) -> tuple[str, str]:
        return self.messages.get(timeout=timeout_s)

    def until_quiet(self, quiet_s: float = 1.0) -> list[tuple[str, str]]:
        """Every message still to come, until none comes for `quiet_s`."""
        seen = []
        while True:
            try:
                seen.append(self.next(timeout_s=quiet_s))
            except queue.Empty:
                return seen

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


def clear_retained(url: str) -> None:
    """Clear every retained message of the broker at `url`: the broker is shared by the
    session, and a new subscriber would read them first."""
    sub = Subscriber(url)
    try:
        for topic in {topic for topic, _ in sub.until_quiet(0.5)}:
            sub._client.publish(topic, b"", qos=1, retain=True).wait_for_publish(5)
    finally:
        sub.close()


@pytest.fixture
def subscriber(mosquitto) -> Iterator[Subscriber]:
    sub = Subscriber(mosquitto)
    yield sub
    sub.close()
