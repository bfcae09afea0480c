"""Player: replies into a sink, in order, stoppable; real espeak-ng voice, WAV sink."""

from __future__ import annotations

import asyncio
import wave

import numpy as np

from sori.core.clock import MonotonicClock
from sori.core.events import PlaybackStarted, PlaybackStopped
from sori.hearing.audio.sinks import WavSink
from sori.speaking.cache import ReplyCache
from sori.speaking.earcon import earcon
from sori.speaking.espeak import EspeakVoice
from sori.speaking.playback import DUCK_DB, Player


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


class Listening:
    """A sink that keeps every piece and lets a test act as each one is written (a wake
    phrase heard while the speaker plays)."""

    realtime = False

    def __init__(self, on_piece):
        self.pieces: list[bytes] = []
        self.on_piece = on_piece

    def write(self, pcm, rate_hz):
        self.pieces.append(pcm)
        self.on_piece(len(self.pieces))

    def stop(self):
        pass

    def close(self):
        pass


def level_db(pieces) -> float:
    samples = np.frombuffer(b"".join(pieces), "<i2").astype(np.float64)
    return 10 * np.log10(np.mean(samples**2) + 1e-9)


def test_a_ducked_reply_plays_on_quieter_until_unducked_and_the_next_is_at_full_level():
    reply = ReplyCache(EspeakVoice("ko"))
    play = Player(Listening(lambda n: None), reply, MonotonicClock())
    text = "오늘 서울은 맑고 낮 최고 기온은 영하 이 도입니다."

    def on_piece(n):
        if n == 10:
            assert play.duck()  # a reply is playing
        elif n == 30:
            play.unduck()

    sink = play.sink = Listening(on_piece)
    asyncio.run(play.say(text))
    before, ducked, after = sink.pieces[2:10], sink.pieces[10:30], sink.pieces[30:]
    assert len(after) > 10
    undisturbed = Listening(lambda n: None)
    play.sink = undisturbed
    asyncio.run(play.say(text))  # cached: the same audio again
    assert b"".join(before) == b"".join(undisturbed.pieces[2:10])
    assert b"".join(after) == b"".join(undisturbed.pieces[30:])
    loss = level_db(undisturbed.pieces[10:30]) - level_db(ducked)
    assert abs(loss - DUCK_DB) < 0.5
    assert not play.duck()  # nothing plays now


def test_a_duck_lasts_one_reply():
    reply = ReplyCache(EspeakVoice("ko"))
    play = Player(Listening(lambda n: None), reply, MonotonicClock())
    sink = play.sink = Listening(lambda n: n == 5 and play.duck())
    asyncio.run(play.say("첫 번째 대답입니다."))
    fresh = Listening(lambda n: None)
    play.sink = fresh
    asyncio.run(play.say("첫 번째 대답입니다."))
    assert b"".join(sink.pieces[:5]) == b"".join(fresh.pieces[:5])
    assert level_db(fresh.pieces[5:]) - level_db(sink.pieces[5:]) > DUCK_DB - 1
