"""Boards whose driver gives more channels than microphones: which captured channels the
array hears (`audio.array.mic_channels`), and the board's own playback channels as the
echo canceller's reference (`audio.array.playback_channels`).

The ReSpeaker USB Mic Array's 6-channel firmware gives its own processed mix in channel
0, the raw microphones in 1-4 and what it plays in 5; the 6-mic kit gives 8, its last two
what it plays. Opening the first four channels of the USB array, or beaming all six,
hears the wrong sound."""

from __future__ import annotations

import dataclasses
import json
import logging

import numpy as np
import pytest
from array_rooms import free_field, geometry, read_clip, speaker_echo
from test_array_replay import COMMAND, TALKER_DEG, espeak, replayed, write_channels

from daemon_kit import write_config
from sori.assemble.hearing import build_array, check_capture, front_end
from sori.core.config import Config
from sori.core.errors import AudioError, ConfigError
from sori.hearing.audio.array import BoardFound, ChannelLayout, boards_among, channel_layout
from sori.hearing.audio.augment import voiced_rms
from sori.hearing.audio.format import RATE_HZ, ChannelFrame, s16_to_float
from sori.hearing.audio.front_end import ChannelEchoCancel
from sori.hearing.audio.played import PlayedAudio
from sori.hearing.audio.sources import ChannelChunker

USB = "respeaker-usb-4mic"
USB_TOML = (
    '\n[stt]\nwarm_up_s = 0.0\n\n[audio]\ndenoise = "off"\nchannels = 6\n\n'
    f'[audio.array]\ngeometry = "{USB}"\n'
)
FRAME = 320


def array_config(**audio) -> Config:
    config = Config()
    array = dataclasses.replace(config.audio.array, **audio.pop("array", {}))
    return dataclasses.replace(
        config, audio=dataclasses.replace(config.audio, denoise="off", array=array, **audio)
    )


def usb_capture(microphones: np.ndarray, processed: np.ndarray, playback: np.ndarray):
    """Six channels as the USB array's firmware gives them."""
    return np.column_stack([processed, microphones, playback]).astype(np.float32)


def beamed(
    config: Config, samples: np.ndarray, played: PlayedAudio | None = None, echo_store=None
) -> np.ndarray:
    frames = ChannelChunker(config.audio.frame_ms, samples.shape[1]).push(samples)
    frames = front_end(config, frames, played, array=build_array(config), echo_store=echo_store)
    return np.concatenate([s16_to_float(f.pcm) for f in frames])


# -- which channels are the microphones --------------------------------------------------


@pytest.mark.parametrize(
    ("board", "captured", "microphones", "playback"),
    [
        (USB, 6, (1, 2, 3, 4), (5,)),
        (USB, 4, (0, 1, 2, 3), ()),  # the microphones routed out by ALSA, or a recording
        ("respeaker-6mic", 8, (0, 1, 2, 3, 4, 5), (6, 7)),
        ("respeaker-6mic", 6, (0, 1, 2, 3, 4, 5), ()),
        ("respeaker-4mic-hat", 4, (0, 1, 2, 3), ()),
    ],
)
def test_a_board_s_channels_are_laid_out_as_its_driver_gives_them(
    board, captured, microphones, playback
):
    layout = channel_layout(captured, geometry(board), board)
    assert (layout.microphones, layout.playback) == (microphones, playback)


def test_mic_channels_and_playback_channels_say_where_they_are_on_any_board():
    square = geometry("respeaker-4mic-hat")
    layout = channel_layout(8, square, "", [4, 5, 6, 7], [0])
    assert layout == ChannelLayout(8, (4, 5, 6, 7), (0,))
    assert not layout.first_channels
    assert layout.channel_name(0) == "microphone 0 (channel 4)"
    # on a named board, what is given wins over its layout
    assert channel_layout(6, geometry(USB), USB, [4, 3, 2, 1]).microphones == (4, 3, 2, 1)
    assert channel_layout(6, geometry(USB), USB, [4, 3, 2, 1]).playback == ()


@pytest.mark.parametrize(
    ("board", "captured", "mics", "playback", "says"),
    [
        (USB, 5, None, None, "the respeaker-usb-4mic gives 4 or 6 channels"),
        ("respeaker-4mic-hat", 6, None, None, r"audio.array.mic_channels = \[0, 1, 2, 3\]"),
        ("respeaker-4mic-hat", 2, None, None, "capture one channel per microphone"),
        ("respeaker-4mic-hat", 6, [0, 1, 2], None, "names 3 channel.* places 4 microphones"),
        ("respeaker-4mic-hat", 6, [0, 1, 2, 6], None, "channel 6 is not captured.* 0 to 5"),
        ("respeaker-4mic-hat", 6, [0, 1, 1, 2], None, "channel 1 is given twice"),
        ("respeaker-4mic-hat", 6, [0, 1, 2, 3], [3], "channel 3 is also a microphone"),
        ("respeaker-4mic-hat", 6, [0, 1, 2, 3], [-1], "channel -1 is not captured"),
    ],
)
def test_a_layout_that_cannot_be_is_a_config_error_that_says_what_to_set(
    board, captured, mics, playback, says
):
    with pytest.raises(ConfigError, match=says):
        channel_layout(captured, geometry(board), board, mics, playback)


