"""The edge client against real servers on loopback: llama.cpp's OpenAI-compatible server
standing in for vLLM, plus small servers and a proxy that fail in the ways networks do."""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
import time

import pytest
from llm_servers import DelayProxy, FaultServer, LlamaServer, chunk, free_port, reply, self_signed
from llm_servers import sse as send_sse

from sori.core.clock import FakeClock
from sori.core.events import AnswerChunk, TurnRouted
from sori.thinking.base import Ask, EdgeInterrupted, EdgeUnavailable, Judgment, Turn
from sori.thinking.edge import EdgeClient, EdgeSettings, Endpoint, endpoint_key
from sori.thinking.router import Router, RouterSettings

CALM = {
    "connect_timeout_ms": 10000,
    "first_byte_timeout_ms": 30000,
    "stall_timeout_ms": 30000,
    "probe_timeout_ms": 30000,
}
"""Timeouts no busy test machine reaches, for every test that is not about a timeout."""


def calm(**fields) -> EdgeSettings:
    return EdgeSettings(**{**CALM, **fields})


FAST = calm(max_tokens=6, temperature=0.0)
"""Short answers from the one-thread llama server."""
S = 1_000_000_000


def collect(client: EdgeClient, ask: Ask | None = None, timeout_s: float = 90) -> list:
    async def go():
        try:
            return [t async for t in client.stream(ask or Ask("안녕", language="ko"))]
        finally:
            await client.aclose()

    return asyncio.run(asyncio.wait_for(go(), timeout_s))


def fails(client: EdgeClient, error: type, timeout_s: float = 90) -> Exception:
    with pytest.raises(error) as caught:
        collect(client, timeout_s=timeout_s)
    return caught.value


@pytest.fixture
def servers():
    """Start stdlib fault servers on demand; all are closed after the test."""
    started: list[FaultServer] = []

    def start(behaviour, tls=None) -> FaultServer:
        server = FaultServer(behaviour, tls)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def answering(*events: str):
    def behaviour(handler):
        if handler.command == "GET":
            reply(handler, 200, b'{"status": "ok"}')
        else:
            send_sse(handler, list(events))

    return behaviour


HELLO = answering(chunk("Hello. "), chunk("World.", finish="stop"), "[DONE]")


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


# -- the happy path on the llama.cpp server ---------------------------------------------------


def test_streams_an_answer_from_an_openai_compatible_server(llama_server: LlamaServer):
    client = EdgeClient([Endpoint(llama_server.url)], FAST)
    tokens = collect(client)
    assert tokens and "".join(t.text for t in tokens).strip()
    assert {t.source for t in tokens} == {llama_server.url}
    health = client.health(llama_server.url)
    assert health.in_rotation and len(health.samples_ms) == 1


def test_the_request_follows_the_vllm_contract(servers):
    server = servers(HELLO)
    settings = calm(max_tokens=50, thinking_max_tokens=900, allow_thinking=True)
    client = EdgeClient([Endpoint(server.url, api_key="sk-test")], settings)
    history = (Turn("불 켜", "켰어요"),)
    collect(client, Ask("오늘 뭐 하지?", history, "ko"))
    collect(client, Ask("plan my week", (), "en", deep=True))
    shallow, deep = (r for r in server.requests if r["method"] == "POST")
    assert shallow["path"] == "/v1/chat/completions"
    assert shallow["headers"]["Authorization"] == "Bearer sk-test"
    body = shallow["body"]
    assert body["model"] == "local" and body["stream"] is True
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["max_tokens"] == 50
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][-1]["content"] == "오늘 뭐 하지?"
    assert "Korean" in body["messages"][0]["content"]
    assert deep["body"]["chat_template_kwargs"] == {"enable_thinking": True}
    assert deep["body"]["max_tokens"] == 900


