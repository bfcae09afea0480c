"""Fixed replies synthesized once: acknowledgements, preset responses, the error earcon.

A preset answer's reply is known the moment the intent commits; when its audio is
already in memory the speaker starts within milliseconds instead of waiting for the
voice (hundreds of milliseconds on a Raspberry Pi).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator

from sori.speaking.base import Voice

log = logging.getLogger(__name__)


class ReplyCache:
    """Memoizes a voice's audio for short texts, least recently used out first."""

    def __init__(self, voice: Voice, max_entries: int = 128, max_chars: int = 80) -> None:
        self.voice = voice
        self.max_entries = max_entries
        """How many replies to keep."""
        self.max_chars = max_chars
        """Longer texts are never cached (they are rarely repeated)."""
        self._audio: OrderedDict[str, tuple[bytes, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self._stop_warming = threading.Event()
        """Set at shutdown: warming ends before its next reply."""

    @property
    def rate_hz(self) -> int:
        return self.voice.rate_hz

    def __len__(self) -> int:
        return len(self._audio)

    def __contains__(self, text: str) -> bool:
        return _key(text) in self._audio

    def get(self, text: str) -> tuple[bytes, ...] | None:
        """The cached sentences of `text`, or None."""
        key = _key(text)
        with self._lock:
            found = self._audio.get(key)
            if found is not None:
                self._audio.move_to_end(key)
            return found

    def clear(self) -> None:
        """Forget every reply (the next ones are synthesized again)."""
        with self._lock:
            self._audio.clear()

    def warm(self, texts: Iterable[str]) -> int:
        """Synthesize and keep every text not yet cached (blocking); returns how many were new.

        Stops between two replies once `stop_warming()` was called, so a warming thread never
        outlives shutdown by more than one synthesis."""
        added = 0
        for text in dict.fromkeys(t for t in texts if t.strip()):
            if self._stop_warming.is_set():
                break
            if text not in self and len(text) <= self.max_chars:
                self._put(text, tuple(self.voice.synthesize(text)))
                added += 1
        return added

    def stop_warming(self) -> None:
        """Make `warm()` return before its next reply (shutdown; cannot be undone)."""
        self._stop_warming.set()

    def synthesize(self, text: str) -> Iterator[bytes]:
        """Like `Voice.synthesize`, served from memory when cached; short texts get cached."""
        found = self.get(text)
        if found is not None:
            self.hits += 1
            yield from found
            return
        self.misses += 1
        chunks = []
        for chunk in self.voice.synthesize(text):
            chunks.append(chunk)
            yield chunk
        if len(text) <= self.max_chars:
            self._put(text, tuple(chunks))

    def _put(self, text: str, chunks: tuple[bytes, ...]) -> None:
        with self._lock:
            self._audio[_key(text)] = chunks
            self._audio.move_to_end(_key(text))
            while len(self._audio) > self.max_entries:
                self._audio.popitem(last=False)


def _key(text: str) -> str:
    return " ".join(text.split())
