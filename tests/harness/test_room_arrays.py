"""Non-command speech said across a simulated room, through the arrays of 2, 4 and 6
microphones that no other test hears end to end (one microphone and the 4-mic room at
RT60 0.2 s are in test_room_condition.py): the longest reverberation `sori test` offers,
and babble from a television 5 dB under the talker, from the talker's first word or on
a second before. Nothing may fire in any of them, and each array must have steered its
beam."""

from __future__ import annotations

from pathlib import Path

import pytest

from sori.hearing.audio.room import TALKER_BEARING_DEG, mic_positions
from sori.hearing.audio.standing import angle_apart_deg
from sori.testing.harness.manifest import load_manifest
from sori.testing.harness.runner import Runner

pytestmark = pytest.mark.slow

ROOMS = (
    "{room: {rt60: 0.8, distance_m: 2, mics: %d}}",
    "{room: {rt60: 0.4, distance_m: 2, interferer: babble, snr_db: 5, mics: %d}}",
)
TALKER = "picovoice_leopard_test_ko.wav"
"""3.9 s read aloud; heard in these rooms as near-commands ("이 제 이어서 주세요")."""
BABBLE = "zeroth_104_003_0294.wav"
"""The television's voice: the manifest's other fixture."""


def manifest(
    tmp_path: Path,
    shared_dir: Path,
    mics: int,
    rooms: tuple[str, ...] = ROOMS,
    talker: str = TALKER,
) -> Path:
    """A manifest of the talker and the babble's voice, neither a command, in `rooms`,
    and a config whose array sits where the room places its microphones."""
    positions = ", ".join(f"[{x!r}, {y!r}, {z!r}]" for x, y, z in mic_positions(mics).tolist())
    config = tmp_path / "sori.toml"
    config.write_text(
        f"[audio]\nchannels = {mics}\n[audio.array]\nmic_positions_m = [{positions}]\n", "utf-8"
    )
    clips = shared_dir / "audio" / "ko-read"
    fixtures = "".join(
        f"  - audio: {clips / name}\n    expect: {{no_action: true}}\n" for name in (talker, BABBLE)
    )
    augment = "".join(f"  - {room % mics}\n" for room in rooms)
    path = tmp_path / "m.yaml"
    path.write_text(
        f"defaults: {{config: {config}}}\nfixtures:\n{fixtures}augment:\n{augment}", "utf-8"
    )
    return path


@pytest.mark.parametrize("mics", [2, 4, 6])
def test_speech_across_the_room_fires_nothing_through_any_array(tmp_path, shared_dir, mics):
    runner = Runner(load_manifest(manifest(tmp_path, shared_dir, mics)))
    reverberant, babble = runner.run(0, 1), runner.run(0, 2)
    for run in (reverberant, babble):
        assert run["passed"] and run["false_actions"] == 0, run["failures"]
        heard = [u for u in run["utterances"] if u["transcript"]]
        assert heard, f"{run['augmentation']}: nothing was heard"
        assert all(u["doa_deg"] is not None for u in heard), run["utterances"]
    # In the quiet room the beam turns to the talker; two microphones on a line cannot
    # tell a direction from its mirror image across that line.
    doa = reverberant["utterances"][0]["doa_deg"]
    apart = angle_apart_deg(doa, TALKER_BEARING_DEG)
    if mics == 2:
        apart = min(apart, angle_apart_deg(doa, -TALKER_BEARING_DEG))
    assert apart <= 10.0, f"{mics} microphones at RT60 0.8 s steered to {doa}°"


def test_a_television_on_first_is_learnt_and_the_beam_turns_to_the_talker(tmp_path, shared_dir):
    """`lead_s`: the babble plays alone for a second before the talker, as a television
    on before the command does. What it says alone is no part of the talker's run; the
    talker's utterances are beamed from where they stand, and nothing fires."""
    room = "{room: {rt60: 0.4, distance_m: 2, interferer: babble, snr_db: 5, mics: %d, lead_s: 1}}"
    path = manifest(tmp_path, shared_dir, 4, (room,), talker="zeroth_104_003_0374.wav")
    run = Runner(load_manifest(path)).run(0, 1)
    assert run["augmentation"].endswith("babble 5 dB on 1 s first")
    assert run["passed"] and run["false_actions"] == 0, run["failures"]
    talker = [u for u in run["utterances"] if u["speech_end_s"] > 1.5 and u["transcript"]]
    assert talker, run["utterances"]
    for utterance in talker:
        assert angle_apart_deg(utterance["doa_deg"], TALKER_BEARING_DEG) <= 10.0, utterance
