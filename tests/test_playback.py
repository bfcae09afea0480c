"""Player: replies into a sink, in order, stoppable; real espeak-ng voice, WAV sink."""

from __future__ import annotations

import asyncio
import wave

from sori.core.clock import MonotonicClock
from sori.core.events import PlaybackStarted, PlaybackStopped
from sori.hearing.audio.sinks import WavSink
from sori.speaking.cache import ReplyCache
from sori.speaking.earcon import earcon
from sori.speaking.espeak import EspeakVoice
from sori.speaking.playback import Player


class BrokenVoice:
    rate_hz = 16000

    def synthesize(self, text):
        raise RuntimeError("voice model crashed")
        yield b""


def player(tmp_path, voice=None):
    events = []
    sink = WavSink(tmp_path / "out.wav")
    cache = ReplyCache(voice or EspeakVoice("ko"))
    return Player(sink, cache, MonotonicClock(), events.append), events, sink


def test_earcon_then_reply_is_one_playback(tmp_path):
    play, events, sink = player(tmp_path)
    spoken = asyncio.run(play.say("기기를 제어하지 못했어요.", 4, tone="error"))
    sink.close()
    assert [type(e) for e in events] == [PlaybackStarted, PlaybackStopped]
    assert events[0].utterance_id == 4 and not events[0].cached
    tone_samples = len(earcon("error", 22050)) // 2
    with wave.open(str(tmp_path / "out.wav")) as wav:
        assert wav.getnframes() > tone_samples + 22050 // 2
        assert abs(spoken.audio_ns - wav.getnframes() * 1e9 / 22050) < 1e6


def test_replies_play_in_the_order_asked_and_the_second_is_cached(tmp_path):
    play, events, _ = player(tmp_path)

    async def main():
        return await asyncio.gather(play.say("하나.", 1), play.say("둘.", 2), play.say("하나.", 3))

    one, two, again = asyncio.run(main())
    started = [e for e in events if isinstance(e, PlaybackStarted)]
    assert [e.utterance_id for e in started] == [1, 2, 3]
    assert (one.cached, two.cached, again.cached) == (False, False, True)
    assert one.first_audio_ns < two.first_audio_ns < again.first_audio_ns


def test_a_failing_voice_is_reported_not_raised(tmp_path):
    play, events, _ = player(tmp_path, BrokenVoice())
    spoken = asyncio.run(play.say("안녕하세요.", 1))
    assert spoken.error == "speech failed: voice model crashed"
    assert spoken.first_audio_ns is None
    assert [type(e) for e in events] == [PlaybackStopped]


def test_replies_waiting_when_interrupted_are_dropped(tmp_path):
    play, events, _ = player(tmp_path)

    async def main():
        first = asyncio.create_task(play.say("첫 번째 대답.", 1))
        second = asyncio.create_task(play.say("두 번째 대답.", 2))
        await asyncio.sleep(0)
        play.interrupt()
        return await first, await second

    first, second = asyncio.run(main())
    assert first.interrupted and second.interrupted
    assert second.first_audio_ns is None