def test_thinking_stays_off_for_deep_turns_unless_the_config_allows_it(servers):
    server = servers(HELLO)
    collect(EdgeClient([Endpoint(server.url)], calm()), Ask("plan", deep=True))
    assert server.requests[-1]["body"]["chat_template_kwargs"] == {"enable_thinking": False}


def test_reasoning_is_never_spoken(servers):
    server = servers(
        answering(
            chunk(reasoning_content="Let me think about the sky."),
            chunk(reasoning="More thoughts."),
            chunk("The sky "),
            chunk("is blue.", finish="stop"),
            "[DONE]",
        )
    )
    inline = servers(
        answering(chunk("<th"), chunk("ink>secret plan</think>"), chunk("Yes."), "[DONE]")
    )
    tokens = collect(EdgeClient([Endpoint(server.url)], calm()))
    assert "".join(t.text for t in tokens) == "The sky is blue."
    tokens = collect(EdgeClient([Endpoint(inline.url)], calm()))
    assert "".join(t.text for t in tokens) == "Yes."


# -- faults, each ending in the right fallback --------------------------------------------------


def test_a_dead_endpoint_fails_over_to_the_next(llama_server: LlamaServer):
    dead = dead_url()
    client = EdgeClient([Endpoint(dead), Endpoint(llama_server.url)], FAST)
    tokens = collect(client)
    assert tokens and {t.source for t in tokens} == {llama_server.url}
    assert "cannot connect" in client.health(dead).out_reason
    assert client.health(llama_server.url).in_rotation


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (500, {}, "HTTP 500"),
        (429, {"Retry_After": "30"}, "HTTP 429"),
        (503, {}, "HTTP 503"),
    ],
)
def test_http_errors_fail_over(llama_server: LlamaServer, servers, status, headers, expected):
    bad = servers(lambda h: reply(h, status, b'{"error": "nope"}', **headers))
    clock = FakeClock(100 * S)
    client = EdgeClient([Endpoint(bad.url), Endpoint(llama_server.url)], FAST, clock)
    tokens = collect(client)
    assert {t.source for t in tokens} == {llama_server.url}
    health = client.health(bad.url)
    assert expected in health.out_reason
    if status == 429:
        assert "retry after 30 s" in health.out_reason
        assert health.retry_at_ns >= clock.now_ns() + 30 * S  # Retry-After is respected


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (["{not json"], "not JSON"),
        (['{"object": "chat.completion.chunk"}'], "without choices"),
        (['{"choices": [{"delta": {"content": 42}}]}'], "not text"),
        (['{"error": {"message": "CUDA out of memory"}}'], "CUDA out of memory"),
    ],
)
def test_a_malformed_stream_fails_over(llama_server: LlamaServer, servers, events, expected):
    bad = servers(answering(*events))
    client = EdgeClient([Endpoint(bad.url), Endpoint(llama_server.url)], FAST)
    tokens = collect(client)
    assert {t.source for t in tokens} == {llama_server.url}
    assert expected in client.health(bad.url).out_reason


