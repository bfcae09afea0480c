from __future__ import annotations

import asyncio

import pytest

from sori.thinking.sse import DONE, StreamFault, ThinkFilter, content_of, next_event


async def lines_of(*lines: str):
    for line in lines:
        yield line


def first_event(*lines: str):
    return asyncio.run(next_event(lines_of(*lines)))


def test_events_comments_and_the_end():
    assert first_event(": keep-alive", "", "event: message", 'data: {"a": 1}') == {"a": 1}
    assert first_event("data: [DONE]") is DONE
    assert first_event() is None


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("data: {oops", "not JSON"),
        ("data: [1, 2]", "malformed stream"),
        ("<html>", "unexpected line"),
    ],
)
def test_malformed_lines(line, reason):
    with pytest.raises(StreamFault, match=reason):
        first_event(line)


def test_content_skips_reasoning_and_notes_the_finish():
    delta = {"reasoning_content": "hmm", "reasoning": "hmm", "content": "Hi"}
    assert content_of({"choices": [{"delta": delta, "finish_reason": None}]}) == ("Hi", False)
    assert content_of({"choices": [{"delta": {}, "finish_reason": "stop"}]}) == ("", True)
    assert content_of({"choices": [], "usage": {"total_tokens": 3}}) == ("", False)
    with pytest.raises(StreamFault, match="overloaded"):
        content_of({"error": {"message": "overloaded"}})


@pytest.mark.parametrize(
    ("pieces", "spoken"),
    [
        (["<think>plan</think>Answer."], "Answer."),
        (["<", "thi", "nk>a", "b</th", "ink>", " Ok."], "Ok."),
        (["  <think>x</think>\n\nYes"], "Yes"),
        (["No think here."], "No think here."),
        (["a <think> in the middle"], "a <think> in the middle"),
    ],
)
def test_inline_thinking_is_dropped(pieces, spoken):
    think = ThinkFilter()
    assert "".join(think.feed(p) for p in pieces) == spoken
