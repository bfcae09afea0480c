"""Microphone arrays: geometry, direction finding and the beam (sori.hearing.audio.array,
sori.hearing.audio.front_end), on rooms simulated from the shared read clips."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from array_rooms import (
    FRAME,
    LEAD_S,
    Room,
    beam_fixed,
    beam_with_oracle,
    geometry,
    read_clip,
    simulate,
)

from sori.assemble.hearing import build_array, front_end, source_frames
from sori.core.config import Config
from sori.core.config.sections import ARRAY_BOARDS
from sori.core.errors import AudioError, ConfigError
from sori.hearing.audio.array import (
    BOARDS,
    DirectionFinder,
    array_geometry,
    mvdr,
    outer,
    steering,
    unit_vectors,
)
from sori.hearing.audio.format import RATE_HZ, AudioFrame, write_wav
from sori.hearing.audio.front_end import ArrayFrontEnd
from sori.hearing.audio.sources import FileSource

CLIP = "audio/ko-read/zeroth_104_003_0294.wav"
ANGLES_DEG = (30.0, 135.0, 250.0, 320.0)


def array_config(channels: int = 4, **array) -> Config:
    config = Config()
    chosen = dataclasses.replace(config.audio.array, **({"geometry": "respeaker-4mic-hat"} | array))
    return dataclasses.replace(
        config, audio=dataclasses.replace(config.audio, channels=channels, array=chosen)
    )


@pytest.fixture(scope="module")
def rooms(shared_dir) -> dict[float, Room]:
    """One room per talker direction, the interferer 100° round from the talker."""
    speech = read_clip(str(shared_dir / CLIP), 3.0)
    return {az: simulate(speech, az, (az + 100) % 360) for az in ANGLES_DEG}


def angle_apart(a: float, b: float) -> float:
    return abs((a - b + 180) % 360 - 180)


# -- geometry ----------------------------------------------------------------------------


def test_the_boards_config_names_are_the_boards_with_positions():
    assert tuple(BOARDS) == ARRAY_BOARDS


def test_board_positions_are_datasheet_sized():
    apart_mm = {
        name: 1000 * np.linalg.norm(np.array(p)[:, None] - np.array(p)[None], axis=-1).max()
        for name, p in BOARDS.items()
    }
    assert apart_mm == pytest.approx(
        {
            "respeaker-2mic-hat": 58.0,
            "respeaker-4mic-hat": 81.3,
            "respeaker-6mic": 92.6,
            "respeaker-usb-4mic": 64.0,
        },
        abs=0.2,
    )


@pytest.mark.parametrize(
    ("board", "positions", "says"),
    [
        ("respeaker-4mic-hat", [[0, 0, 0], [0.05, 0, 0]], "not both"),
        ("", [], "needs [audio.array]"),
        ("", [[0, 0, 0]], "at least 2"),
        ("", [[0, 0], [0.05, 0]], "must be [x, y, z]"),
        ("", [[0, 0, 0], [45, 0, 0]], "in metres"),
        ("", [[0, 0, 0], [0.0001, 0, 0]], "apart"),
    ],
)
def test_bad_geometry_is_a_config_error_that_says_what_to_fix(board, positions, says):
    with pytest.raises(ConfigError, match=r".*" + says.replace("[", r"\[").replace("]", r"\]")):
        array_geometry(board, positions)


def test_channels_must_match_the_microphones():
    with pytest.raises(ConfigError, match="audio.channels is 6 but .* places 4 microphones"):
        build_array(array_config(channels=6))


def test_one_microphone_builds_no_array_and_frames_pass_as_they_were():
    config = Config()
    assert build_array(config) is None
    quiet = dataclasses.replace(config, audio=dataclasses.replace(config.audio, denoise="off"))
    frames = [AudioFrame(bytes(640), 20_000_000 * k) for k in range(3)]
    assert list(front_end(quiet, frames)) == frames


# -- the beam's parts --------------------------------------------------------------------


def test_mvdr_is_distortionless_towards_the_talker_and_nulls_a_point_interferer():
    g = geometry()
    freqs = np.fft.rfftfreq(512, 1 / RATE_HZ)[1:]
    towards, away = unit_vectors(np.array([40.0, 200.0]), np.zeros(2))
    look, other = steering(g, freqs, towards), steering(g, freqs, away)
    noise = outer(other) + 1e-3 * np.eye(4)
    w = mvdr(look, noise)
    assert np.allclose(np.einsum("fm,fm->f", w.conj(), look), 1.0)
    leak = np.abs(np.einsum("fm,fm->f", w.conj(), other)) ** 2
    assert np.median(leak) < 0.05


# -- rooms -------------------------------------------------------------------------------


@pytest.mark.parametrize("azimuth_deg", ANGLES_DEG)
def test_the_talkers_direction_is_found_within_10_degrees(rooms, azimuth_deg):
    array = ArrayFrontEnd(geometry(), "mvdr")
    beam_with_oracle(array, rooms[azimuth_deg])
    assert array.direction_deg is not None
    assert angle_apart(array.direction_deg, azimuth_deg) <= 10
    assert array.takeovers == 0  # the talker's own echoes and loud syllables: no one new


@pytest.mark.parametrize("azimuth_deg", [60.0, 90.0])
def test_what_a_nulled_television_leaves_does_not_pull_the_search_to_its_sectors_edge(
    azimuth_deg,
):
    """A television at 160° stands (its covariance is the noise), but a third of it is
    left over, louder than the talker: its skirt rises towards the avoided sector, whose
    edge (130° or 190°) was the highest direction allowed. The talker is a peak; the edge
    is not."""
    finder = DirectionFinder(geometry(), 512, RATE_HZ)
    freqs = np.fft.rfftfreq(512, 1 / RATE_HZ)[finder.band]

    def source(deg: float, power: float) -> np.ndarray:
        look = steering(geometry(), freqs, unit_vectors(np.array(deg), np.array(0.0)))
        return power * outer(look)

    heard = source(160.0, 4.0) + source(azimuth_deg, 1.0) + 0.01 * np.eye(4)
    standing = source(160.0, 4.0 * 0.7) + 0.005 * np.eye(4)
    allowed = angle_apart(finder.azimuth_deg, 160.0) >= 30
    found = finder.azimuth_deg[finder.find(heard, standing, allowed)]
    assert angle_apart(found, azimuth_deg) <= 10, found


def snr_db(talker: np.ndarray, interferer: np.ndarray) -> float:
    skip = int(LEAD_S * RATE_HZ) + 512  # the talker's part, past the beam's delay
    return 10 * np.log10(np.mean(talker[skip:] ** 2) / np.mean(interferer[skip:] ** 2))


def beam_gain_db(room: Room, beamform: str) -> float:
    array = ArrayFrontEnd(geometry(), beamform)
    beam_with_oracle(array, room)
    usable = len(room.talker) - len(room.talker) % FRAME
    talker, interferer = beam_fixed(array, room.talker), beam_fixed(array, room.interferer)
    one_mic = snr_db(room.talker[:usable, 0], room.interferer[:usable, 0])
    return snr_db(talker, interferer) - one_mic


@pytest.mark.parametrize("azimuth_deg", ANGLES_DEG)
def test_mvdr_gains_6_db_over_one_microphone_on_a_point_interferer(rooms, azimuth_deg):
    assert beam_gain_db(rooms[azimuth_deg], "mvdr") >= 6.0


def test_delay_and_sum_gains_less_than_mvdr_but_does_not_lose(rooms):
    room = rooms[ANGLES_DEG[0]]
    assert 0.0 < beam_gain_db(room, "delay-sum") < beam_gain_db(room, "mvdr")


def test_in_a_quiet_room_mvdr_is_delay_and_sum(shared_dir):
    """Little noise to null: MVDR would null the talker's own reverberant tail, which is
    most of what the quiet between utterances holds, so the beam aligns and averages."""
    speech = read_clip(str(shared_dir / CLIP), 3.0)
    quiet = simulate(speech, 60.0, 160.0, below_db=40.0)
    held = {}
    for beamform in ("mvdr", "delay-sum"):
        array = ArrayFrontEnd(geometry(), beamform)
        beam_with_oracle(array, quiet)
        held[beamform] = array.weights  # the beam held on the talker for the utterance
    assert np.array_equal(held["mvdr"], held["delay-sum"])

    noisy = simulate(speech, 60.0, 160.0, below_db=5.0)  # noise to null: MVDR's own
    assert beam_gain_db(noisy, "mvdr") > beam_gain_db(noisy, "delay-sum") + 3


def test_the_beam_is_held_for_the_utterance_and_the_next_finds_its_own_talker(rooms):
    array = ArrayFrontEnd(geometry(), "mvdr")
    beam_with_oracle(array, rooms[135.0])
    held = array.weights
    array.heard(True, True)  # still in the utterance: nothing moves
    assert np.array_equal(array.weights, held)
    array.heard(False, False)  # it ended
    beam_with_oracle(array, rooms[320.0])
    assert angle_apart(array.direction_deg, 320.0) <= 10


# -- files -------------------------------------------------------------------------------


def test_a_file_with_other_than_one_channel_per_microphone_is_refused_by_name(tmp_path):
    stereo = tmp_path / "stereo.wav"
    write_wav(stereo, bytes(4 * RATE_HZ // 10), channels=2)
    source = FileSource(stereo)
    with pytest.raises(AudioError, match="stereo.wav: 2 channel.*audio.channels is 4"):
        list(source_frames(source, array_config()))


def test_a_multichannel_file_is_read_as_recorded(tmp_path):
    four = tmp_path / "four.wav"
    samples = (np.arange(4 * 480).reshape(480, 4) % 7).astype("<i2")
    write_wav(four, samples.tobytes(), channels=4)
    frames = list(source_frames(FileSource(four), array_config()))
    assert [f.samples.shape for f in frames] == [(320, 4), (320, 4)]
    assert np.allclose(frames[0].samples * 32768, samples[:320])
    assert frames[1].start_ns == 20_000_000


@pytest.mark.parametrize("command", [["replay", "--no-wake", "x.wav"], ["run", "--input", "x.wav"]])
def test_a_bad_array_is_refused_before_any_model_loads(tmp_path, command):
    """Four channels on a two-microphone board: one line naming both, exit 2, before any
    model loads (the vosk model named here is missing: loading it first would say so)."""
    import subprocess
    import sys

    config = tmp_path / "sori.toml"
    config.write_text(
        '[audio]\nchannels = 4\n[audio.array]\ngeometry = "respeaker-2mic-hat"\n'
        f'[stt.vosk]\nmodel = "{tmp_path / "no-model"}"\n'
    )
    write_wav(tmp_path / "x.wav", np.zeros((16000, 4), np.int16).tobytes(), channels=4)
    done = subprocess.run(
        [sys.executable, "-m", "sori", *command, "--config", str(config)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "audio.channels is 4 but [audio.array] places 2 microphones" in done.stderr
    assert "Traceback" not in done.stderr and "vosk" not in done.stderr
