"""One redaction function for every sink: logs, /events, /say replies, handler errors."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon_kit import build, events_of_turn, write_config
from sori.core.logs import JsonFormatter, StderrHandler, TextFormatter
from sori.core.redact import is_secret_name, redact, redact_data
from sori.serving.http_api import HttpApi

SECRET_URL = "http://bob:hunter2@127.0.0.1:{port}/hook?token=s3cret&room=1"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("POST https://bob:hunter2@h.example/x?token=abc&room=1 500",
         "POST https://***@h.example/x?token=***&room=1 500"),
        ("mqtt://sori:pw@broker:1883", "mqtt://***@broker:1883"),
        ("x?api_key=K&X-Amz-Signature=S&sig=Q&access_token=T&page=2",
         "x?api_key=***&X-Amz-Signature=***&sig=***&access_token=***&page=2"),
        ("Authorization: Bearer sk-123.abc", "Authorization: Bearer ***"),
        ("Authorization: raw-secret", "Authorization: ***"),
        ("headers {'X-Api-Key': 'abcd', 'Accept': 'json'} Basic dXNlcjpwYXNz",
         "headers {'X-Api-Key': '***', 'Accept': 'json'} Basic ***"),
        ('{"password": "hunter2", "client_secret": "x"}',
         '{"password": "***", "client_secret": "***"}'),
        # where a secret lives is not a secret; ordinary words stay
        ("home_assistant.token_env: $SORI_HA_TOKEN is not set",
         "home_assistant.token_env: $SORI_HA_TOKEN is not set"),
        ("unknown key http.tokn; known keys: allowed_hosts, bind",
         "unknown key http.tokn; known keys: allowed_hosts, bind"),
        ("거실 불 켜줘 (turn 3)", "거실 불 켜줘 (turn 3)"),
    ],
)  # fmt: skip
def test_redact_masks_credentials_and_keeps_the_rest(text, shown):
    assert redact(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "send 'Authorization: Bearer TOKEN' with the API token (sori setup)",
        "/etc/passwd: expected a mapping at the top level, got str",
        "sori.toml:3: each line is `key = value`, `[section]` or `[[list]]`",
        'strings need quotes (key = "text"); true/false are lower case',
        "api_key.txt: cannot read it (permission denied)",
        "my-secret-key.tar: not a bundle (no manifest.toml)",
        "C:\\Users\\me\\token: not found",
        "clients send `Authorization: Bearer $(cat TOKEN_FILE)`",
        "set api_key = API_KEY in [edge]",
    ],
)  # fmt: skip
def test_redact_keeps_the_words_around_a_secret(text):
    """Messages that explain a format or name a file have no secret in them."""
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("edge.endpoints.api_key: sk-live-abc", "edge.endpoints.api_key: ***"),
        ('api_key = "sk-live-abc"', 'api_key = "***"'),
        ("password=hunter2 user=bob", "password=*** user=bob"),
        ("Authorization: Bearer ABCDEFGHIJKLMNOPQRSTUVWXYZ", "Authorization: Bearer ***"),
        ("token: value2", "token: ***"),
        ("A: password=0000000", "A: password=***"),  # a pair in another's value
        ("note=a:b=c password=x", "note=a:b=c password=***"),
    ],
)  # fmt: skip
def test_redact_still_masks_values_that_look_like_placeholders_but_are_not(text, shown):
    assert redact(text) == shown


def test_redact_data_walks_json_and_masks_secret_keys():
    data = {"a": ["http://u:p@h/"], "apiKey": "x", "n": 1, "token_file": "/etc/t"}
    assert redact_data(data) == {"a": ["http://***@h/"], "apiKey": "***", "n": 1,
                                 "token_file": "/etc/t"}  # fmt: skip
    assert is_secret_name("Authorization") and not is_secret_name("keys")


@pytest.mark.parametrize("formatter", [JsonFormatter(), TextFormatter("%(message)s %(turn)s")])
def test_log_formatters_redact(formatter):
    record = logging.makeLogRecord(
        {"msg": "webhook %s failed", "args": ("https://u:hunter2@h/?token=s3cret",),
         "turn": {"error": "Bearer abc.def"}, "levelname": "INFO"}
    )  # fmt: skip
    line = formatter.format(record)
    assert "hunter2" not in line and "s3cret" not in line and "abc.def" not in line
    assert "https://***@h/?token=***" in line


def test_a_webhook_url_with_credentials_leaks_to_no_sink(tmp_path, mosquitto):
    """webhook.url with user:pass@ and ?token=: the action fails (nothing listens) and
    neither the log, nor /events (even with the token), nor the /say reply shows them."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: the webhook is refused
    extra = f"""
[webhook]
url = "{SECRET_URL.format(port=port)}"

[[home.devices]]
id = "switch.fan"
name = "선풍기"
area = "living_room"
handler = "webhook"
"""
    daemon = build(write_config(tmp_path, mosquitto, extra), tmp_path / "reply.wav")
    logged = io.StringIO()
    handler = logging.StreamHandler(logged)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    token = "t" * 32

    async def main():
        import httpx

        api = HttpApi(daemon, "127.0.0.1:0", token=token)
        await api.start()
        auth = {"Authorization": f"Bearer {token}"}
        try:
            async with httpx.AsyncClient(base_url=api.url, timeout=20, headers=auth) as client:
                said, seen = await events_of_turn(client, "선풍기 켜줘")
                return said.text, json.dumps(seen, ensure_ascii=False)
        finally:
            await api.close()
            await daemon.close()

    try:
        reply, events = asyncio.run(main())
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    turn = json.loads(reply)
    assert turn["actions"] and not turn["actions"][0]["ok"]  # the webhook really failed
    for sink in (reply, events, logged.getvalue()):
        assert "127.0.0.1" in sink and "webhook" in sink  # the failure is reported ...
        assert "hunter2" not in sink and "s3cret" not in sink  # ... without the secrets
        assert "bob" not in sink


SECRET_PLACES = [
    "password={}", "Authorization: Bearer {}", "https://bob:{}@h.example/x", "GET /x?token={}",
    '{{"api_key": "{}"}}', "client_secret: {}", "Basic {}",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(max_size=40),
    after=st.text(max_size=40),
    place=st.sampled_from(SECRET_PLACES),
    secret=st.from_regex(r"[A-Za-z0-9]{6,18}[0-9]", fullmatch=True),
)
def test_a_secret_anywhere_in_any_text_is_masked_and_redact_never_fails(
    before, after, place, secret
):
    text = f"{before} {place.format(secret)} {after}"
    shown = redact(text)
    assert shown.count(secret) <= f"{before} {after}".count(secret)  # only theirs, if any
    assert redact(shown) == shown  # masking twice changes nothing


def test_log_lines_follow_stderr_when_a_driver_swaps_it(monkeypatch):
    """A handler made while stderr was one stream (a command run in-process under a
    test's capture, which then closes it) writes to stderr as it is now."""
    first, now = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    handler = StderrHandler()
    handler.setFormatter(TextFormatter("%(message)s"))
    first.close()
    monkeypatch.setattr("sys.stderr", now)
    handler.emit(logging.makeLogRecord({"msg": "token=s3cret heard"}))
    assert now.getvalue() == "token=*** heard\n"
