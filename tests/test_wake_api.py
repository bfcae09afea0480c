"""Mute and push-to-talk over the real HTTP API, the muted state across a restart, and a
muted pipeline that hears nothing."""

from __future__ import annotations

import asyncio
import json
import logging

import numpy as np
import pytest

from daemon_kit import build, serve_api, write_config
from sori.core.events import WakeDetected, WakeDismissed, WakeHeard
from sori.serving.conversation.listening import Conversation

pytestmark = pytest.mark.slow


async def listen_live(daemon, config_path, mic, tap) -> asyncio.Task:
    """The daemon listening to the file `mic` as its microphone, each frame through
    `tap(frames, origin_ns)`; returns once the models have loaded."""
    from daemon_kit import load
    from sori.assemble.hearing import open_hearing

    config, _ = load(config_path)
    _, events = await asyncio.to_thread(
        open_hearing, str(mic), config, daemon.understanding, daemon.clock,
        daemon.conversation, None, tap,
    )  # fmt: skip
    return asyncio.create_task(daemon.listen(events))


def serve(config, tmp_path, scenario):
    """A daemon listening to a microphone (never opened here) with the API; runs
    `scenario(client)` and returns what it returns."""
    daemon = build(config, tmp_path / "reply.wav", input_name="mic")
    return serve_api(daemon, lambda client, api: scenario(client))


def test_mute_is_kept_across_a_restart_and_listen_opens_the_window(tmp_path, mosquitto):
    state = tmp_path / "state.json"
    config = write_config(tmp_path, mosquitto, wake=f'\n[wake]\nstate_file = "{state}"\n')

    async def first(client):
        refused = await client.post("/mute", json={}, headers={"Authorization": ""})
        muted = await client.post("/mute", json={})
        health = await client.get("/health")
        metrics = await client.get("/metrics")
        return refused, muted, health.json(), metrics.text

    refused, muted, health, metrics = serve(config, tmp_path, first)
    assert refused.status_code == 401  # changing what the speaker hears needs the token
    assert muted.status_code == 200 and muted.json()["muted"] is True
    assert health["listening"]["muted"] is True and health["listening"]["wake"] is True
    assert "sori_muted 1" in metrics
    assert json.loads(state.read_text()) == {"muted": True}

    async def after_restart(client):
        health = (await client.get("/health")).json()
        unmuted = (await client.post("/unmute", json={})).json()
        before = (await client.get("/health")).json()["listening"]["listening_s"]
        listening = (await client.post("/listen", json={})).json()
        metrics = (await client.get("/metrics")).text
        return health, unmuted, before, listening, metrics

    health, unmuted, before, listening, metrics = serve(config, tmp_path, after_restart)
    assert health["listening"]["muted"] is True  # from the state file
    assert unmuted["muted"] is False
    assert before == 0  # no window open before the button
    assert 4.0 < listening["listening_s"] <= 5.0  # [wake] listen_s
    assert "sori_muted 0" in metrics
    assert json.loads(state.read_text()) == {"muted": False}


class Counting:
    """The real recognizer, counting the utterances that reach it."""

    def __init__(self, recognizer):
        self.inner, self.name, self.opened = recognizer, recognizer.name, 0

    def open_stream(self, snr_db=None):
        self.opened += 1
        return self.inner.open_stream(snr_db)


def test_muted_no_audio_reaches_the_recognizer(shared_dir):
    from sori.assemble.hearing import build_hearing, build_recognizer
    from sori.core.config import Config
    from sori.hearing.audio.sources import FileSource
    from sori.hearing.pacing import ReplayClock, replay

    config = Config()
    recognizer = Counting(build_recognizer(config.stt, []))
    clip = shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav"

    def hear(muted: bool) -> list:
        gate = Conversation(gated=False, muted=muted)
        clock = ReplayClock()
        hearing = build_hearing(config, recognizer, None, clock, 0, None, gate)
        return list(replay(FileSource(clip).frames(), hearing, clock))

    assert hear(muted=True) == [] and recognizer.opened == 0
    heard = hear(muted=False)
    assert recognizer.opened >= 1 and any(type(e).__name__ == "UtteranceHeard" for e in heard)


