"""Benchmark the audio front end: echo cancellers compared, and dereverberation across a room.

    .venv/bin/python scripts/bench_frontend.py                    # everything (slow)
    .venv/bin/python scripts/bench_frontend.py --only echo        # the cancellers
    .venv/bin/python scripts/bench_frontend.py --only restart     # the first reply after one
    .venv/bin/python scripts/bench_frontend.py --only dereverb --clips 4
    .venv/bin/python scripts/bench_frontend.py --only cpu
    .venv/bin/python scripts/bench_frontend.py --only loopback    # an array's reference

echo: Sori's own canceller (sori.hearing.audio.echo_cancel) against speexdsp's (`pip
install speexdsp`, which builds against libspeexdsp: `apt-get install swig
libspeexdsp-dev`) and WebRTC's AEC3 (`pip install pywebrtc-audio`), each where installed,
on the echo tests' fixtures (tests/echo_kit.py): Sori's reply in its espeak-ng voice and a
synthetic piece of music, both played 40 ms late through a synthetic room (RT60 0.4 s,
6 dB of direct sound over the tail) at half level.
- ERLE: how far the echo is below what it was, in dB, in the first 2 s (learning) and
  from 5 s on (learned).
- Double talk: a read clip's opening said over the reply, as loud as it: how far what is
  left of the echo and the user's distortion lie below the user's voice while they talk
  (dB), and the ERLE after they stop (the filter did not learn the user as echo).
- Double talk, user level: how much louder or quieter the user comes out (a residual
  echo suppressor ducks the user too); user over rest: the user's voice, allowing any
  16 ms filter of it (a delay, a high-pass, as BSS Eval's SDR), over the rest.
- Wake: a wake phrase ("현재", a shared clip's opening) said over the reply or the music
  at three moments, the echo 0 and 10 dB louder than the voice; a trial passes when the
  phrase wakes once, at its place. Live: the cancelled audio heard by Sori's pipeline
  while Sori speaks (its own canceller off), whose voice detector listens all through an
  utterance and whose gate ignores a phrase found in what Sori played. Scanned: as
  `sori wake` scans a file, the phrase only at the start of an utterance, so what is
  left of the echo must let the voice detector hear a pause before it.
- CPU: process time per second of audio, one core.

restart: the first reply after a restart (the second half of the echo reply), Sori's
canceller fresh or started from the path it kept from the reply before (the first half,
sori.hearing.audio.echo_path): ERLE in its first second, its second, and from 5 s on, in
the same room, with the speaker moved (another draw of the room's reflections, 25 ms
nearer), muted (only room noise heard, while Sori's record says it plays), and 10 dB
quieter; then the wake trials above, the phrase said 0.5, 1.0 and 1.5 s into that reply.

dereverb: shared read clips said 2 m from one microphone in a simulated 6 x 5 m room
(sori.hearing.audio.room, pyroomacoustics) at RT60 0.2, 0.4 and 0.8 s, heard through
Sori's pipeline (`sori replay`, the recognizer of device/sori.example.toml) as they are
and after OnlineWpe (sori.hearing.audio.dereverb): CER, and the commands wrongly
committed (the clips are read news, none a command: every device intent is a false
action). Dereverberation runs here, before the pipeline, so the figures do not depend on
how `audio.dereverb` is wired.

cpu: each stage's process time per second of audio, one core: the cancellers, OnlineWpe
with 1, 2, 4 and 6 channels, and the room's simulation (not a run-time stage).

loopback: the reply and the music played by the device's own loudspeaker, 8 cm under a
ReSpeaker USB array in a room (RT60 0.4 s, pyroomacoustics, tests/audio/array_rooms.py),
through the array's front end (six channels as the board's firmware gives them, MVDR,
a canceller per microphone), its reference: the board's playback channel; Sori's record
of what it played, stamped as played; the record stamped 10 ms after the sound left the
speaker (an output latency over-estimated); the record on a clock 100 or 500 ppm off
the microphones' (a loudspeaker on another sound card). ERLE of the beam's output
against the same front end with cancellation off, in the first 2 s and from 5 s on; CPU
of the front end while the board plays, and while its playback channel is silent. Then
the wake phrase ("현재") said from 60° over what another program plays through the board
(two read clips, a talk show; and the music), at 1-8 s after it began (the cancellers
fresh at 0), its echo 0 and 10 dB louder than the voice: trials in which Sori's pipeline,
its gate closed, woke once at the phrase's place; and the same with the frames not saying
that the speaker sounded, so that the detector looks only at each utterance's start.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import sys
import time
import wave
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))
sys.path.insert(0, str(REPO / "tests"))  # echo_kit: the echo tests' fixtures
sys.path.insert(0, str(REPO / "tests" / "audio"))  # array_rooms: the array tests' rooms

import numpy as np  # noqa: E402

from sori.core.config import AudioConfig, Config, load_config  # noqa: E402
from sori.hearing.audio.augment import (  # noqa: E402
    reverberate,
    room_impulse,
    said_over,
    to_pcm16,
    voiced_rms,
)
from sori.hearing.audio.dereverb import LateReverbSuppressor, OnlineWpe  # noqa: E402
from sori.hearing.audio.echo_cancel import EchoCanceller  # noqa: E402

RATE = 16000
BLOCK = 320
"""20 ms: the pipeline's frame, the block every canceller gets here (AEC3 takes 10 ms)."""
ECHO_DELAY_S = 0.04
WAKE_PHRASE, WAKE_CLIP, WAKE_SAID_S = "현재", "zeroth_104_003_0253.wav", 0.66
"""The phrase, the clip it opens, and where in the clip it is said."""
WAKE_AT_S = (3.0, 6.0, 9.0)
WAKE_ECHO_DB = (0.0, 10.0)
"""How much louder than the phrase the echo is, in dB."""
DISTORTION_TAPS = 256
"""Length of the filter the near-end's measure forgives (16 ms: AEC3 delays by 8 ms)."""
ROOM_RT60_S = (0.2, 0.4, 0.8)
ROOM_DISTANCE_M = 2.0
WPE_CHANNELS = (1, 2, 4, 6)