def test_the_config_builds_the_board_s_layout():
    array = build_array(array_config(channels=6, array={"geometry": USB}))
    assert (array.layout.microphones, array.layout.playback) == ((1, 2, 3, 4), (5,))
    health = array.microphones()
    assert (health["mic_channels"], health["playback_channels"]) == ([1, 2, 3, 4], [5])


def test_the_beam_hears_the_microphones_channels_and_nothing_else(shared_dir):
    """The USB array's six channels, its own mix in channel 0 a different sentence, beam
    exactly what the four microphones alone beam."""
    speech = read_clip(str(shared_dir / "audio" / "ko-read" / "zeroth_104_003_0294.wav"), 3.0)
    other = read_clip(str(shared_dir / "audio" / "ko-read" / "zeroth_104_003_0374.wav"), 3.0)
    microphones = free_field(speech, TALKER_DEG, USB)
    six = usb_capture(microphones, other, np.zeros(len(speech)))
    four = array_config(channels=4, array={"geometry": USB})
    np.testing.assert_array_equal(
        beamed(array_config(channels=6, array={"geometry": USB}), six),
        beamed(four, microphones.astype(np.float32)),
    )


class FakeMic:
    """An open microphone's device, as MicSource reports it (no sound card here)."""

    def __init__(self, channels: int) -> None:
        self.device_name, self.device_channels = "ReSpeaker 4 Mic Array (UAC1.0)", channels
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_opening_the_first_channels_of_a_board_that_has_its_microphones_elsewhere_is_refused():
    usb_four = build_array(array_config(channels=4, array={"geometry": USB}))
    mic = FakeMic(6)
    says = r"microphones are channels 1, 2, 3, 4.*set audio.channels = 6"
    with pytest.raises(AudioError, match=says):
        check_capture(usb_four, USB, mic)
    assert mic.closed
    check_capture(usb_four, USB, FakeMic(4))  # the 4 routed out by ALSA
    check_capture(build_array(array_config(channels=6, array={"geometry": USB})), USB, FakeMic(6))
    six_of_eight = build_array(array_config(channels=6, array={"geometry": "respeaker-6mic"}))
    check_capture(six_of_eight, "respeaker-6mic", FakeMic(8))  # its microphones come first


# -- the board's playback as the echo reference -------------------------------------------


@pytest.fixture(scope="module")
def reply(shared_dir) -> np.ndarray:
    """Sori's reply as a stand-in: 8 s of read speech, at half scale."""
    clips = ("zeroth_104_003_0294.wav", "zeroth_104_003_0374.wav", "zeroth_104_003_0253.wav")
    folder = shared_dir / "audio" / "ko-read"
    speech = np.concatenate([read_clip(str(folder / clip), 4.0) for clip in clips])
    speech = speech[: 8 * RATE_HZ]
    return (0.5 * speech / np.abs(speech).max()).astype(np.float32)


def test_the_board_s_playback_channel_cancels_its_echo_with_no_record_of_it(reply):
    """What the board plays, heard through the room, with nobody talking: with its
    playback channel as the reference the beam gives out far less of it (no PlayedAudio:
    a recording replayed, or another program playing through the board)."""
    echo = speaker_echo(reply)
    six = usb_capture(echo, np.zeros(len(reply)), reply)
    on = array_config(channels=6, array={"geometry": USB})
    off = dataclasses.replace(on, audio=dataclasses.replace(on.audio, echo_cancel="off"))
    late = slice(5 * RATE_HZ, None)  # learned: the last 3 s
    left = np.mean(beamed(on, six)[late] ** 2) / np.mean(beamed(off, six)[late] ** 2)
    assert 10 * np.log10(left) < -15