def test_a_line_that_is_not_server_sent_events_is_malformed(servers):
    def garbage(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(b"<html>proxy error</html>\n\n")
        handler.close_connection = True

    client = EdgeClient([Endpoint(servers(garbage).url)], calm())
    error = fails(client, EdgeUnavailable)
    assert "malformed stream: unexpected line" in error.reason


def test_a_slow_first_byte_fails_over_within_the_timeout(llama_server: LlamaServer):
    proxy = DelayProxy(llama_server.port, delay_s=300)
    try:
        slow = Endpoint(proxy.url, first_byte_timeout_ms=800)
        client = EdgeClient([slow, Endpoint(llama_server.url)], FAST)
        started = time.monotonic()
        tokens = collect(client)
        assert time.monotonic() - started < 120  # the 300 s delay was not waited out
        assert {t.source for t in tokens} == {llama_server.url}
        assert "no first byte within 0.8 s" in client.health(proxy.url).out_reason
    finally:
        proxy.close()


def test_a_slow_p95_takes_an_endpoint_out_of_the_rotation(llama_server: LlamaServer):
    proxy = DelayProxy(llama_server.port, delay_s=0.3)
    try:
        settings = calm(max_tokens=2, ttfb_min_samples=2)
        slow = Endpoint(proxy.url, ttfb_threshold_ms=100)
        client = EdgeClient([slow, Endpoint(llama_server.url)], settings)
        for _ in range(2):
            assert {t.source for t in collect(client)} == {proxy.url}
        assert "p95 time to first byte" in client.health(proxy.url).out_reason
        assert {t.source for t in collect(client)} == {llama_server.url}
    finally:
        proxy.close()


def test_when_every_endpoint_fails_the_breaker_stops_further_requests(servers):
    errors = servers(lambda h: reply(h, 500, b"{}"))
    clock = FakeClock(0)
    dead = dead_url()
    client = EdgeClient([Endpoint(dead), Endpoint(errors.url)], calm(), clock)
    started = time.monotonic()
    error = fails(client, EdgeUnavailable)
    assert time.monotonic() - started < 60  # nothing waited on a dead endpoint
    assert "cannot connect" in error.reason and "HTTP 500" in error.reason
    hits = len(errors.requests)
    error = fails(client, EdgeUnavailable)  # no probe is due yet: nothing is sent
    assert "no edge endpoint in rotation" in error.reason
    assert len(errors.requests) == hits


def test_an_endpoint_is_probed_back_into_the_rotation(llama_server: LlamaServer, servers):
    clock = FakeClock(0)
    client = EdgeClient([Endpoint(llama_server.url)], FAST, clock)
    client.health(llama_server.url).record_failure("test", clock.now_ns())
    fails(client, EdgeUnavailable)  # its wait is not over
    clock.advance_ns(2 * S)
    tokens = collect(client)  # probe (no /health here, so /v1/models), then the request
    assert {t.source for t in tokens} == {llama_server.url}
    assert client.health(llama_server.url).in_rotation

    healthy = servers(HELLO)
    client = EdgeClient([Endpoint(healthy.url)], calm(), clock)
    client.health(healthy.url).record_failure("test", clock.now_ns())
    clock.advance_ns(2 * S)
    asyncio.run(client.probe_due())
    assert client.health(healthy.url).in_rotation
    assert [r["path"] for r in healthy.requests] == ["/health"]


def test_a_dead_endpoint_is_probed_less_and_less_often():
    clock = FakeClock(0)
    dead = dead_url()
    client = EdgeClient([Endpoint(dead)], calm(retry_initial_ms=1000), clock)
    client.health(dead).record_failure("test", 0)
    waits = []
    for _ in range(3):
        clock.advance_ns(client.health(dead).retry_at_ns - clock.now_ns())
        asyncio.run(client.probe_due())
        waits.append((client.health(dead).retry_at_ns - clock.now_ns()) / S)
    assert waits == [2, 4, 8]
    assert "probe failed" in client.health(dead).out_reason


def test_a_stream_that_stalls_is_cut_at_the_stall_timeout(servers):
    release = threading.Event()

    def stall(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        handler.wfile.write(f"data: {chunk('Hello. ')}\n\n".encode())
        handler.wfile.flush()
        release.wait(300)

    client = EdgeClient([Endpoint(servers(stall).url)], calm(stall_timeout_ms=500))
    started = time.monotonic()
    try:
        error = fails(client, EdgeInterrupted)
    finally:
        release.set()
    assert time.monotonic() - started < 60  # not the server's 300 s
    assert error.partial == "Hello. " and "stream stalled for 500 ms" in error.reason


def test_a_stream_that_ends_early_is_interrupted(servers):
    client = EdgeClient([Endpoint(servers(answering(chunk("Half a "))).url)], calm())
    error = fails(client, EdgeInterrupted)
    assert error.partial == "Half a " and "ended before" in error.reason


def test_a_server_killed_mid_stream_hands_the_turn_to_the_device(gguf, tmp_path):
    server = LlamaServer(gguf, tmp_path / "server.log")
    try:
        server.wait_ready()
        settings = calm(max_tokens=64, extra_body={"min_tokens": 64})
        edge = EdgeClient([Endpoint(server.url)], settings)

        class Local:
            async def judge(self, ask):
                return Judgment(None, {}, True, 1.0)

            async def stream(self, ask):
                from sori.thinking.base import Token

                yield Token("기기 답이에요.")

        router = Router(None, Local(), edge, RouterSettings(first_token_budget_ms=60000))

        killed_at = []

        async def go():
            routed = None
            async for event in router.turn("우주에 대해 이야기해 줘"):
                first = isinstance(event, AnswerChunk) and not killed_at
                if first and event.source == server.url:
                    server.kill()  # SIGKILL while it is generating
                    killed_at.append(time.monotonic())
                if isinstance(event, TurnRouted):
                    routed = event
            await edge.aclose()
            return routed

        routed = asyncio.run(asyncio.wait_for(go(), 120))
        # Noticed from the broken connection, not by waiting out the 30 s stall timeout.
        assert time.monotonic() - killed_at[0] < 20
        assert routed.tier == "local" and routed.endpoint == server.url
        assert "edge broke off" in routed.reason
        assert routed.answer.endswith("기기 답이에요.")
        assert not edge.health(server.url).in_rotation
    finally:
        server.kill()


# -- secrets and TLS ------------------------------------------------------------------------------


def test_the_api_key_is_sent_but_never_logged(servers, caplog, monkeypatch):
    monkeypatch.setenv("SORI_TEST_EDGE_KEY", "sk-SECRET-123")
    key = endpoint_key("", "SORI_TEST_EDGE_KEY")
    assert key == "sk-SECRET-123"
    assert endpoint_key("from-config", "SORI_TEST_EDGE_KEY") == "from-config"
    good = servers(HELLO)
    bad = servers(lambda h: reply(h, 500, b"{}"))
    endpoints = [Endpoint(bad.url, api_key=key), Endpoint(good.url, api_key=key)]
    assert "SECRET" not in repr(endpoints)
    caplog.set_level(logging.DEBUG)
    collect(EdgeClient(endpoints, calm()))
    assert good.requests[-1]["headers"]["Authorization"] == "Bearer sk-SECRET-123"
    assert "SECRET" not in caplog.text
    assert "HTTP 500" in caplog.text  # the failure itself is logged


def test_credentials_in_a_url_are_not_shown():
    endpoint = Endpoint("https://user:pw@edge.example:8443/v1/")
    assert endpoint.display == "https://edge.example:8443/v1"
    assert endpoint.root == "https://user:pw@edge.example:8443"


def test_tls_is_verified_and_a_private_ca_can_be_added(servers, tmp_path):
    cert, key = self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = servers(HELLO, tls=context)
    assert server.url.startswith("https://")
    error = fails(EdgeClient([Endpoint(server.url)], calm()), EdgeUnavailable)
    assert "CERTIFICATE_VERIFY_FAILED" in error.reason or "certificate" in error.reason.lower()
    tokens = collect(EdgeClient([Endpoint(server.url, ca_file=str(cert))], calm()))
    assert "".join(t.text for t in tokens) == "Hello. World."


def test_one_client_serves_several_event_loops(servers):
    server = servers(HELLO)
    client = EdgeClient([Endpoint(server.url)], calm())

    async def once():
        return "".join([t.text async for t in client.stream(Ask("hi"))])

    assert asyncio.run(once()) == "Hello. World."
    assert asyncio.run(once()) == "Hello. World."  # a fresh httpx client for the new loop
    asyncio.run(client.aclose())
