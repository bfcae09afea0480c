"""A broken microphone of an array (sori.hearing.audio.channel_health, and the front end
that leaves it out or evens it out), on rooms simulated from the shared read clips."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from array_rooms import FRAME, Room, beam_with_oracle, geometry, read_clip, simulate

from daemon_kit import build, load, write_config
from sori.assemble.hearing import build_array, open_hearing
from sori.hearing.audio.channel_health import DEAD_WINDOWS, WINDOW_S, ChannelWatch
from sori.hearing.audio.format import RATE_HZ, float_to_s16, write_wav
from sori.hearing.audio.front_end import FFT_SIZE, ArrayFrontEnd

CLIP = "audio/ko-read/zeroth_104_003_0294.wav"
TALKER_DEG = 135.0


@pytest.fixture(scope="module")
def room(shared_dir) -> Room:
    """A talker at 135°, pink noise 10 dB under them from 235°, RT60 0.4 s."""
    speech = read_clip(str(shared_dir / CLIP), 3.0)
    return simulate(speech, TALKER_DEG, TALKER_DEG + 100, below_db=10.0)


def broken(samples: np.ndarray, dead=(), gain_db: dict[int, float] | None = None) -> np.ndarray:
    out = samples.copy()
    out[:, list(dead)] = 0.0
    for channel, db in (gain_db or {}).items():
        out[:, channel] *= 10 ** (db / 20)
    return out


def watched(samples: np.ndarray, channels: int = 4) -> tuple[ChannelWatch, list]:
    """`samples` through a watch frame by frame: the watch, and (time in s, change) for
    each change it made."""
    watch = ChannelWatch(channels)
    changes = []
    for start in range(0, len(samples) - FRAME + 1, FRAME):
        change = watch.hear(samples[start : start + FRAME])
        if change is not None:
            changes.append(((start + FRAME) / RATE_HZ, change))
    return watch, changes


def angle_apart(a: float, b: float) -> float:
    return abs((a - b + 180) % 360 - 180)


# -- the watch ---------------------------------------------------------------------------


def test_a_healthy_array_is_left_alone_in_every_room(shared_dir):
    """Talk, noise, babble, a quiet room, a talker half a metre away: no microphone is
    ever left out or evened out."""
    speech = read_clip(str(shared_dir / CLIP), 3.0)
    rooms = [
        simulate(speech, 30.0, 130.0, below_db=5.0, rt60_s=0.8),
        simulate(speech, 250.0, 350.0, below_db=40.0, rt60_s=0.2),
        simulate(speech, 90.0, 200.0, below_db=0.0, distance_m=0.5),
        simulate(speech, 200.0, 20.0, sound=np.tile(speech, 3), below_db=3.0),
    ]
    for heard in rooms:
        watch, changes = watched(heard.mixed)
        assert changes == [] and watch.live == (0, 1, 2, 3)


def test_digital_silence_on_every_channel_says_nothing():
    watch, changes = watched(np.zeros((RATE_HZ * 2, 4), np.float32))
    assert changes == [] and watch.live == (0, 1, 2, 3)


@pytest.mark.parametrize(
    ("dead", "under_db", "says"),
    [((0,), None, "digital silence"), ((2,), 40.0, "40 dB under the others"),
     ((1, 3), None, "digital silence"), ((0, 1, 3), None, "digital silence")],
)  # fmt: skip
def test_a_dead_microphone_is_found_within_a_second_and_named(room, dead, under_db, says):
    if under_db is None:
        samples = broken(room.mixed, dead)
    else:
        samples = broken(room.mixed, gain_db=dict.fromkeys(dead, -under_db))
    watch, changes = watched(samples)
    live = tuple(c for c in range(4) if c not in dead)
    assert [change.live for _, change in changes] == [live]
    found_s, change = changes[0]
    assert found_s <= DEAD_WINDOWS * WINDOW_S + 0.1
    assert change.describe(dead[0]) == says


def test_a_microphone_that_comes_back_is_live_again(room):
    samples = room.mixed.copy()
    half = len(samples) // 2
    samples[:half, 1] = 0.0
    watch, changes = watched(samples)
    assert [change.live for _, change in changes] == [(0, 2, 3), (0, 1, 2, 3)]
    assert changes[1][0] <= half / RATE_HZ + DEAD_WINDOWS * WINDOW_S + 0.1


def test_one_loud_microphone_does_not_make_the_others_dead(room):
    """A crackling microphone 35 dB over the rest: the others are held against their
    median, not against it."""
    samples = broken(room.mixed, gain_db={2: 35.0})
    watch, _ = watched(samples)
    assert watch.live == (0, 1, 2, 3)


def test_a_tap_on_one_microphone_is_no_verdict(room):
    """A finger on microphone 3 for 0.2 s, 40 dB over everything: too short for any."""
    samples = room.mixed.copy()
    tap = slice(RATE_HZ, RATE_HZ + RATE_HZ // 5)
    samples[tap, 3] = np.clip(samples[tap, 3] * 100, -1, 1)
    _, changes = watched(samples)
    assert changes == []


def test_a_hot_microphone_is_evened_out_and_parts_spread_are_not(room):
    samples = broken(room.mixed, gain_db={0: 1.5, 1: 12.0, 3: -2.5})
    watch, changes = watched(samples)
    assert len(changes) == 1  # once: the offset settles, the gains stay
    assert changes[0][0] <= DEAD_WINDOWS * WINDOW_S + 0.1
    gains = changes[0][1].gains_db
    assert gains[1] == pytest.approx(-12.0, abs=1.5)
    assert gains[0] == gains[2] == gains[3] == 0.0


# -- the front end -----------------------------------------------------------------------


@pytest.mark.parametrize("dead", [(0,), (2,), (1, 3)])
def test_the_beam_finds_the_talker_without_a_dead_microphone(room, dead, caplog):
    """Microphone 0 dead was silence: the front end listens through it until it has a
    direction, so the voice detector heard nothing to start one."""
    array = ArrayFrontEnd(geometry(), "mvdr")
    faulty = Room(broken(room.talker, dead), broken(room.interferer, dead))
    beamed = beam_with_oracle(array, faulty, talker=room.talker)
    assert array.live == tuple(c for c in range(4) if c not in dead)
    assert array.direction_deg is not None
    if len(array.live) > 2:
        assert angle_apart(array.direction_deg, TALKER_DEG) <= 10
    else:  # two microphones on the x axis: the talker or their mirror image across it
        folded = min(angle_apart(array.direction_deg, d) for d in (TALKER_DEG, -TALKER_DEG))
        assert folded <= 20
    # the beam carries the talker: within 6 dB of one healthy microphone's level
    talking = slice(int(1.2 * RATE_HZ), len(beamed))
    first_live = array.live[0]
    reference = np.mean(room.mixed[talking.start - FFT_SIZE :, first_live] ** 2)
    assert 10 * np.log10(np.mean(beamed[talking] ** 2) / reference) > -6
    assert array.weights.shape[1] == 4
    assert not array.weights[:, list(dead)].any()
    for channel in dead:
        assert f"microphone {channel} of the array carries no sound" in caplog.text


def test_with_one_live_microphone_the_front_end_passes_it_on(room):
    samples = broken(room.mixed, (0, 1, 3))
    array = ArrayFrontEnd(geometry(), "mvdr")
    beamed = beam_with_oracle(array, Room(samples, np.zeros_like(samples)), room.talker)
    assert array.live == (2,) and array.direction_deg is None
    later = slice(RATE_HZ, len(beamed))  # long after the verdict
    delayed = samples[later.start - FFT_SIZE : later.stop - FFT_SIZE, 2]
    assert np.allclose(beamed[later], delayed, atol=1e-4)


def test_a_hot_microphone_evened_out_gives_the_beam_it_had(room):
    """With microphone 1 12 dB hot, the beam's gain on the talker and its direction are
    what the healthy array's were."""
    healthy = ArrayFrontEnd(geometry(), "mvdr")
    beam_with_oracle(healthy, room)
    hot = ArrayFrontEnd(geometry(), "mvdr")
    hot_mic = {1: 12.0}
    faulty = Room(broken(room.talker, gain_db=hot_mic), broken(room.interferer, gain_db=hot_mic))
    beam_with_oracle(hot, faulty, talker=room.talker)
    assert angle_apart(hot.direction_deg, healthy.direction_deg) <= 4
    # the weights apply to the evened-out microphones: as the healthy array's
    ratio = np.abs(hot.weights[:, 1]) / np.abs(healthy.weights[:, 1])
    assert np.median(ratio) == pytest.approx(1, abs=0.3)