Canceller = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""(microphone, reference), float on the int16 scale, to the microphone without the echo."""


def sori_canceller(echo_path: np.ndarray | None = None) -> Canceller:
    """Sori's canceller, fresh or started from an `echo_path` kept before a restart."""
    canceller = EchoCanceller(BLOCK)
    if echo_path is not None:
        canceller.start_from(echo_path)

    def run(mic: np.ndarray, reference: np.ndarray) -> np.ndarray:
        out = np.array(mic, dtype=np.float64)
        for i in range(0, len(mic) - BLOCK + 1, BLOCK):
            cleaned = canceller.process(out[i : i + BLOCK], reference[i : i + BLOCK])
            if cleaned is not None:
                out[i : i + BLOCK] = cleaned
        return out

    return run


def speex_canceller() -> Canceller:
    import speexdsp

    canceller = speexdsp.EchoCanceller.create(BLOCK, int(0.256 * RATE), RATE)

    def run(mic: np.ndarray, reference: np.ndarray) -> np.ndarray:
        out = np.array(mic, dtype=np.float64)
        for i in range(0, len(mic) - BLOCK + 1, BLOCK):
            near, far = to_pcm16(mic[i : i + BLOCK]), to_pcm16(reference[i : i + BLOCK])
            out[i : i + BLOCK] = np.frombuffer(canceller.process(near, far), "<i2")
        return out

    return run


def webrtc_canceller() -> Canceller:
    import pywebrtc_audio

    canceller = pywebrtc_audio.EchoCanceller(RATE, 1)
    tenth = RATE // 100

    def run(mic: np.ndarray, reference: np.ndarray) -> np.ndarray:
        out = np.array(mic, dtype=np.float64)
        near = np.frombuffer(to_pcm16(mic), "<i2")
        far = np.frombuffer(to_pcm16(reference), "<i2")
        for i in range(0, len(mic) - tenth + 1, tenth):
            out[i : i + tenth] = canceller.process(near[i : i + tenth], far[i : i + tenth])
        return out

    return run


def no_canceller() -> Canceller:
    return lambda mic, reference: np.asarray(mic, dtype=np.float64)


CANCELLERS: dict[str, Callable[[], Canceller]] = {
    "none": no_canceller,
    "sori": sori_canceller,
    "speexdsp": speex_canceller,
    "webrtc-aec3": webrtc_canceller,
}


def installed(names: list[str]) -> list[str]:
    out = []
    for name in names:
        try:
            CANCELLERS[name]()
        except ImportError as exc:
            print(f"{name}: not installed ({exc}); skipped", flush=True)
            continue
        out.append(name)
    return out


