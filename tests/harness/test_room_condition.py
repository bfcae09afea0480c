"""The simulated room of `sori test` ({room: {...}}): read from the manifest with every key
checked, then a talker across a walled room heard by one microphone or a circular array,
with the interferer at its own place and level."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from sori.core.errors import DependencyError
from sori.hearing.audio.array import BOARDS
from sori.hearing.audio.augment import make_noise
from sori.hearing.audio.format import RATE_HZ
from sori.hearing.audio.room import ARRAY_RADIUS_M, RoomSetup, mic_positions, simulate_room
from sori.testing.harness import conditions
from sori.testing.harness.manifest import Augmentation, ManifestError, load_manifest

REPO = Path(__file__).resolve().parents[2]
CLIP = REPO.parent / "shared" / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav"
FIXTURE = f"fixtures:\n  - audio: {CLIP}\n    expect: {{no_action: true}}\n"
SPEED_OF_SOUND_M_S = 343.0


def manifest(tmp_path: Path, augment: str):
    path = tmp_path / "m.yaml"
    path.write_text(FIXTURE + f"augment:\n  - {augment}\n", encoding="utf-8")
    return load_manifest(path)


@pytest.fixture(scope="module")
def speech(shared_dir) -> np.ndarray:
    return conditions.clip(shared_dir / "audio" / "ko-read" / "picovoice_leopard_test_ko.wav")


def test_the_room_of_the_issue_is_read_with_its_interferer_as_the_noise(tmp_path, shared_dir):
    room = "{room: {rt60: 0.4, distance_m: 2, interferer: babble, snr_db: 5, mics: 4}}"
    augmentation = manifest(tmp_path, room).augmentations[1]
    assert augmentation == Augmentation(
        "room RT60 0.4 s at 2 m, 4 mics, babble 5 dB",
        noise="babble",  # so the runner hands it the other fixtures' voices
        snr_db=5.0,
        room=RoomSetup(rt60_s=0.4, distance_m=2.0, mics=4),
    )
    quiet = manifest(tmp_path, "{room: {rt60: 0.8}, gain_db: -6}").augmentations[1]
    assert quiet.name == "room RT60 0.8 s at 2 m, 1 mic, gain -6 dB"
    assert quiet.noise is None and quiet.room == RoomSetup(rt60_s=0.8)


@pytest.mark.parametrize(
    ("augment", "where"),
    [
        ("{room: 0.4}", "augment[0].room: must be a mapping"),
        ("{room: {rt60: 0.4, mic: 4}}", "augment[0].room.mic: unknown field; expected one of"),
        ("{room: {rt60: 5}}", "augment[0].room.rt60: must be between 0.15 and 1.2, got 5.0"),
        ("{room: {rt60: .nan}}", "augment[0].room.rt60: must be between 0.15 and 1.2"),
        ("{room: {distance_m: 10}}", "augment[0].room.distance_m: must be between 0.6 and 3.5"),
        ("{room: {mics: 2.5}}", "augment[0].room.mics: must be an integer, got"),
        ("{room: {mics: 0}}", "augment[0].room.mics: must be between 1 and 8, got 0"),
        ("{room: {interferer: tv, snr_db: 5}}", "augment[0].room.interferer: must be white,"),
        ("{room: {interferer: pink}}", "augment[0].room: 'interferer' and 'snr_db' go together"),
        ("{room: {snr_db: 5}}", "augment[0].room: 'interferer' and 'snr_db' go together"),
        ("{room: {}, reverb: room}", "augment[0].reverb: does not go with 'room'"),
        ("{room: {}, noise: pink, snr_db: 5}", "augment[0].noise: does not go with 'room'"),
        ("{room: {lead_s: 1}}", "augment[0].room.lead_s: is how long the interferer plays first"),
        (
            "{room: {interferer: pink, snr_db: 5, lead_s: 40}}",
            "augment[0].room.lead_s: must be between 0 and 30, got 40",
        ),
    ],
)
def test_a_bad_room_names_its_key(tmp_path, shared_dir, augment, where):
    with pytest.raises(ManifestError) as caught:
        manifest(tmp_path, augment)
    assert f"m.yaml: {where}" in str(caught.value)


def test_one_microphone_hears_one_channel_of_reverberant_speech(speech):
    room = Augmentation("r", room=RoomSetup(rt60_s=0.4, distance_m=2.0, mics=1))
    heard = conditions.apply(speech, room, np.random.default_rng(0))
    assert heard.ndim == 1 and heard.dtype == np.float32
    assert len(heard) > len(speech) + 0.3 * RATE_HZ  # the room rings on after the talker
    assert _rms(heard) == pytest.approx(_rms(speech), rel=1e-3)  # as `reverb` keeps it
    assert np.corrcoef(heard[: len(speech)], speech)[0, 1] < 0.9  # smeared by the room


def test_an_array_hears_the_talker_at_each_microphone_a_little_apart(speech):
    room = Augmentation(
        "r", noise="white", snr_db=30.0, room=RoomSetup(rt60_s=0.2, distance_m=2.0, mics=4)
    )
    heard = conditions.apply(speech, room, np.random.default_rng(0))
    assert heard.shape[1] == 4 and heard.dtype == np.float32
    reach = int(np.ceil(2 * ARRAY_RADIUS_M / SPEED_OF_SOUND_M_S * RATE_HZ)) + 1
    for mic in range(1, 4):  # the same voice, at most the array's width later or earlier
        lag = _lag(heard[:, 0], heard[:, mic], reach + 10)
        assert abs(lag) <= reach
        assert not np.allclose(heard[:, 0], heard[:, mic])
    again = conditions.apply(speech, room, np.random.default_rng(0))
    assert np.array_equal(heard, again)  # seeded: a run repeats exactly


def test_the_interferer_is_at_the_requested_level_at_the_first_microphone(speech):
    rng = np.random.default_rng(3)
    pink = make_noise("pink", len(speech), rng)
    setup = RoomSetup(rt60_s=0.4, distance_m=3.0, mics=2)
    alone = simulate_room(speech, setup).channels
    mixed = simulate_room(speech, setup, pink, snr_db=5.0).channels
    interference = mixed[: len(alone)] - alone  # the interferer's room rings longer
    for mic in range(2):
        measured = 20 * np.log10(_rms(alone[:, mic]) / _rms(interference[:, mic]))
        assert measured == pytest.approx(5.0, abs=0.5 if mic == 0 else 1.5)


def test_a_lead_plays_the_interferer_alone_first_at_its_level_against_the_talker(speech):
    """`lead_s`: a television on before the command. The talker's level, which the
    interferer is set under, is measured while they speak, not over the lead's silence."""
    lead_s = 1.5
    start = int(lead_s * RATE_HZ)
    pink = make_noise("pink", len(speech) + start, np.random.default_rng(3))
    setup = RoomSetup(rt60_s=0.4, distance_m=3.0, mics=2, lead_s=lead_s)
    alone = simulate_room(speech, setup, np.zeros_like(pink)).channels  # the talker alone
    mixed = simulate_room(speech, setup, pink, snr_db=5.0).channels
    assert len(mixed) >= len(speech) + start
    assert _rms(alone[:start]) < 1e-6 * _rms(alone[start:])  # no talker in the lead,
    assert _rms(mixed[:start]) > 0.1 * _rms(alone[start:])  # only the interferer
    interference = mixed[: len(alone)] - alone
    measured = 20 * np.log10(_rms(alone[start:, 0]) / _rms(interference[start:, 0]))
    assert measured == pytest.approx(5.0, abs=0.5)
    assert _rms(alone[start:, 0]) == pytest.approx(_rms(speech), rel=1e-3)