def test_with_wake_only_the_phrase_stops_a_reply_and_opens_the_window(tmp_path, mosquitto):
    from sori.core.events import SpeechStarted, WakeDetected
    from test_daemon import SlowSpeaker, closing

    daemon = build(write_config(tmp_path, mosquitto, wake=""), tmp_path / "r.wav", input_name="mic")
    daemon.player.sink = SlowSpeaker()

    async def main():
        speaking = asyncio.create_task(
            daemon.player.say("거실 조명을 켰어요. 또 필요한 게 있나요?")
        )
        await asyncio.sleep(0.3)
        await daemon.on_heard(SpeechStarted(0, 1, 0))  # the TV, or the speaker itself
        still = daemon.player.playing
        now = daemon.clock.now_ns()
        await daemon.on_heard(WakeDetected(now, 2, "소리야", now - 400_000_000, now, 5.0))
        spoken = await speaking
        await daemon.drain()  # the earcon
        return still, spoken, daemon.health()["listening"]

    still, spoken, listening = asyncio.run(closing(daemon, main()))
    assert still  # speech without the phrase does not cut the reply
    assert spoken.interrupted
    assert daemon.metrics.barge_ins == 1
    assert 4.0 < listening["listening_s"] <= 5.0 and listening["wakes"] == 1


def test_the_phrase_said_over_sori_s_reply_stops_it_and_opens_the_window(
    tmp_path, mosquitto, shared_dir, caplog
):
    """Live, with a speaker: the microphone (a file paced like one) hears "현재" said over
    the reply Sori is playing, about 2 s into it (a 15 s reply, 20 dB below the user), as
    one utterance. The room adds what the speaker played, 30 ms late, so a reply that
    starts late on a busy machine is heard late too, and the phrase lands a little
    earlier in it: said 1.5 to 2.2 s into this reply, at any offset of the frames, the
    phrase wakes (further in, what Sori says checks near the phrase: README).
    The phrase ducks the reply as soon as it is heard, while it is told from Sori's own
    voice, then stops it and opens the listening window; the reply played until then."""
    from echo_kit import (
        LEAD_S,
        REPLY,
        echo_gain,
        opening,
        said_to_the_room,
        sori_says,
        with_echo,
    )
    from sori.core.config import Config
    from sori.hearing.audio.augment import to_pcm16
    from sori.hearing.audio.format import write_wav
    from sori.hearing.pacing import pace
    from test_daemon import BufferedSpeaker, closing

    no_warm_up = "\n[stt]\nwarm_up_s = 0\n"  # not what is tested: it loads within the timeout
    config_path = write_config(tmp_path, mosquitto, no_warm_up, '\n[wake]\nphrases = ["현재"]\n')
    daemon = build(config_path, tmp_path / "reply.wav", input_name="mic")
    daemon.player.sink = BufferedSpeaker()
    caplog.set_level(logging.INFO, logger="sori.serving.daemon")
    seen = []
    emit = daemon.emit
    daemon.emit = lambda event: (seen.append(event), emit(event))
    clip = shared_dir / "audio" / "ko-read" / "zeroth_104_003_0253.wav"
    speech = opening(clip)
    gain = echo_gain(sori_says(Config(), REPLY), speech, below_db=20)
    mic = tmp_path / "mic.wav"
    write_wav(mic, to_pcm16(said_to_the_room(speech, 2.0)))
    said_at_s = LEAD_S + 2.0 + 0.66  # "현재" is 0.66-1.05 s into its clip
    origin: list[int] = []

    def room(frames, origin_ns):
        origin.append(origin_ns)  # now, as the microphone opens
        played, late_ns = daemon.conversation.echo, 30_000_000
        paced = pace(frames, daemon.clock, origin_ns)
        return (with_echo(f, played, gain, origin_ns + f.start_ns - late_ns) for f in paced)

    async def main():
        listening = await listen_live(daemon, config_path, mic, room)
        await asyncio.sleep(max(0.0, (origin[0] - daemon.clock.now_ns()) / 1e9 + LEAD_S))
        spoken = await daemon.player.say(REPLY)
        window = daemon.health()["listening"]
        await listening
        return spoken, window

    spoken, window = asyncio.run(closing(daemon, main()))
    said_at_ns = origin[0] + int(said_at_s * 1e9)
    assert spoken.first_audio_ns < said_at_ns - 1e9  # the reply was playing
    assert spoken.interrupted and daemon.metrics.barge_ins == 1
    wake = [e for e in seen if isinstance(e, WakeHeard | WakeDetected | WakeDismissed)]
    assert [type(e) for e in wake] == [WakeHeard, WakeDetected]
    assert "'현재' over the reply: ducked while it is checked" in caplog.text
    # it played up to the phrase, and was cut after it, long before its end (15 s; how
    # soon, idle and with both cores busy: docs/hearing.md, Limits)
    assert said_at_ns < spoken.first_audio_ns + spoken.audio_ns < said_at_ns + 4.5e9
    assert window["wakes"] == 1 and window["listening_s"] > 0


