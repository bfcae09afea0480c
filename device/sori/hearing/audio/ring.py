"""Buffers: cutting a byte stream into timed frames, and a bounded ring of recent frames."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from sori.hearing.audio.format import AudioFrame, check_frame_ms, frame_bytes


class FrameChunker:
    """Cuts pipeline PCM arriving in arbitrary pieces into frames of `frame_ms`, each
    stamped with its stream time (counted from samples, never from a wall clock)."""

    def __init__(self, frame_ms: int = 20) -> None:
        self.frame_ms = check_frame_ms(frame_ms)
        self._size = frame_bytes(frame_ms)
        self._pending = bytearray()
        self._next_start_ns = 0

    def push(self, pcm: bytes) -> Iterator[AudioFrame]:
        """Frames completed by `pcm`."""
        self._pending += pcm
        while len(self._pending) >= self._size:
            chunk = bytes(self._pending[: self._size])
            del self._pending[: self._size]
            frame = AudioFrame(chunk, self._next_start_ns)
            self._next_start_ns = frame.end_ns
            yield frame

    def flush(self) -> Iterator[AudioFrame]:
        """The last, partial frame padded with silence; nothing when none is pending."""
        if self._pending:
            pcm = bytes(self._pending) + bytes(self._size - len(self._pending))
            self._pending.clear()
            frame = AudioFrame(pcm, self._next_start_ns)
            self._next_start_ns = frame.end_ns
            yield frame


class FrameRing:
    """The most recent frames up to `capacity_ms`; older ones fall off (the pre-roll)."""

    def __init__(self, capacity_ms: int, frame_ms: int) -> None:
        self._frames: deque[AudioFrame] = deque(maxlen=max(0, capacity_ms // frame_ms))

    def push(self, frame: AudioFrame) -> None:
        if self._frames.maxlen:
            self._frames.append(frame)

    def drain(self) -> list[AudioFrame]:
        """All buffered frames, oldest first; the ring is empty afterwards."""
        frames = list(self._frames)
        self._frames.clear()
        return frames

    def __len__(self) -> int:
        return len(self._frames)