def test_a_lead_is_named_and_the_talker_is_judged_from_their_first_word(tmp_path, speech):
    room = "{room: {rt60: 0.4, interferer: babble, snr_db: 5, mics: 4, lead_s: 1}}"
    augmentation = manifest(tmp_path, room).augmentations[1]
    assert augmentation.name == "room RT60 0.4 s at 2 m, 4 mics, babble 5 dB on 1 s first"
    assert augmentation.room == RoomSetup(mics=4, lead_s=1.0)
    voice_at = np.flatnonzero(np.abs(speech) > 0.1 * np.abs(speech).max())[0] / RATE_HZ
    begins = conditions.talker_from_s(speech, augmentation)
    assert 1.0 + voice_at - 0.1 <= begins <= 1.0 + voice_at + 0.02
    assert conditions.talker_from_s(speech, manifest(tmp_path, "{room: {}}").augmentations[1]) == 0


def test_four_microphones_are_the_usb_array_s_in_its_channel_order():
    """So a 4-mic room is heard with `audio.array.geometry = "respeaker-usb-4mic"`."""
    assert np.array_equal(mic_positions(1), np.zeros((1, 3)))
    np.testing.assert_allclose(mic_positions(4), BOARDS["respeaker-usb-4mic"], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(mic_positions(6), axis=1), ARRAY_RADIUS_M)


