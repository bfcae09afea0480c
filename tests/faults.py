"""Fault injection for the MQTT tests: a TCP relay that adds latency or refuses
connections, and a subscriber that stamps each message with its arrival time. A mosquitto
of the test's own, to freeze, kill and restart, is `broker.Mosquitto`."""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time


class Stamped:
    """Subscribes to `#` (QoS 2) and records (arrival monotonic ns, topic, payload)."""

    def __init__(self, url: str) -> None:
        import paho.mqtt.client as mqtt

        self.port = int(url.rsplit(":", 1)[1])
        self.messages: queue.Queue[tuple[int, str, str]] = queue.Queue()
        ready: queue.Queue[bool] = queue.Queue()
        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="stamped")
        self._client.on_connect = lambda c, *a: c.subscribe("#", qos=2)
        self._client.on_subscribe = lambda *a: ready.put(True)
        self._client.on_message = lambda c, u, m: self.messages.put(
            (time.monotonic_ns(), m.topic, m.payload.decode("utf-8"))
        )
        self._client.connect("127.0.0.1", self.port)
        self._client.loop_start()
        ready.get(timeout=10)

    def round_trip(self, timeout_s: float = 10.0) -> list[tuple[int, str, str]]:
        """Publish a marker through the broker, wait for it, and return what came before.

        The marker goes at QoS 2, as every message comes to this subscriber: paho hands a
        QoS 2 message over only on its PUBREL, a round trip after a QoS 1 one would be, so
        a QoS 1 marker could overtake a message the broker sent before it."""
        marker = f"marker/{time.monotonic_ns()}"
        self._client.publish(marker, "x", qos=2)
        seen = []
        end = time.monotonic() + timeout_s
        while True:
            item = self.messages.get(timeout=max(0.01, end - time.monotonic()))
            if item[1] == marker:
                return seen
            seen.append(item)

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


class Relay:
    """A TCP relay to `target_port` that delays every byte by `delay_s` each way, and can
    refuse new connections (`open = False`) without touching the broker behind it."""

    def __init__(self, target_port: int, delay_s: float = 0.0) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
        self.open = True
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.url = f"mqtt://127.0.0.1:{self.port}"
        self._closing = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                pipe: queue.Queue[tuple[float, bytes]] = queue.Queue()
                threading.Thread(target=self._read, args=(a, pipe), daemon=True).start()
                threading.Thread(target=self._write, args=(b, pipe), daemon=True).start()

    def _read(self, src: socket.socket, pipe: queue.Queue) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            pipe.put((time.monotonic() + self.delay_s, data))
            if not data:
                return

    def _write(self, dst: socket.socket, pipe: queue.Queue) -> None:
        while True:
            due, data = pipe.get()
            time.sleep(max(0.0, due - time.monotonic()))
            try:
                if not data:  # the other side closed: pass the close on, after the data
                    dst.shutdown(socket.SHUT_WR)
                    return
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self._closing = True
        self._server.close()
        for s in self._sockets:
            with contextlib.suppress(OSError):
                s.close()