def test_after_a_restart_every_microphone_s_canceller_starts_from_its_kept_path(
    reply, tmp_path, monkeypatch
):
    """The board plays, nobody talks, and Sori restarts: the second run's cancellers
    start from the four paths the first kept, so its first second gives out far less of
    what the board plays than a run that starts afresh (measured: 17.6 dB less)."""
    from sori.assemble.hearing import echo_path_store

    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))
    echo = speaker_echo(reply)
    quiet = np.zeros((RATE_HZ, 4))
    six = usb_capture(
        np.concatenate([echo, quiet]), np.zeros(len(reply) + RATE_HZ), np.append(reply, quiet[:, 0])
    )
    on = array_config(channels=6, array={"geometry": USB})
    beamed(on, six, echo_store=echo_path_store(on))
    kept = json.loads((tmp_path / "echo-path.json").read_text(encoding="utf-8"))
    assert len(kept["paths"]) == 4

    first_second = slice(0, RATE_HZ)
    restarted = beamed(on, six, echo_store=echo_path_store(on))[first_second]
    afresh = beamed(on, six)[first_second]
    assert 10 * np.log10(np.mean(restarted**2) / np.mean(afresh**2)) < -10


def test_a_silent_playback_channel_hands_over_to_sori_s_record(reply, caplog):
    """Sori plays through another output: the board's playback channel stays silent while
    Sori's record sounds, so after `LOOPBACK_SILENT_S` the record is the reference, with a
    warning, and the echo is cancelled from then on."""
    echo = speaker_echo(reply)
    six = usb_capture(echo, np.zeros(len(reply)), np.zeros(len(reply)))
    played = PlayedAudio()
    played.add(0, (reply * 32767).astype("<i2").tobytes(), RATE_HZ)
    on = array_config(channels=6, array={"geometry": USB})
    off = dataclasses.replace(on, audio=dataclasses.replace(on.audio, echo_cancel="off"))
    with caplog.at_level(logging.WARNING):
        cancelled = beamed(on, six, played)
    assert "playback channel(s) 5 stayed silent while Sori spoke" in caplog.text
    late = slice(5 * RATE_HZ, None)
    left = np.mean(cancelled[late] ** 2) / np.mean(beamed(off, six, played)[late] ** 2)
    assert 10 * np.log10(left) < -15


def test_sori_replay_hears_a_command_over_what_the_board_plays(reply, tmp_path):
    """A six-channel recording of the USB array: the command said from 60°, 5 s into
    read speech the board plays (10 dB under the command at the microphones), another
    command ("조명 켜 줘") in the firmware's own mix. Replayed, Sori acts on the command the
    microphones heard and on nothing else; with echo cancellation off it does not."""
    said = espeak(tmp_path, COMMAND)
    start = 5 * RATE_HZ
    talker = np.zeros(8 * RATE_HZ, np.float32)
    talker[start : start + len(said)] = said
    playing = np.zeros(len(talker), np.float32)
    playing[: 7 * RATE_HZ] = reply[: 7 * RATE_HZ]
    echo = speaker_echo(playing)
    microphones = free_field(talker, TALKER_DEG, USB)
    echo *= np.sqrt(np.mean(microphones[start : start + len(said)] ** 2) / np.mean(echo**2))
    echo *= 10 ** (-10 / 20)
    processed = np.zeros(len(talker), np.float32)
    other = tmp_path / "other"
    other.mkdir()
    processed[start : start + len(said)] = espeak(other, "조명 켜줘")[: len(said)]
    recording = write_channels(
        tmp_path / "usb.wav", usb_capture(microphones + echo, processed, playing) * 0.8
    )
    heard, _ = replayed(write_config(tmp_path, "mqtt://127.0.0.1:1", USB_TOML), recording)
    acted = [(r["intent"], r["slots"].get("name")) for r in heard if r["intent"]]
    assert acted == [("HassTurnOff", "에어컨")], heard
    deaf = tmp_path / "deaf"
    deaf.mkdir()
    no_cancel = USB_TOML.replace("channels = 6", 'channels = 6\necho_cancel = "off"')
    unheard, _ = replayed(write_config(deaf, "mqtt://127.0.0.1:1", no_cancel), recording)
    assert "HassTurnOff" not in [r["intent"] for r in unheard], unheard


