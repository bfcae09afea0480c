from __future__ import annotations

from sori.hearing.audio.format import frame_bytes
from sori.hearing.audio.ring import FrameChunker, FrameRing


def test_chunker_cuts_any_pieces_into_timed_frames():
    chunker = FrameChunker(20)
    size = frame_bytes(20)
    pieces = [b"\x01" * 100, b"\x02" * (size * 2), b"\x03" * 50]
    frames = [f for p in pieces for f in chunker.push(p)] + list(chunker.flush())
    assert [len(f.pcm) for f in frames] == [size] * 3
    assert [f.start_ns for f in frames] == [0, 20_000_000, 40_000_000]
    assert frames[-1].pcm.endswith(b"\x00")  # padded with silence
    assert list(chunker.flush()) == []


def test_ring_keeps_only_the_latest_frames():
    chunker = FrameChunker(10)
    ring = FrameRing(30, 10)
    frames = list(chunker.push(bytes(frame_bytes(10) * 5)))
    for f in frames:
        ring.push(f)
    assert [f.start_ns for f in ring.drain()] == [f.start_ns for f in frames[-3:]]
    assert len(ring) == 0