def test_without_pyroomacoustics_the_error_says_what_to_install(speech, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyroomacoustics", None)  # its import fails
    with pytest.raises(DependencyError, match="pip install pyroomacoustics"):
        conditions.apply(speech, Augmentation("r", room=RoomSetup()), np.random.default_rng(0))


def _lag(a: np.ndarray, b: np.ndarray, most: int) -> int:
    """Samples by which `b` lags `a`, searched within ±`most`."""
    lags = range(-most, most + 1)
    scores = [float(a[most : len(a) - most] @ b[most + k : len(b) - most + k]) for k in lags]
    return lags[int(np.argmax(scores))]


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def test_sori_test_hears_a_fixture_said_across_the_room(tmp_path, shared_dir):
    """One microphone: the run goes through the real pipeline like any other, longer by
    the room's ring, and the speech is still heard."""
    from sori.testing.harness.runner import Runner

    runner = Runner(manifest(tmp_path, "{room: {rt60: 0.2, distance_m: 1, mics: 1}}"))
    clean, room = runner.run(0, 0), runner.run(0, 1)
    assert room["augmentation"] == "room RT60 0.2 s at 1 m, 1 mic"
    assert room["audio_s"] > clean["audio_s"] + 0.1
    assert room["utterances"] and room["utterances"][0]["transcript"]


def test_sori_test_hears_a_four_microphone_room_through_the_array(tmp_path):
    """A 4-mic room reaches the array front end channel by channel (the clean original
    alike at every microphone), in the channels the board gives them; a room whose mics
    differ from the array's is refused."""
    from sori.testing.harness.runner import Runner

    config = tmp_path / "sori.toml"
    config.write_text(
        '[audio]\nchannels = 4\ndenoise = "off"\n[audio.array]\ngeometry = "respeaker-usb-4mic"\n',
        encoding="utf-8",
    )
    room = "{room: {rt60: 0.2, distance_m: 1, mics: 4}}"
    path = tmp_path / "m.yaml"
    defaults = f"defaults: {{config: {config}}}\n"
    path.write_text(defaults + FIXTURE + f"augment:\n  - {room}\n", "utf-8")
    runner = Runner(load_manifest(path))
    clean, far = runner.run(0, 0), runner.run(0, 1)
    for run in (clean, far):
        assert run["utterances"] and run["utterances"][0]["transcript"], run
    assert far["utterances"][0]["doa_deg"] is not None  # the beam found the talker

    # the USB array's six channels: the room's four microphones in channels 1-4
    config.write_text(config.read_text("utf-8").replace("channels = 4", "channels = 6"), "utf-8")
    six = Runner(load_manifest(path)).run(0, 1)
    assert [(u["transcript"], u["doa_deg"]) for u in six["utterances"]] == [
        (u["transcript"], u["doa_deg"]) for u in far["utterances"]
    ]

    path.write_text(defaults + FIXTURE + "augment:\n  - {room: {mics: 2}}\n", "utf-8")
    with pytest.raises(ManifestError, match="gives 2 microphone.* the config's array has 4"):
        Runner(load_manifest(path))