def music(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """A synthetic piece: a chord every half second (three voices with harmonics, decaying
    like a piano), a bass line, and noise-burst drums; int16 scale, about -20 dBFS."""
    n = int(seconds * RATE)
    t = np.arange(int(0.5 * RATE)) / RATE
    envelope = np.exp(-t * 4)
    out = np.zeros(n + len(t))
    roots = (220.0, 174.6, 261.6, 196.0)
    for k, start in enumerate(range(0, n, len(t))):
        root = roots[k % len(roots)]
        note = sum(
            np.sin(2 * np.pi * root * ratio * h * t) / h
            for ratio in (1.0, 1.26, 1.5)
            for h in (1, 2, 3, 4)
        )
        note += 1.5 * np.sin(2 * np.pi * root / 2 * t)  # the bass
        drum = rng.standard_normal(len(t)) * np.exp(-t * 40) * (2.0 if k % 2 else 1.0)
        out[start : start + len(t)] += note * envelope + drum
    out = out[:n]
    return (out / np.sqrt(np.mean(out**2)) * 32768 * 0.1).astype(np.float32)


def through_room(played: np.ndarray, seed: int = 3, delay_s: float = ECHO_DELAY_S) -> np.ndarray:
    """The speaker as the microphone hears it (the echo tests' room, tests/audio/
    test_echo_cancel.py): 40 ms late, RT60 0.4 s, 6 dB of direct sound, half the level;
    another `seed` and `delay_s`: the speaker moved in the same room."""
    impulse = room_impulse(0.4, np.random.default_rng(seed), drr_db=6.0)
    late = np.concatenate([np.zeros(int(delay_s * RATE)), played])
    return 0.5 * reverberate(late, impulse)[: len(played)]


def energy_db(x: np.ndarray) -> float:
    return 10 * np.log10(max(float(x @ x), 1e-9))


def opening(path: Path, seconds: float = 2.5) -> np.ndarray:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(int(seconds * RATE)), np.int16).astype(np.float32)


def erle(name: str, played: np.ndarray) -> tuple[dict, float]:
    """ERLE while learning and learned, and the CPU per second of audio."""
    mic = through_room(played)
    canceller = CANCELLERS[name]()
    cpu = time.process_time()
    out = canceller(mic, played)
    cpu = (time.process_time() - cpu) / (len(mic) / RATE)
    early, learned = slice(int(0.5 * RATE), int(2.5 * RATE)), slice(5 * RATE, len(mic))
    return {
        "erle_first_2s_db": round(energy_db(mic[early]) - energy_db(out[early]), 1),
        "erle_learned_db": round(energy_db(mic[learned]) - energy_db(out[learned]), 1),
    }, cpu


