"""The echo path kept across restarts: Sori's real voice (espeak-ng) through a synthetic
room, a reply heard by one run of the canceller and the next reply by a new one, as after
a restart."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile
from fake_sounddevice import FakeInput

from sori.core.config import Config, parse_config
from sori.hearing.audio.augment import reverberate, room_impulse, to_pcm16
from sori.hearing.audio.echo_cancel import EchoCanceller, cancel_echo
from sori.hearing.audio.echo_path import EchoPathStore
from sori.hearing.audio.played import PlayedAudio
from sori.hearing.audio.ring import FrameChunker

S = 1_000_000_000
RATE = 16000
SETUP = {"device": "", "channels": 1, "frame_ms": 20}


@pytest.fixture(scope="module")
def replies() -> tuple[np.ndarray, np.ndarray]:
    """Two replies in Sori's voice, about 7 s each."""
    from echo_kit import REPLY, sori_says

    reply = sori_says(Config(), REPLY)
    half = len(reply) // 2
    return reply[:half], reply[half:]


def through_room(reply: np.ndarray, seed: int, delay_ms: int) -> np.ndarray:
    """The speaker as the microphone hears it: `delay_ms` late, through a room (RT60 0.3 s,
    the room's reflections drawn from `seed`), at half the level."""
    impulse = room_impulse(0.3, np.random.default_rng(seed), drr_db=6.0)
    late = np.concatenate([np.zeros(delay_ms * RATE // 1000), reply])
    return 0.5 * reverberate(late, impulse)[: len(reply)]


def run(store: EchoPathStore | None, reply: np.ndarray, mic: np.ndarray) -> np.ndarray:
    """One run of the canceller (a daemon's start): the speaker plays `reply` from the
    first sample, the microphone hears `mic` then a second of quiet, which ends the
    reply (the store keeps the path then). What the canceller gave during the reply."""
    played = PlayedAudio()
    played.add(0, to_pcm16(reply), RATE)
    heard = np.concatenate([mic, np.zeros(RATE)])
    frames = FrameChunker(20).push(to_pcm16(heard))
    out = b"".join(f.pcm for f in cancel_echo(frames, played, 0, store=store))
    return np.frombuffer(out, np.int16).astype(np.float64)[: len(mic)]


def kept(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def cancelled_db(mic: np.ndarray, out: np.ndarray, part: slice) -> float:
    raw = np.frombuffer(to_pcm16(mic), np.int16)[part].astype(np.float64)
    return 10 * np.log10(float(raw @ raw) / max(float(out[part] @ out[part]), 1e-9))


FIRST_SECOND = slice(0, RATE)
FROM_5_S = slice(5 * RATE, None)


def test_after_a_restart_the_first_second_of_a_reply_is_cancelled(replies, tmp_path):
    """Measured: from nothing 4 dB in the first second; from the kept path 26 dB."""
    first, second = replies
    store_file = tmp_path / "echo-path.json"
    run(EchoPathStore(store_file, SETUP), first, through_room(first, seed=3, delay_ms=40))
    document = kept(store_file)
    assert document["setup"] == SETUP and len(document["paths"]) == 1

    mic = through_room(second, seed=3, delay_ms=40)
    afresh = run(None, second, mic)
    restarted = run(EchoPathStore(store_file, SETUP), second, mic)
    assert cancelled_db(mic, afresh, FIRST_SECOND) < 6
    assert cancelled_db(mic, restarted, FIRST_SECOND) > 15


def test_a_stream_that_ends_during_a_reply_keeps_what_it_learned(replies, tmp_path):
    """Sori stops while it speaks: what the canceller learned since the reply's last
    pause is written as the microphone's stream ends, not lost."""
    first, _ = replies
    store_file = tmp_path / "echo-path.json"
    played = PlayedAudio()
    played.add(0, to_pcm16(first), RATE)
    mic = through_room(first, seed=3, delay_ms=40)[: 5 * RATE]  # stopped 5 s in
    frames = FrameChunker(20).push(to_pcm16(mic))
    canceller = EchoCanceller(320)
    store = EchoPathStore(store_file, SETUP)
    for _ in cancel_echo(frames, played, 0, canceller, store):
        pass
    taps = np.frombuffer(base64.b64decode(kept(store_file)["paths"][0]), "<f4")
    assert np.array_equal(taps, canceller.echo_path().ravel())


def test_a_path_learned_before_the_speaker_moved_adds_no_echo(replies, tmp_path):
    """The kept path is another room's (the speaker moved, 25 ms nearer): the canceller
    learns the new room as it would from nothing (measured: 1.7 dB in the first second
    against 2.2 afresh, 29.2 dB from 5 s on, the same), and never adds echo."""
    first, second = replies
    store_file = tmp_path / "echo-path.json"
    run(EchoPathStore(store_file, SETUP), first, through_room(first, seed=3, delay_ms=40))
    kept(store_file)

    mic = through_room(second, seed=11, delay_ms=15)
    restarted = run(EchoPathStore(store_file, SETUP), second, mic)
    afresh = run(None, second, mic)
    assert cancelled_db(mic, restarted, FIRST_SECOND) > -1
    assert cancelled_db(mic, restarted, FROM_5_S) > cancelled_db(mic, afresh, FROM_5_S) - 1


@pytest.mark.parametrize("turned_db", [-10, 10])
def test_a_speaker_turned_down_or_up_since_is_cancelled_at_its_new_level(
    replies, tmp_path, turned_db
):
    """The volume was changed 10 dB after the path was kept: the canceller scales the
    path to what the microphone hears (measured: 26 dB in the first second either way,
    where dropping the path, or starting afresh, gave 4, and keeping it as it was 4 with
    the speaker turned up)."""
    first, second = replies
    store_file = tmp_path / "echo-path.json"
    run(EchoPathStore(store_file, SETUP), first, through_room(first, seed=3, delay_ms=40))

    mic = through_room(second, seed=3, delay_ms=40) * 10 ** (turned_db / 20)
    restarted = run(EchoPathStore(store_file, SETUP), second, mic)
    assert cancelled_db(mic, restarted, FIRST_SECOND) > 15


def test_a_muted_speaker_s_echo_is_not_put_back(replies, tmp_path):
    """The path is learned, then the speaker is muted (its record still says it plays):
    what the microphone hears of the room is given back, not the path's idea of an echo
    (measured from 1 s on: 0.0 dB; without the guard the path put back 15 dB of echo
    in the second second, 3 dB still from 5 s on)."""
    first, second = replies
    store_file = tmp_path / "echo-path.json"
    run(EchoPathStore(store_file, SETUP), first, through_room(first, seed=3, delay_ms=40))
    kept(store_file)

    room = np.random.default_rng(5).normal(0, 30, len(second))
    out = run(EchoPathStore(store_file, SETUP), second, room)
    assert cancelled_db(room, out, slice(RATE, None)) > -1


def test_a_file_for_another_setup_or_broken_starts_afresh(replies, tmp_path, caplog):
    first, _ = replies
    mic = through_room(first, seed=3, delay_ms=40)
    store_file = tmp_path / "echo-path.json"
    run(EchoPathStore(store_file, SETUP), first, mic)
    document = kept(store_file)

    other = {**SETUP, "device": "hw:2"}
    caplog.set_level("INFO")
    afresh = run(EchoPathStore(store_file, other), first, mic)
    assert "learned for another setup" in caplog.text
    assert cancelled_db(mic, afresh, FIRST_SECOND) < 6

    taps = len(base64.b64decode(document["paths"][0])) // 4
    not_numbers = base64.b64encode(np.full(taps, np.nan, "<f4").tobytes()).decode()
    for broken in (
        "{not json",
        json.dumps({**document, "paths": ["AAAAAA=="]}),  # one tap, not a path
        json.dumps({**document, "paths": [not_numbers]}),
        json.dumps({**document, "version": 99}),
    ):
        for aside in tmp_path.glob("echo-path.json.bad-*"):
            aside.unlink()
        store_file.write_text(broken, encoding="utf-8")
        out = run(EchoPathStore(store_file, SETUP), first, mic)
        assert cancelled_db(mic, out, FIRST_SECOND) < 6
        assert len(list(tmp_path.glob("echo-path.json.bad-*"))) == 1, broken
        assert kept(store_file)["setup"] == SETUP  # what this run learned is kept instead


def test_the_daemon_keeps_the_path_in_its_state_folder(monkeypatch, tmp_path):
    from sori.assemble.hearing import echo_path_store

    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "state"))
    store = echo_path_store(Config())
    assert store.path == tmp_path / "state" / "echo-path.json"
    hat = {"audio": {"channels": 4, "array": {"geometry": "respeaker-4mic-hat"}}}
    assert echo_path_store(parse_config(hat)).setup != store.setup


def test_sori_run_with_the_microphone_starts_from_the_kept_path_and_keeps_it(
    replies, tmp_path, monkeypatch, caplog, mosquitto
):
    """`sori run --input mic`'s wiring (`open_hearing`): the canceller starts from the
    path kept in the state folder, and what it learns is kept when the stream ends. Here
    the speaker was muted since: the path is scaled down to next to nothing and kept so.
    A file heard in its place neither reads nor writes it."""
    import asyncio

    from daemon_kit import build, load, write_config
    from sori.assemble.hearing import echo_path_store, open_hearing

    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "state"))
    config_path = write_config(
        tmp_path, mosquitto, '\n[stt]\nwarm_up_s = 0.0\n\n[audio]\ndenoise = "off"\n'
    )
    config, _ = load(config_path)
    store = echo_path_store(config)
    first, second = replies
    run(store, first, through_room(first, seed=3, delay_ms=40))
    kept_before = store.path.read_bytes()
    taps_before = np.frombuffer(base64.b64decode(kept(store.path)["paths"][0]), "<f4")

    # The speaker is muted: the microphone (48 kHz, as most USB ones) hears the room only.
    room = np.random.default_rng(5).normal(0, 30 / 32768, 4 * 48_000).astype(np.float32)
    monkeypatch.setitem(sys.modules, "sounddevice", FakeInput(np.split(room, 200)))
    caplog.set_level("INFO")

    def hear(input_name: str) -> None:
        """The daemon of `sori run --input mic` (its record of what it plays kept),
        hearing `input_name` while its speaker plays a reply."""
        daemon = build(config_path, tmp_path / "reply.wav", input_name="mic")

        async def listening():
            source, events = await asyncio.to_thread(
                open_hearing, input_name, config, daemon.understanding, daemon.clock,
                daemon.conversation,
            )  # fmt: skip
            daemon.conversation.echo.add(daemon.clock.now_ns(), to_pcm16(second), RATE)
            source.close()  # everything heard is queued: the stream ends after it
            try:
                async for _ in events:
                    pass
            finally:
                await daemon.close()

        asyncio.run(listening())

    recording = tmp_path / "room.wav"
    soundfile.write(recording, room, 48_000, subtype="PCM_16")
    hear(str(recording))
    assert "starts from the path kept" not in caplog.text
    assert store.path.read_bytes() == kept_before

    hear("mic")
    assert f"echo canceller starts from the path kept in {store.path}" in caplog.text
    document = kept(store.path)
    assert document["setup"] == store.setup
    taps = np.frombuffer(base64.b64decode(document["paths"][0]), "<f4")
    assert taps @ taps < 0.01 * (taps_before @ taps_before)


def test_a_folder_it_cannot_write_is_said_once_and_hearing_goes_on(replies, tmp_path, caplog):
    """A board whose state folder cannot be written (a read-only root, a file where the
    folder should be): each start cancels as it would afresh, and the log says why once,
    not after every reply (a start that cannot read it says so, once a start)."""
    first, _ = replies
    (tmp_path / "state").write_text("a file, not a folder", encoding="utf-8")
    store = EchoPathStore(tmp_path / "state" / "echo-path.json", SETUP)
    mic = through_room(first, seed=3, delay_ms=40)
    afresh = run(None, first, mic)
    caplog.set_level("DEBUG")
    for _ in range(3):  # three starts, each writing as its reply ends and as it stops
        out = run(store, first, mic)
        assert np.array_equal(out, afresh)
    messages = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    warned = [m for m in messages if "cannot keep the echo path" in m]
    assert len(warned) == 1, messages
