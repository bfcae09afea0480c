"""Hypothesis over what the HTTP API reads: request heads (methods, paths, header names and
raw header bytes, the Authorization header) and /say bodies (bytes, JSON of any shape,
numbers too long to read, deep nesting), against a real daemon on loopback.

Every request gets a status below 500 (or 503 at a cap, or a close for broken framing);
nothing is logged above INFO, no traceback, and no turn runs.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon_kit import build, write_config
from test_http_security import TOKEN, Served, exchange

PATHS = ["/health", "/metrics", "/say", "/nope", "/say/../health", "/%ff", "/say?x=1"]
"""Never /events (it streams) nor /mute, /unmute, /listen (they change state)."""
FUZZ = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def api(tmp_path_factory, mosquitto):
    folder = tmp_path_factory.mktemp("http_fuzz")
    served = Served(build(write_config(folder, mosquitto), folder / "reply.wav"))
    try:
        yield served.start(token=TOKEN)
    finally:
        served.close()


header_bytes = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=30).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"\xff", b"\xed\xa0\x80", b"\x00", b"\x1b[31m", "거실".encode()]),
)
authorization = st.one_of(
    st.none(),
    st.just(f"Bearer {TOKEN}".encode()),
    st.builds(lambda b: b"Bearer " + b, header_bytes),
    header_bytes,
)
header_name = st.one_of(
    st.sampled_from(["X-Any", "Origin", "Content-Type", "Accept", "Cookie", "Expect"]),
    st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12),
)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def cannot_run_a_turn(body: bytes) -> bool:
    """A body /say refuses (the fuzz must change nothing): no non-blank "text" in it."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return True
    text = data.get("text") if isinstance(data, dict) else None
    return not (isinstance(text, str) and text.strip())


bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")),
    st.fixed_dictionaries({"text": json_values}).map(lambda v: json.dumps(v).encode()),
    st.sampled_from([
        b'{"text": ' + b"9" * 4301 + b"}",
        b'{"text": "", "n": -' + b"1" * 10_000 + b"}",
        b"[" * 50_000,
        b'{"text": "\\ud800"}',
        b'{"text": NaN}',
        b'{"text": "\xed\xa0\x80"}',
        b"\xef\xbb\xbf{}",
    ]),
).filter(cannot_run_a_turn)  # fmt: skip


def raw_request(api, method: str, path: str, fields: list[tuple[bytes, bytes]], body: bytes):
    head = [f"{method} {path} HTTP/1.1".encode(), f"Host: 127.0.0.1:{api.port}".encode()]
    head += [name + b": " + value for name, value in fields]
    head.append(f"Content-Length: {len(body)}".encode())
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def check(api, data: bytes) -> int | None:
    status, reply = exchange(api, data, timeout_s=2)
    assert status is None or status < 500 or status == 503, (status, reply[:300], data[:300])
    if status is not None and status >= 400 and b"application/json" in reply:
        assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]
    return status


@FUZZ
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "OPTIONS"]),  # HEAD: no body
    path=st.sampled_from(PATHS),
    auth=authorization,
    extra=st.lists(st.tuples(header_name.map(str.encode), header_bytes), max_size=4),
)
def test_any_request_head_gets_a_4xx_or_an_answer_never_a_500(
    api, quiet, method, path, auth, extra
):
    before = api.daemon.turns_done
    fields = [(b"Content-Type", b"application/json"), *extra]
    if auth is not None:
        fields.append((b"Authorization", auth))
    check(api, raw_request(api, method, path, fields, b'{"text": " "}'))
    assert api.daemon.turns_done == before


@FUZZ
@given(
    body=bodies,
    content_type=st.sampled_from([b"application/json", b"application/json; charset=utf-8"]),
)
def test_any_say_body_gets_a_400_never_a_500(api, quiet, body, content_type):
    before = api.daemon.turns_done
    fields = [(b"Content-Type", content_type), (b"Authorization", f"Bearer {TOKEN}".encode())]
    assert check(api, raw_request(api, "POST", "/say", fields, body)) in (400, 413)
    assert api.daemon.turns_done == before