def double_talk(name: str, reply: np.ndarray, user: np.ndarray) -> dict:
    """The user said over the reply at 5.5 s, as loud: what is kept of them."""
    at = int(5.5 * RATE)
    mic = said_over(through_room(reply), user, at_s=5.5, above_db=0)[: len(reply)]
    out = CANCELLERS[name]()(mic, reply)
    talk = slice(at, at + len(user))
    after = slice(at + len(user) + RATE // 2, len(mic))
    kept = filtered_part(out[talk], user)
    return {
        "user_level_db": round(energy_db(out[talk]) - energy_db(user), 1),
        "user_over_rest_db": round(energy_db(kept) - energy_db(out[talk] - kept), 1),
        "erle_after_talk_db": round(energy_db(mic[after]) - energy_db(out[after]), 1),
    }


def filtered_part(out: np.ndarray, user: np.ndarray) -> np.ndarray:
    """The part of `out` that is `user` through some filter of `DISTORTION_TAPS` (a
    delay, a high-pass: what BSS Eval's SDR allows); the rest is echo left and damage."""
    shifted = np.stack([np.roll(user, k) for k in range(DISTORTION_TAPS)], axis=1)
    for k in range(DISTORTION_TAPS):
        shifted[:k, k] = 0.0
    weights, *_ = np.linalg.lstsq(shifted, out, rcond=None)
    return shifted @ weights


def wake_trials(
    canceller: Callable[[], Canceller],
    played: np.ndarray,
    phrase: np.ndarray,
    config: Config,
    at_seconds: tuple[float, ...] = WAKE_AT_S,
) -> tuple[int, int]:
    """Trials (`at_seconds` x WAKE_ECHO_DB) in which the phrase woke once, at its place:
    heard live while Sori speaks, and scanned as `sori wake` scans a file; a `canceller`
    made for each."""
    from echo_kit import LEAD_S, echo_gain
    from sori.assemble.wake import build_wake_detector

    detector = build_wake_detector(config)
    lead = np.zeros(int(LEAD_S * RATE))  # the canceller hears silence before Sori speaks
    live = scanned = 0
    for at_s in at_seconds:
        for louder_db in WAKE_ECHO_DB:
            echo = through_room(played)
            echo *= echo_gain(echo, phrase, -louder_db)
            start = int(at_s * RATE)
            mic = echo.astype(np.float64)
            mic[start : start + len(phrase)] += phrase
            reference = np.concatenate([lead, played])
            heard = canceller()(np.concatenate([lead, mic]), reference)
            said = LEAD_S + at_s + WAKE_SAID_S
            found = live_wakes(heard, played, config, detector, LEAD_S)
            live += len(found) == 1 and said - 0.3 < found[0] < said + 0.6
            found = scanned_wakes(heard, config, detector)
            scanned += len(found) == 1 and said - 0.3 < found[0] < said + 0.6
    return live, scanned


def live_wakes(
    heard: np.ndarray, played: np.ndarray, config: Config, detector, lead_s: float
) -> list[float]:
    """Where wake phrases start in `heard`, in seconds, heard by Sori's pipeline while its
    speaker plays `played` from `lead_s` (tests/test_wake.py's `wakes_in`), with its own
    canceller off: the voice detector listens all through an utterance, and the gate
    ignores a phrase that is in what Sori played."""
    from sori.assemble.hearing import build_hearing
    from sori.core.events import WakeDetected
    from sori.hearing.audio.played import PlayedAudio
    from sori.hearing.audio.ring import FrameChunker
    from sori.hearing.pacing import ReplayClock, replay
    from sori.serving.conversation.listening import Conversation

    conversation = Conversation(gated=True, live=True)
    conversation.echo = PlayedAudio()
    conversation.echo.add(int(lead_s * 1e9), to_pcm16(played), RATE)
    clock = ReplayClock()
    hearing = build_hearing(config, None, None, clock, 0, detector, conversation)
    frames = FrameChunker(config.audio.frame_ms).push(to_pcm16(heard))
    events = replay(frames, hearing, clock)
    return [e.start_ns / 1e9 for e in events if isinstance(e, WakeDetected)]


def scanned_wakes(heard: np.ndarray, config: Config, detector) -> list[float]:
    """Where wake phrases start in `heard`, in seconds, as `sori wake` finds them in a
    file: the voice detector's utterances, the phrase at their start."""
    from sori.testing.harness.runner import PcmSource
    from sori.testing.replaying import wake_scan

    source = PcmSource("heard", to_pcm16(heard), config.audio.frame_ms)
    return [r["start_s"] for r in wake_scan(source, config, detector)]


def bench_echo(names: list[str], clips_dir: Path) -> list[dict]:
    from echo_kit import REPLY, sori_says

    base = Config()
    config = dataclasses.replace(
        base,
        audio=dataclasses.replace(base.audio, echo_cancel="off"),
        wake=dataclasses.replace(base.wake, phrases=[WAKE_PHRASE, "소리야"]),
    )
    reply = sori_says(base, REPLY)
    song = music(len(reply) / RATE, np.random.default_rng(5))
    user = opening(clips_dir / WAKE_CLIP)
    trials = len(WAKE_AT_S) * len(WAKE_ECHO_DB)
    rows = []
    print("| canceller | ERLE voice, first 2 s / learned (dB) | ERLE music (dB) "
          "| double talk: user level / user over rest / ERLE after (dB) "
          "| wake over voice: live / scanned | wake over music: live / scanned "
          "| CPU (s per s) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name in names:
        voice, cpu_voice = erle(name, reply)
        tune, cpu_music = erle(name, song)
        talk = double_talk(name, reply, user)
        row = {
            "canceller": name,
            "voice": voice,
            "music": tune,
            "double_talk": talk,
            "wake_over_voice": wake_trials(CANCELLERS[name], reply, user, config),
            "wake_over_music": wake_trials(CANCELLERS[name], song, user, config),
            "wake_trials": trials,
            "cpu_s_per_s": round((cpu_voice + cpu_music) / 2, 4),
        }
        rows.append(row)
        print(
            f"| {name} | {voice['erle_first_2s_db']} / {voice['erle_learned_db']} "
            f"| {tune['erle_first_2s_db']} / {tune['erle_learned_db']} "
            f"| {talk['user_level_db']} / {talk['user_over_rest_db']} / "
            f"{talk['erle_after_talk_db']} "
            f"| {'/'.join(map(str, row['wake_over_voice']))} of {trials} "
            f"| {'/'.join(map(str, row['wake_over_music']))} of {trials} "
            f"| {row['cpu_s_per_s']:.4f} |",
            flush=True,
        )
    return rows


RESTART_WAKE_AT_S = (0.5, 1.0, 1.5)
"""When the wake phrase is said into the first reply after a restart, in seconds."""
RESTART_PARTS = {"first 1 s": (0, 1), "1-2 s": (1, 2), "from 5 s": (5, None)}


def bench_restart(clips_dir: Path) -> dict:
    """The first reply after a restart, its canceller fresh or started from the path kept
    from the reply before (sori.hearing.audio.echo_path): ERLE in the same room, with the
    speaker moved, muted and 10 dB quieter; then the wake phrase said into it."""
    from echo_kit import REPLY, sori_says

    base = Config()
    reply = sori_says(base, REPLY)
    before, first = reply[: len(reply) // 2], reply[len(reply) // 2 :]
    learning, heard_before = EchoCanceller(BLOCK), through_room(before)
    for i in range(0, len(before) - BLOCK + 1, BLOCK):
        learning.process(heard_before[i : i + BLOCK], before[i : i + BLOCK])
    kept = learning.echo_path()
    rooms = {
        "the same room": through_room(first),
        "the speaker moved (25 ms nearer)": through_room(first, seed=11, delay_s=0.015),
        "the speaker muted (room noise only)": np.random.default_rng(5).normal(0, 30, len(first)),
        "the volume 10 dB down": through_room(first) * 10 ** (-10 / 20),
        "the volume 6 dB up": through_room(first) * 10 ** (6 / 20),
        "the volume 10 dB up": through_room(first) * 10 ** (10 / 20),
    }
    starts = {"afresh": None, "kept path": kept}
    print("| the first reply after a restart | canceller | " + " | ".join(
        f"ERLE {part} (dB)" for part in RESTART_PARTS) + " |")  # fmt: skip
    print("|---|---|" + "---|" * len(RESTART_PARTS))
    rows = []
    for room, mic in rooms.items():
        for start, path in starts.items():
            out = sori_canceller(path)(mic, first)
            erles = {}
            for part, (a, b) in RESTART_PARTS.items():
                span = slice(a * RATE, None if b is None else b * RATE)
                erles[part] = round(energy_db(mic[span]) - energy_db(out[span]), 1)
            rows.append({"room": room, "start": start, "erle_db": erles})
            print(f"| {room} | {start} | " + " | ".join(map(str, erles.values())) + " |")
    config = dataclasses.replace(
        base,
        audio=dataclasses.replace(base.audio, echo_cancel="off"),
        wake=dataclasses.replace(base.wake, phrases=[WAKE_PHRASE, "소리야"]),
    )
    user = opening(clips_dir / WAKE_CLIP)
    trials = len(RESTART_WAKE_AT_S) * len(WAKE_ECHO_DB)
    wakes = {}
    for start, path in starts.items():
        found = wake_trials(
            lambda p=path: sori_canceller(p), first, user, config, RESTART_WAKE_AT_S
        )
        wakes[start] = found
        print(f"wake phrase said {RESTART_WAKE_AT_S} s into the first reply, {start}: "
              f"live {found[0]} / scanned {found[1]} of {trials}", flush=True)  # fmt: skip
    return {"erle": rows, "wake": wakes, "wake_trials": trials}


def read_clips(clips_dir: Path, count: int) -> list[tuple[str, str, np.ndarray]]:
    from sori.testing.harness.conditions import clip

    rows = csv.DictReader((clips_dir / "manifest.tsv").open(encoding="utf-8"), delimiter="\t")
    zeroth = [r for r in rows if r["file"].startswith("zeroth_")]
    return [(r["file"], r["transcript"], clip(clips_dir / r["file"])) for r in zeroth[:count]]


DEREVERBERATORS = {
    "WPE": lambda channels: OnlineWpe(channels),
    "spectral": lambda channels: LateReverbSuppressor(channels, AudioConfig().rt60_s),
}
"""The dereverberators of `audio.dereverb`, as it builds them for `channels`; the spectral
one at `audio.rt60_s`'s default in every room, as a device that does not know its room's."""


def dereverbed(signal: np.ndarray, kind: str) -> np.ndarray:
    """One channel through the dereverberator `kind`, realigned (its latency taken off)."""
    dereverb = DEREVERBERATORS[kind](1)
    padded = np.concatenate([signal, np.zeros(dereverb.latency)])[:, None] / 32768.0
    out = np.concatenate(
        [dereverb.process(padded[i : i + BLOCK]) for i in range(0, len(padded), BLOCK)]
    )
    return out[dereverb.latency :, 0] * 32768.0


def bench_dereverb(clips_dir: Path, count: int) -> list[dict]:
    from sori.acting.actions.registry import DEVICE_INTENTS
    from sori.assemble.hearing import hearing_recognizer
    from sori.assemble.understanding import home_from_config, presets_from_config
    from sori.hearing.audio.room import RoomSetup, simulate_room
    from sori.testing.fakes import character_errors
    from sori.testing.harness.runner import PcmSource
    from sori.testing.replaying import replay_source

    config = load_config(str(REPO / "device" / "sori.example.toml"))
    presets = presets_from_config(config.intents, home_from_config(config.home))
    recognizer = hearing_recognizer(config, presets)
    data = read_clips(clips_dir, count)
    conditions: list[tuple[str, float | None, str]] = [("dry", None, "")]
    conditions += [(f"dry + {kind}", None, kind) for kind in DEREVERBERATORS]
    for rt60 in ROOM_RT60_S:
        conditions += [(f"RT60 {rt60} s", rt60, "")]
        conditions += [(f"RT60 {rt60} s + {kind}", rt60, kind) for kind in DEREVERBERATORS]
    print(f"{len(data)} clips, {ROOM_DISTANCE_M} m from one microphone")
    print("| condition | CER | false device actions | pipeline CPU (s per s) |")
    print("|---|---|---|---|")
    rooms: dict[tuple[str, float], np.ndarray] = {}
    rows = []
    for label, rt60, kind in conditions:
        errors = chars = actions = 0
        cpu = audio_s = 0.0
        for name, transcript, speech in data:
            signal = speech
            if rt60 is not None:
                if (name, rt60) not in rooms:
                    setup = RoomSetup(rt60_s=rt60, distance_m=ROOM_DISTANCE_M, mics=1)
                    rooms[name, rt60] = simulate_room(speech, setup).channels[:, 0]
                signal = rooms[name, rt60]
            if kind:
                signal = dereverbed(signal, kind)
            started = time.process_time()
            source = PcmSource(name, to_pcm16(signal), config.audio.frame_ms)
            records = replay_source(source, config, recognizer, presets)
            cpu += time.process_time() - started
            audio_s += len(signal) / RATE
            text = " ".join(r["transcript"] for r in records if r["transcript"])
            wrong, length = character_errors(transcript, text)
            errors, chars = errors + wrong, chars + length
            actions += sum(r["intent"] in DEVICE_INTENTS for r in records)
        row = {
            "condition": label,
            "cer": round(errors / chars, 3),
            "false_device_actions": actions,
            "pipeline_cpu_s_per_s": round(cpu / audio_s, 3),
        }
        rows.append(row)
        print(
            f"| {label} | {row['cer']:.3f} | {actions} | {row['pipeline_cpu_s_per_s']} |",
            flush=True,
        )
    return rows


def bench_cpu(names: list[str]) -> dict:
    from sori.hearing.audio.room import RoomSetup, simulate_room

    rng = np.random.default_rng(0)
    seconds = 10
    figures: dict[str, float] = {}
    reply = music(seconds, rng)
    for name in names:
        _, figures[f"echo {name}"] = erle(name, reply)
    for kind, make in DEREVERBERATORS.items():
        for channels in WPE_CHANNELS:
            dereverb = make(channels)
            signal = rng.standard_normal((seconds * RATE, channels)).astype(np.float32) * 0.01
            started = time.process_time()
            for i in range(0, len(signal), BLOCK):
                dereverb.process(signal[i : i + BLOCK])
            figures[f"{kind} {channels} ch"] = (time.process_time() - started) / seconds
    for rt60 in ROOM_RT60_S:
        started = time.process_time()
        simulate_room(reply, RoomSetup(rt60_s=rt60, mics=4))
        figures[f"room simulation, 4 mics, RT60 {rt60} s"] = (
            time.process_time() - started
        ) / seconds
    print("| stage | CPU (s per s of audio, one core) |")
    print("|---|---|")
    for stage, value in figures.items():
        print(f"| {stage} | {value:.4f} |", flush=True)
    return {k: round(v, 4) for k, v in figures.items()}


LOOPBACK_REFERENCES = (
    ("the board's playback channel", None),
    ("Sori's record, as played", (0.0, 0.0)),
    ("the record, stamped 10 ms late", (10.0, 0.0)),
    ("the record, clocks 100 ppm apart", (0.0, 100.0)),
    ("the record, clocks 500 ppm apart", (0.0, 500.0)),
)
"""Each reference, and for Sori's record (ms its stamps are late, ppm its clock is off)."""


def bench_loopback(clips_dir: Path) -> list[dict]:
    from array_rooms import speaker_echo

    from echo_kit import REPLY, sori_says

    base = Config()
    reply = sori_says(base, REPLY) / 32768
    played_sounds = {
        "voice": reply,
        "music": music(len(reply) / RATE, np.random.default_rng(5)) / 32768,
    }
    rows = []
    print("| reference | ERLE voice, first 2 s / from 5 s (dB) | ERLE music (dB) |")
    print("|---|---|---|")
    for label, record in LOOPBACK_REFERENCES:
        row: dict = {"reference": label}
        for kind, sound in played_sounds.items():
            echo = speaker_echo(sound)
            playback = sound if record is None else np.zeros(len(sound))
            six = np.column_stack([np.zeros(len(sound)), echo, playback]).astype(np.float32)
            played = None if record is None else record_of(sound, *record)
            kept = array_output(six, played, cancel=True)
            echo_only = array_output(six, None, cancel=False)
            row[kind] = [erle_db(echo_only[part], kept[part]) for part in ERLE_PARTS]
        rows.append(row)
        print(f"| {label} | {' / '.join(map(str, row['voice']))} "
              f"| {' / '.join(map(str, row['music']))} |", flush=True)  # fmt: skip
    for what, playing in (("playing", True), ("silent", False)):
        sound = played_sounds["music"]
        six = np.column_stack(
            [np.zeros(len(sound)), speaker_echo(sound), sound if playing else 0 * sound]
        ).astype(np.float32)
        started = time.process_time()
        array_output(six, None, cancel=True)
        cpu = (time.process_time() - started) * RATE / len(sound)
        rows.append({"cpu": f"front end, playback channel {what}", "s_per_s": round(cpu, 4)})
        print(f"CPU of the front end, the board's playback {what}: {cpu:.4f} s per s")
    rows.append({"wake": loopback_wakes(clips_dir, played_sounds["music"])})
    return rows


BOARD_WAKE_AT_S = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0)
"""When the phrase is said over what the board plays, in seconds after it began playing
(the cancellers fresh at 0: the first seconds are their learning)."""
BOARD_PROGRAMME = ("picovoice_leopard_test_ko.wav", "zeroth_104_003_0294.wav")
"""Read clips another program plays through the board (a talk show: words in it)."""


def loopback_wakes(clips_dir: Path, music_played: np.ndarray) -> list[dict]:
    """The wake phrase said from 60° over what another program plays through the board
    (nothing of it in Sori's record), at BOARD_WAKE_AT_S, its echo WAKE_ECHO_DB louder:
    trials in which it woke once, at its place; heard as Sori hears it, and with the
    frames not telling that the speaker sounded (the detector then looks only at each
    utterance's start, as before)."""
    from array_rooms import free_field, speaker_echo

    from sori.assemble.wake import build_wake_detector

    talk = np.concatenate([opening(clips_dir / name, 8.0) for name in BOARD_PROGRAMME]) / 32768
    played_sounds = {"read speech": talk, "music": music_played}
    board = board_config(cancel=True)
    config = dataclasses.replace(board, wake=dataclasses.replace(board.wake, phrases=[WAKE_PHRASE]))
    detector = build_wake_detector(config)
    phrase = opening(clips_dir / WAKE_CLIP, WAKE_SAID_S + 0.45) / 32768
    trials = len(BOARD_WAKE_AT_S) * len(WAKE_ECHO_DB)
    rows = []
    print(f"\nThe wake phrase over what another program plays through the board, {trials} trials")
    print("| played | woken once, at its place | without listening all through |")
    print("|---|---|---|")
    for kind, sound in played_sounds.items():
        sound = np.resize(sound, int((max(BOARD_WAKE_AT_S) + 3) * RATE)).astype(np.float32)
        echo = speaker_echo(sound)
        found = {True: 0, False: 0}
        for at_s in BOARD_WAKE_AT_S:
            talker = np.zeros(len(sound), np.float32)
            talker[int(at_s * RATE) : int(at_s * RATE) + len(phrase)] = phrase
            microphones = free_field(talker, 60.0, board.audio.array.geometry)
            level = voiced_rms(microphones) / voiced_rms(echo)
            said = at_s + WAKE_SAID_S
            for louder_db in WAKE_ECHO_DB:
                scaled = echo * level * 10 ** (louder_db / 20)
                six = np.column_stack([np.zeros(len(sound)), microphones + scaled, sound])
                six = (0.5 * six / np.abs(six).max()).astype(np.float32)
                for through in found:
                    wakes = board_wakes(six, config, detector, through)
                    found[through] += len(wakes) == 1 and said - 0.3 < wakes[0] < said + 0.6
        rows.append({"played": kind, "woken": found[True], "as_before": found[False],
                     "trials": trials})  # fmt: skip
        print(f"| {kind} | {found[True]} of {trials} | {found[False]} of {trials} |", flush=True)
    return rows


def board_wakes(six: np.ndarray, config: Config, detector, listening_through: bool) -> list[float]:  # noqa: ANN001
    """Where wake phrases start in the USB array's `six` channels, in seconds, heard live
    with the gate closed; without `listening_through`, the frames do not say that the
    speaker sounded."""
    from sori.assemble.hearing import build_array, build_hearing, front_end
    from sori.core.events import WakeDetected
    from sori.hearing.audio.sources import ChannelChunker
    from sori.hearing.pacing import ReplayClock, replay
    from sori.serving.conversation.listening import Conversation

    array = build_array(config)
    frames = front_end(config, ChannelChunker(20, six.shape[1]).push(six), array=array)
    if not listening_through:
        frames = (dataclasses.replace(frame, echo_energy=0.0) for frame in frames)
    clock = ReplayClock()
    conversation = Conversation(gated=True, live=True)
    hearing = build_hearing(config, None, None, clock, 0, detector, conversation, array)
    events = replay(frames, hearing, clock)
    return [e.start_ns / 1e9 for e in events if isinstance(e, WakeDetected)]


ERLE_PARTS = (slice(0, 2 * RATE), slice(5 * RATE, None))


def erle_db(before: np.ndarray, after: np.ndarray) -> float:
    return round(float(10 * np.log10(np.mean(before**2) / max(np.mean(after**2), 1e-20))), 1)


def record_of(sound: np.ndarray, late_ms: float, ppm: float):  # noqa: ANN201
    """Sori's record of playing `sound` from time 0: stamped `late_ms` late, on a clock
    `ppm` off the microphones' (it says the sound was the speaker's a little stretched)."""
    from sori.hearing.audio.played import PlayedAudio

    played = PlayedAudio()
    stretched = np.interp(np.arange(len(sound)) * (1 + ppm * 1e-6), np.arange(len(sound)), sound)
    pcm = (np.clip(stretched, -1, 1) * 32767).astype("<i2").tobytes()
    played.add(int(late_ms * 1e6), pcm, RATE)
    return played


def array_output(six: np.ndarray, played, cancel: bool) -> np.ndarray:  # noqa: ANN001
    """The USB array's six channels through Sori's front end, as mono float: the echo
    cancelled from its playback channel, or from `played` when given (the channel left
    out, as on a board that has none)."""
    from sori.assemble.hearing import build_array, front_end
    from sori.hearing.audio.format import s16_to_float
    from sori.hearing.audio.sources import ChannelChunker

    config = board_config(cancel, played is not None)
    frames = ChannelChunker(BLOCK * 1000 // RATE, six.shape[1]).push(six)
    heard = front_end(config, frames, played, array=build_array(config))
    return np.concatenate([s16_to_float(frame.pcm) for frame in heard])


def board_config(cancel: bool, no_loopback: bool = False) -> Config:
    """The USB array's six channels, denoising off; its playback channel left out
    (`no_loopback`), as on a board that has none."""
    base = Config()
    audio = dataclasses.replace(
        base.audio, channels=6, denoise="off", echo_cancel="auto" if cancel else "off",
        array=dataclasses.replace(
            base.audio.array, geometry="respeaker-usb-4mic",
            mic_channels=[1, 2, 3, 4] if no_loopback else [],
        ),
    )  # fmt: skip
    return dataclasses.replace(base, audio=audio)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--clips-dir", default=str(REPO.parent / "shared" / "audio" / "ko-read"), type=Path
    )
    parser.add_argument(
        "--only",
        choices=("echo", "restart", "dereverb", "cpu", "loopback"),
        help="one part only",
    )
    parser.add_argument("--clips", type=int, default=4, help="clips for dereverb (default 4)")
    parser.add_argument(
        "--cancellers", default=",".join(CANCELLERS), help="of " + ", ".join(CANCELLERS)
    )
    parser.add_argument("--json", metavar="F", help="also write the figures here")
    args = parser.parse_args()
    for name in args.cancellers.split(","):
        if name not in CANCELLERS:
            parser.error(f"--cancellers: {name!r} is not one of {', '.join(CANCELLERS)}")
    names = installed(args.cancellers.split(","))
    results: dict = {}
    if args.only in (None, "echo"):
        results["echo"] = bench_echo(names, args.clips_dir)
    if args.only in (None, "restart"):
        results["restart"] = bench_restart(args.clips_dir)
    if args.only in (None, "dereverb"):
        results["dereverb"] = bench_dereverb(args.clips_dir, args.clips)
    if args.only in (None, "cpu"):
        results["cpu"] = bench_cpu(names)
    if args.only in (None, "loopback"):
        results["loopback"] = bench_loopback(args.clips_dir)
    results["load_average"] = os.getloadavg()
    print("load average (1, 5, 15 min):", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, ensure_ascii=False), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
