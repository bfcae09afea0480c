from __future__ import annotations

from collections.abc import Iterator

from sori.speaking.cache import ReplyCache


class CountingVoice:
    """A voice that counts calls: the cache must stop them."""

    rate_hz = 16000

    def __init__(self) -> None:
        self.calls: list[str] = []

    def synthesize(self, text: str) -> Iterator[bytes]:
        self.calls.append(text)
        yield text.encode("utf-8") * 2


def test_second_request_is_served_from_memory():
    voice = CountingVoice()
    cache = ReplyCache(voice)
    first = list(cache.synthesize("켰어요"))
    second = list(cache.synthesize("켰어요"))
    assert first == second
    assert voice.calls == ["켰어요"]
    assert (cache.hits, cache.misses) == (1, 1)


def test_whitespace_does_not_split_entries():
    cache = ReplyCache(CountingVoice())
    cache.warm(["불을  켰어요"])
    assert "불을 켰어요" in cache


def test_warm_skips_known_and_long_texts():
    voice = CountingVoice()
    cache = ReplyCache(voice, max_chars=10)
    assert cache.warm(["네", "네", "아주 긴 응답은 캐시하지 않습니다"]) == 1
    assert voice.calls == ["네"]
    list(cache.synthesize("아주 긴 응답은 캐시하지 않습니다"))
    assert len(cache) == 1


def test_least_recently_used_entry_goes_first():
    cache = ReplyCache(CountingVoice(), max_entries=2)
    cache.warm(["a", "b"])
    cache.get("a")
    cache.warm(["c"])
    assert "a" in cache and "c" in cache and "b" not in cache


def test_clear_forgets_everything():
    voice = CountingVoice()
    cache = ReplyCache(voice)
    cache.warm(["네"])
    cache.clear()
    list(cache.synthesize("네"))
    assert voice.calls == ["네", "네"]
