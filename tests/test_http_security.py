"""The HTTP API under attack: malformed and generated requests, a cross-site form post,
DNS rebinding, missing tokens, too many clients, against a real daemon on loopback.

Each case asserts the status, that no ERROR or traceback was logged, and that nothing
changed without the token (the daemon's turn counter and the MQTT broker stay still).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import socket
import threading
import time

import pytest

from daemon_kit import build, events_of_turn, write_config
from sori.core.config.sections import HttpConfig
from sori.core.errors import ConfigError
from sori.serving.http_api import HttpApi

TOKEN = "correct-horse-battery-staple-0123456789"
GOOD_SAY = "거실 불 켜줘"


class Served:
    """One real daemon on a loop thread; `start` serves an HttpApi on it."""

    def __init__(self, daemon) -> None:
        self.daemon = daemon
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.apis: list[HttpApi] = []

    def call(self, coro, timeout_s: float = 30):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def start(self, bind: str = "127.0.0.1:0", token: str | None = TOKEN, **http) -> HttpApi:
        async def make():
            api = HttpApi(self.daemon, bind, HttpConfig(bind=bind, **http), token)
            await api.start()
            return api

        api = self.call(make())
        self.apis.append(api)
        return api

    def close(self) -> None:
        for api in self.apis:
            self.call(api.close())
        self.call(self.daemon.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture(scope="module")
def served(tmp_path_factory, mosquitto):
    folder = tmp_path_factory.mktemp("http_security")
    served = Served(build(write_config(folder, mosquitto), folder / "reply.wav"))
    yield served
    served.close()


def exchange(api: HttpApi, data: bytes, timeout_s: float = 3.0, half_close: bool = False):
    """Send raw bytes; (status or None, reply bytes). None: closed without an answer."""
    with socket.create_connection((api.host, api.port), timeout=timeout_s) as sock:
        try:
            sock.sendall(data)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before reading it all
        reply = b""
        try:
            while chunk := sock.recv(65536):
                reply += chunk
                head, sep, body = reply.partition(b"\r\n\r\n")
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
                if sep and length and len(body) >= int(length.group(1)):
                    break
        except (TimeoutError, ConnectionResetError):
            pass
    if not reply.startswith(b"HTTP/1."):
        return None, reply
    return int(reply.split(b" ", 2)[1]), reply


def request(
    api, method="POST", path="/say", body=None, headers=None, host=None, token=TOKEN
) -> bytes:
    """Raw request bytes, with the token unless `token` is None."""
    body = json.dumps({"text": GOOD_SAY}).encode() if body is None else body
    fields = {"Host": host or f"127.0.0.1:{api.port}", "Content-Type": "application/json"}
    if token is not None:
        fields["Authorization"] = f"Bearer {token}"
    fields.update(headers or {})
    if method == "POST" and "Content-Length" not in fields:
        fields["Content-Length"] = str(len(body))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in fields.items() if v is not None
    )
    return head.encode("utf-8", "surrogateescape") + b"\r\n" + (body if method == "POST" else b"")


@pytest.fixture
def still(served, subscriber):
    """Asserts at the end that no turn ran and nothing reached the broker."""
    before = served.daemon.turns_done
    yield
    assert served.daemon.turns_done == before
    with pytest.raises(Exception):  # noqa: B017 - queue.Empty: nothing was published
        subscriber.next(timeout_s=0.3)


FORM = "application/x-www-form-urlencoded"
LATIN1 = "application/json; charset=latin-1"
LONG_NUMBER = b'{"text": "x", "n": ' + b"7" * 5000 + b"}"
RAW_EXPECT = {"Expect": "\udc80"}  # the byte 0x80, as request() sends it
MALFORMED = [
    ("content-length abc", lambda a: request(a, headers={"Content-Length": "abc"}), 400),
    ("content-length -5", lambda a: request(a, headers={"Content-Length": "-5"}), 400),
    ("two content-lengths", lambda a: request(a, headers={"Content-Length": "3, 4"}), 400),
    ("huge header", lambda a: request(a, headers={"X-Big": "a" * 100_000}), 400),
    ("huge request line", lambda a: request(a, path="/" + "a" * 100_000), 400),
    ("not HTTP", lambda a: b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" * 20, 400),
    ("lone surrogate escaped", lambda a: request(a, body=b'{"text": "\\ud800 \xec\xbc\x9c"}'), 400),
    ("lone surrogate raw", lambda a: request(a, body=b'{"text": "\xed\xa0\x80"}'), 400),
    ("surrogate in path", lambda a: request(a, "GET", "/\udced\udca0\udc80"), 400),
    ("bad JSON", lambda a: request(a, body=b"{text: 1"), 400),
    ("JSON list", lambda a: request(a, body=b"[1, 2]"), 400),
    ("deep JSON", lambda a: request(a, body=b"[" * 60_000), 400),
    ("body too large", lambda a: request(a, body=b" " * 70_000), 413),
    ("no text", lambda a: request(a, body=b'{"text": 5}'), 400),
    ("5,000-digit number", lambda a: request(a, body=LONG_NUMBER), 400),
    ("form post", lambda a: request(a, body=b"text=x", headers={"Content-Type": FORM}), 415),
    ("text/plain", lambda a: request(a, headers={"Content-Type": "text/plain"}), 415),
    ("latin-1 JSON", lambda a: request(a, headers={"Content-Type": LATIN1}), 415),
    ("no Host", lambda a: request(a, "GET", "/health", headers={"Host": None}), 400),
    ("wrong method", lambda a: request(a, "GET", "/say"), 405),
    ("raw bytes in Expect", lambda a: request(a, "GET", "/health", headers=RAW_EXPECT), 417),
    ("Expect, no route", lambda a: request(a, "GET", "/nope", headers=RAW_EXPECT), 417),
    ("unknown path", lambda a: request(a, "GET", "/../../etc/passwd"), 404),
]  # fmt: skip


@pytest.mark.parametrize(("name", "make", "status"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_requests_get_4xx_and_log_no_error(served, quiet, still, name, make, status):
    api = served.start()
    got, reply = exchange(api, make(api))
    assert got == status, reply[:300]
    if b"application/json" in reply.split(b"\r\n\r\n")[0]:  # ours, with a reason
        assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]


def test_short_body_and_idle_connections_log_nothing_noisy(served, quiet, still):
    api = served.start()
    full = request(api)
    got, _ = exchange(api, full[: len(full) - 10], half_close=True)  # body short, EOF
    assert got in (None, 400)
    got, _ = exchange(api, b"GET /health HTTP/1.1\r\nHost: x", half_close=True)  # no end
    assert got in (None, 400)
    for _ in range(50):  # connect and leave: each used to log a 1.3 KB traceback
        with socket.create_connection((api.host, api.port)):
            pass
    assert exchange(api, request(api, "GET", "/health"))[0] == 200


def test_cross_site_form_post_and_dns_rebinding_are_refused(served, quiet, still):
    api = served.start()
    form = request(
        api, body="text=현관문 열어줘".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded",
                 "Origin": "http://evil.example"},
    )  # fmt: skip
    assert exchange(api, form)[0] == 403
    fetch = request(api, headers={"Origin": "http://evil.example"})  # fetch() with JSON
    assert exchange(api, fetch)[0] == 403
    assert exchange(api, request(api, headers={"Origin": "null"}))[0] == 403
    rebound = request(api, host=f"evil.example:{api.port}")  # the page's name, our address
    assert exchange(api, rebound)[0] == 421
    assert exchange(api, request(api, "GET", "/events", host="evil.example"))[0] == 421
    # with the token too: a rebinding page never has it, but Host is checked first anyway
    secured = served.start(token=TOKEN)
    signed = {"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"}
    assert exchange(secured, request(secured, headers=signed))[0] == 403


def test_generated_requests_never_act_without_the_token(served, quiet, still):
    api = served.start(token=TOKEN)
    rng = random.Random(9)
    templates = [
        request(api, token=None),
        request(api, "GET", "/metrics", token=None),
        request(api, "GET", "/health", token=None),
    ]
    statuses = set()
    for _ in range(150):
        data = bytearray(rng.choice(templates))
        for _ in range(rng.randint(1, 4)):
            data = data or bytearray(b"G")
            at = rng.randrange(len(data))
            kind = rng.randrange(5)
            if kind == 0:
                data[at] = rng.randrange(256)
            elif kind == 1:
                data[at:at] = rng.randbytes(rng.randint(1, 40))
            elif kind == 2:
                del data[at : at + rng.randint(1, 20)]
            elif kind == 3:
                data[at:at] = rng.choice([b"\r\n", b"\r\n\r\n", b":", b"\x00", b"\xed\xa0\x80"])
            else:
                data = data[:at]
        status, _ = exchange(api, bytes(data), timeout_s=0.3)
        statuses.add(status)
        assert status is None or status < 500 or status == 503, (status, bytes(data[:200]))
    assert exchange(api, request(api, "GET", "/health"))[0] == 200
    assert {400, 401} <= statuses  # the mutations reached both the parser and the guard
    assert statuses - {None, 200} <= {400, 401, 404, 405, 408, 413, 415, 421}, statuses


def test_the_token_guards_state_changes_and_unlocks_full_events(served, quiet, subscriber):
    api = served.start(token=TOKEN)
    before = served.daemon.turns_done
    assert exchange(api, request(api, token=None))[0] == 401
    assert exchange(api, request(api, headers={"Authorization": "Bearer nope"}))[0] == 401
    assert exchange(api, request(api, headers={"Authorization": f"Basic {TOKEN}"}))[0] == 401
    assert served.daemon.turns_done == before
    got, reply = exchange(api, request(api))
    assert got == 200, reply[:300]
    assert served.daemon.turns_done == before + 1
    assert subscriber.next() == ("sori/light/living_room/set", "ON")
    # loopback with a token: /events without it is open, but shows no words
    public, full = events_of(served, api, None), events_of(served, api, TOKEN)
    assert public and full
    assert "text" not in json.dumps(public) and GOOD_SAY not in json.dumps(public)
    finished = [e for e in public if e["type"] == "TurnFinished"][0]
    assert {"intent", "tier", "ok", "stages_ns", "utterance_id"} <= finished.keys()
    assert any(e.get("text") == GOOD_SAY for e in full)
    # nor what was done to which device: README "Security" lists what /events shows
    assert "light.living_room" not in json.dumps(public) and "mqtt" not in json.dumps(public)
    assert any(e.get("target") == "light.living_room" for e in full)
    subscriber.next()


def events_of(served, api, token):
    """The events of one authenticated /say as an /events client with `token` sees them."""
    import httpx

    async def scenario():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(base_url=api.url, timeout=20, headers=headers) as client:
            _, seen = await events_of_turn(
                client, GOOD_SAY, say_headers={"Authorization": f"Bearer {TOKEN}"}
            )
        return seen

    return asyncio.run(scenario())


def test_a_lan_bind_needs_a_token_and_then_every_endpoint_but_health_does(served, quiet):
    with pytest.raises(ConfigError, match="sori setup"):
        HttpApi(served.daemon, "0.0.0.0:0", HttpConfig(bind="0.0.0.0:0"), None)
    api = served.start("0.0.0.0:0", token=TOKEN)
    signed = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/metrics", "/events"):
        assert exchange(api_at_loopback(api), request(api, "GET", path, token=None))[0] == 401
    assert exchange(api_at_loopback(api), request(api, "GET", "/health", token=None))[0] == 200
    got, _ = exchange(api_at_loopback(api), request(api, "GET", "/metrics", headers=signed))
    assert got == 200


def test_without_a_token_nothing_changes_state_even_on_loopback(served, quiet, still):
    api = served.start(token=None)
    got, reply = exchange(api, request(api, token=None))
    assert got == 401 and b"sori setup" in reply
    assert b"Bearer TOKEN" in reply  # the format explained, not redacted
    assert exchange(api, request(api, "GET", "/metrics", token=None))[0] == 200


def api_at_loopback(api):
    class At:
        host, port = "127.0.0.1", api.port

    return At


def test_sori_run_refuses_a_lan_bind_without_a_token(tmp_path, mosquitto, monkeypatch, capsys):
    from sori.cli import main

    monkeypatch.delenv("SORI_API_TOKEN", raising=False)
    config = write_config(tmp_path, mosquitto)
    assert main(["run", "--config", str(config), "--http", "0.0.0.0:8377", "--input", "none"]) == 2
    err = capsys.readouterr().err
    assert "no API token" in err and "sori setup" in err


def test_event_clients_and_connections_are_capped(served, quiet):
    """Past the cap an idle connection that never sent the token makes room; connections
    serving a request or that carried the token are kept, and then a new one gets 503."""
    api = served.start(max_event_clients=2, max_connections=6)
    streams = []
    try:
        for _ in range(2):
            sock = socket.create_connection((api.host, api.port))
            sock.sendall(request(api, "GET", "/events", token=None))
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
            streams.append(sock)
        assert exchange(api, request(api, "GET", "/events"))[0] == 503
        idle = [socket.create_connection((api.host, api.port), timeout=5) for _ in range(4)]
        streams += idle
        time.sleep(0.2)
        assert exchange(api, request(api, "GET", "/health"))[0] == 200  # the oldest idle
        assert idle[0].recv(10) == b""  # one was closed to make room
        idle[0] = socket.create_connection((api.host, api.port), timeout=5)
        streams.append(idle[0])
        for sock in idle:  # now each carries the token, and stays open (keep-alive)
            sock.sendall(request(api, "GET", "/health"))
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        time.sleep(0.2)
        assert exchange(api, request(api, "GET", "/health"))[0] == 503
    finally:
        for sock in streams:
            sock.close()
    deadline = time.monotonic() + 5
    while exchange(api, request(api, "GET", "/health"))[0] != 200:
        assert time.monotonic() - deadline < 0, "connections were not released"
        time.sleep(0.1)


def test_a_number_too_long_to_read_is_a_400_that_says_so(served, quiet, still):
    api = served.start()
    got, reply = exchange(api, request(api, body=b'{"text": ' + b"9" * 4301 + b"}"))
    assert got == 400
    assert "digits" in json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/health"), ("GET", "/metrics"), ("GET", "/events"),
                         ("POST", "/say"), ("POST", "/mute")],
)  # fmt: skip
def test_a_non_ascii_authorization_header_is_a_4xx_logged_in_one_line(
    served, quiet, still, method, path
):
    api = served.start()
    quiet.clear()
    raw = request(api, method, path, token=None, headers={"Authorization": "Bearer \udcff"})
    assert b"Bearer \xff\r\n" in raw  # the raw byte, as a client sends it
    got, reply = exchange(api, raw)
    assert got in (400, 401), reply[:300]
    assert "ASCII" in json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]
    lines = [r for r in quiet.records if r.name.startswith("sori")]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert not lines[0].exc_info


def test_slow_headers_on_every_connection_do_not_lock_out_the_token_holder(
    served, quiet, subscriber
):
    """A LAN neighbour fills http.max_connections with requests it sends a byte at a time;
    the token holder's /say and /health still answer at once, and the slow connections
    are closed to make room (never more open than the cap)."""
    api = served.start()
    assert api.config.max_connections == 64
    slow: list[socket.socket] = []
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(0.3):
            for sock in list(slow):
                with contextlib.suppress(OSError):  # closed to make room
                    sock.send(b"a")

    threading.Thread(target=trickle, daemon=True).start()
    try:
        for round_ in range(2):  # the attacker reconnects: it keeps working
            for _ in range(64):
                sock = socket.create_connection((api.host, api.port))
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                slow.append(sock)
            time.sleep(0.5)
            for raw in (request(api), request(api, "GET", "/health")):
                started = time.monotonic()
                got, reply = exchange(api, raw, timeout_s=10)
                assert got == 200, (round_, reply[:300])
                assert time.monotonic() - started < 5
            assert subscriber.next() == ("sori/light/living_room/set", "ON")
        open_now = served.call(_open_connections(api))
        assert open_now <= api.config.max_connections
    finally:
        stop.set()
        for sock in slow:
            sock.close()


async def _open_connections(api: HttpApi) -> int:
    await asyncio.sleep(0.2)  # closes complete on the loop
    return len(api._runner.server.connections)


def test_events_without_the_token_show_no_targets_handlers_or_words():
    from sori.core.events import ActionFinished, TurnRouted, WakeDetected
    from sori.serving.daemon import event_json
    from sori.serving.http_api import public_event

    acted = ActionFinished(
        t_ns=1, utterance_id=2, intent="HassTurnOff", handler="mqtt", target="lock.front_door",
        ok=False, detail="sori/lock/front_door/set UNLOCK", speech="문을 열었어요", elapsed_ns=5,
    )  # fmt: skip
    assert public_event(event_json(acted)) == {
        "type": "ActionFinished", "t_ns": 1, "utterance_id": 2, "intent": "HassTurnOff",
        "ok": False, "elapsed_ns": 5,
    }  # fmt: skip
    routed = TurnRouted(
        t_ns=1, utterance_id=2, text="문 열어", tier="edge", reason="miss",
        endpoint="http://gpu.lan:8000", answer="네", ttft_ns=7, total_ns=9,
    )  # fmt: skip
    shown = public_event(event_json(routed))
    assert shown == {
        "type": "TurnRouted",
        "t_ns": 1,
        "utterance_id": 2,
        "tier": "edge",
        "intent": None,
        "ttft_ns": 7,
        "first_sentence_ns": None,
        "total_ns": 9,
    }
    woke = WakeDetected(t_ns=1, utterance_id=2, phrase="소리야", start_ns=3, end_ns=4, score=0.9)
    assert "phrase" not in public_event(event_json(woke))


def test_expect_100_continue_gets_the_interim_answer_then_the_reply(served, quiet, still):
    api = served.start()
    body = json.dumps({"text": " "}).encode()
    raw = request(api, body=body, headers={"Expect": "100-continue"})
    with socket.create_connection((api.host, api.port), timeout=5) as sock:
        sock.sendall(raw[: len(raw) - len(body)])  # the head only: wait to be asked
        assert sock.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        assert sock.recv(4096).startswith(b"HTTP/1.1 400")  # a blank text, refused