@pytest.fixture(scope="module")
def song(shared_dir) -> np.ndarray:
    """What another program plays through the board: 8 s of read speech, half scale."""
    speech = read_clip(str(shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav"), 8)
    speech = np.resize(speech, 8 * RATE_HZ)
    return (0.5 * speech / np.abs(speech).max()).astype(np.float32)


@pytest.mark.parametrize(
    ("echo_db", "taken_over"),
    [(12, False), (0, True)],
    ids=["inside-the-song-s-utterance", "the-beam-turns-to-the-user"],
)
def test_a_wake_phrase_said_as_the_board_starts_playing_wakes_once_at_its_place(
    song, shared_dir, echo_db, taken_over
):
    """Another program starts playing read speech through the board (Sori has no record
    of it); while the cancellers learn, what they leave opens an utterance at 0.7 s. The
    user's "현재" (a shared clip's opening word) comes later in it, at 2.5 s. With the
    echo 12 dB louder than the voice it stays inside that utterance, past the detector's
    first look: while the speaker sounds the detector listens all through an utterance.
    With the echo as loud as the voice the beam turns to the user and their utterance
    opens where they began: the phrase wakes there, and not in the song's utterance as
    well. (At 6 dB it did stay inside until the cancellers scaled their paths as they
    learn; since, they leave little enough there for the beam to turn to the user.)"""
    from sori.assemble.wake import build_wake_detector
    from sori.core.events import SpeechStarted, SpeechStopped, WakeDetected
    from sori.testing.replaying import replay_events

    clip = shared_dir / "audio" / "ko-read" / "zeroth_104_003_0253.wav"
    phrase = read_clip(str(clip), 1.1)[int(0.6 * RATE_HZ) :]  # "현재" at 0.06-0.45 s
    said_s = 2.5
    talker = np.zeros(len(song), np.float32)
    talker[int(said_s * RATE_HZ) : int(said_s * RATE_HZ) + len(phrase)] = phrase
    microphones = free_field(talker, TALKER_DEG, USB)
    echo = speaker_echo(song)
    echo *= voiced_rms(microphones) / voiced_rms(echo) * 10 ** (echo_db / 20)
    six = usb_capture(microphones + echo, np.zeros(len(song)), song)
    base = array_config(channels=6, array={"geometry": USB})
    config = dataclasses.replace(base, wake=dataclasses.replace(base.wake, phrases=["현재"]))
    detector = build_wake_detector(config)
    events, _ = replay_events(Recording(six), config, None, None, wake=detector)
    (woke,) = [e for e in events if isinstance(e, WakeDetected)]
    assert woke.phrase == "현재"
    assert abs(woke.start_ns / 1e9 - (said_s + 0.06)) < 0.3
    (opened,) = [
        e for e in events if isinstance(e, SpeechStarted) and e.utterance_id == woke.utterance_id
    ]
    split = [e for e in events if isinstance(e, SpeechStopped)][0].audio_end_ns
    assert (split == opened.audio_start_ns) is taken_over
    if not taken_over:  # the song opened it, more than the detector's first look before
        assert opened.audio_start_ns < (said_s - 1.5) * 1e9


class Recording:
    """Channels in memory, as a replay source."""

    name = "recording"

    def __init__(self, samples: np.ndarray) -> None:
        self.samples = samples

    def channel_frames(self, channels: int):  # noqa: ANN201
        chunker = ChannelChunker(20, channels)
        yield from chunker.push(self.samples.astype(np.float32))
        yield from chunker.flush()


def test_the_cancellers_rest_while_the_board_plays_nothing():
    """A playback channel holding only its converter's hiss (−80 dBFS) is no echo: once
    it has been quiet for the filters' reach, the microphones pass as they are, at no
    cost."""
    rng = np.random.default_rng(3)
    cancel = ChannelEchoCancel(None, 0, playback=(5,))
    passed = []
    for k in range(50):  # 1 s
        captured = rng.normal(0, 1e-2, (FRAME, 6)).astype(np.float32)
        captured[:, 5] = rng.normal(0, 1e-4, FRAME)
        block = captured[:, 1:5]
        out, energy = cancel.cancel(block, ChannelFrame(captured, k * 20_000_000))
        passed.append(out is block and energy == 0.0)
    assert not any(passed[:12]) and all(passed[-20:])  # cancelling the first 256 ms


# -- a board among the sound devices -------------------------------------------------------


def test_a_board_is_known_among_the_sound_devices_by_its_card_s_name():
    devices = [
        {"name": "bcm2835 Headphones: - (hw:0,0)", "max_input_channels": 0},
        {"name": "seeed-4mic-voicecard: bcm2835-i2s-ac10x-codec0 ac10x-codec.1-003b-0 (hw:1,0)",
         "max_input_channels": 4},
        {"name": "ReSpeaker 4 Mic Array (UAC1.0): USB Audio (hw:2,0)", "max_input_channels": 6},
        {"name": "pulse", "max_input_channels": 32},
    ]  # fmt: skip
    assert boards_among(devices) == [
        BoardFound("respeaker-4mic-hat", 4, "seeed-4mic-voicecard: bcm2835-i2s-ac10x-codec0 "
                   "ac10x-codec.1-003b-0"),
        BoardFound(USB, 6, "ReSpeaker 4 Mic Array (UAC1.0): USB Audio"),
    ]  # fmt: skip
    # the USB array's 1-channel firmware: the chip's own beam, one channel, no array
    assert boards_among([{"name": "ReSpeaker 4 Mic Array (UAC1.0)", "max_input_channels": 1}]) == []
    (kit,) = boards_among([{"name": "seeed-8mic-voicecard (hw:1,0)", "max_input_channels": 8}])
    assert (kit.board, kit.channels) == ("respeaker-6mic", 8) and "Linear" in kit.unsure