@pytest.mark.parametrize("echo_cancel", ["auto", "off"])
def test_with_echo_cancellation_sori_s_own_voice_no_longer_cuts_its_reply(
    tmp_path, mosquitto, echo_cancel
):
    """Live, every utterance a command (no wake phrase): the microphone (a quiet room,
    paced like one) hears the speaker 80 ms late at half its level: a sound card's
    output latency, and room for the player, which stamps each piece a moment before it
    records it. The room reads that record, so a piece recorded more than the latency
    after its stamp (a busy machine; at 30 ms a reply was cut once in a full run) is
    missing from the room while the canceller's reference holds it. A first reply, with
    barge-in off, lets the echo canceller learn the room (a cold filter cancels little
    in its first tenths of a second: README); then, barge-in on, a second reply plays to
    its end with echo cancellation, while without it the voice detector takes Sori's
    voice for the user's and the reply stops itself."""
    from echo_kit import with_echo
    from sori.hearing.audio.augment import to_pcm16
    from sori.hearing.audio.format import write_wav
    from sori.hearing.pacing import pace
    from test_daemon import SlowSpeaker, closing

    extra = f'\n[audio]\necho_cancel = "{echo_cancel}"\n[stt]\nwarm_up_s = 0\n'
    config_path = write_config(tmp_path, mosquitto, extra)
    daemon = build(config_path, tmp_path / "reply.wav", input_name="mic")
    daemon.player.sink = SlowSpeaker()
    mic = tmp_path / "room.wav"
    write_wav(mic, to_pcm16(np.random.default_rng(0).normal(0, 30, 16000 * 8)))
    played = daemon.conversation.echo
    late_ns = 80_000_000

    def room(frames, origin_ns):
        for frame in pace(frames, daemon.clock, origin_ns):
            yield with_echo(frame, played, 0.5, origin_ns + frame.start_ns - late_ns)

    async def main():
        listening = await listen_live(daemon, config_path, mic, room)
        await asyncio.sleep(0.5)
        daemon.barge_in = False
        await daemon.player.say("오늘 서울은 대체로 맑고 낮 최고 기온은 십오 도로")
        await asyncio.sleep(1.0)  # the echo's utterance ends
        daemon.barge_in = True
        spoken = await daemon.player.say("어제보다 조금 따뜻하겠습니다. 겉옷을 챙기세요.")
        await listening
        return spoken

    spoken = asyncio.run(closing(daemon, main()))
    if echo_cancel == "auto":
        assert not spoken.interrupted and daemon.metrics.barge_ins == 0
    else:
        assert spoken.interrupted and daemon.metrics.barge_ins >= 1