def test_microphones_say_which_are_heard_and_how_evened(room):
    array = ArrayFrontEnd(geometry(), "mvdr")
    assert array.microphones() == {
        "channels": 4, "mic_channels": [0, 1, 2, 3], "playback_channels": [],
        "live": [0, 1, 2, 3], "left_out": [], "evened_db": {},
    }  # fmt: skip
    samples = broken(room.mixed, dead=(0,), gain_db={2: 12.0})
    beam_with_oracle(array, Room(samples, np.zeros_like(samples)), room.talker)
    heard = array.microphones()
    assert (heard["live"], heard["left_out"]) == ([1, 2, 3], [0])
    assert list(heard["evened_db"]) == ["2"]
    assert heard["evened_db"]["2"] == pytest.approx(-12.0, abs=1.5)


def test_health_shows_a_dead_microphone_of_the_daemon_s_array(room, tmp_path, mosquitto):
    """`sori run`'s wiring: the array it hears through, the daemon's /health."""
    extra = '\n[stt]\nwarm_up_s = 0.0\n\n[audio]\ndenoise = "off"\nchannels = 4\n'
    extra += '\n[audio.array]\ngeometry = "respeaker-4mic-hat"\n'
    config_path = write_config(tmp_path, mosquitto, extra)
    pcm = float_to_s16(broken(room.mixed, dead=(0,)))
    write_wav(tmp_path / "dead.wav", pcm, channels=4)
    daemon = build(config_path, tmp_path / "reply.wav")
    assert daemon.health()["microphones"] is None  # one microphone, or not yet heard

    async def hear_the_file():
        config, _ = load(config_path)
        array = build_array(config)
        daemon.microphones = array.microphones
        _, events = await asyncio.to_thread(
            open_hearing, str(tmp_path / "dead.wav"), config, daemon.understanding,
            daemon.clock, daemon.conversation, None, None, array,
        )  # fmt: skip
        try:
            await asyncio.wait_for(daemon.listen(events), 120)
        finally:
            await daemon.close()

    asyncio.run(hear_the_file())
    assert daemon.health()["microphones"] == {
        "channels": 4, "mic_channels": [0, 1, 2, 3], "playback_channels": [],
        "live": [1, 2, 3], "left_out": [0], "evened_db": {},
    }  # fmt: skip
