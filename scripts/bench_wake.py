"""Wake-phrase benchmark: false wakes per hour, misses, CPU real-time factor, latency.

    PYTHONPATH=device python scripts/bench_wake.py [--minutes 30] [--json]

- False wakes: at least `--minutes` of audio with no wake phrase, made from the shared
  read-speech clips (../shared/audio/ko-read), each repeat with another noise (white, pink,
  brown, hum, babble of the other clips), SNR, gain and offset (cut in mid-sentence, so other
  words open utterances), with pauses between; generated, never stored. Heard through the
  daemon's path (Silero VAD, then the `[wake]` backend on each utterance) with the default
  phrase 소리야 and two others.
- Misses: each clip's opening word as the wake phrase (one detector for all of them), each
  clip in several noises and gains; a miss is a clip whose own phrase is not detected.
  Each clip is also heard once as recorded (`miss_rate_clean`, apart from the noisy
  trials).
  The phrase backend's decision was calibrated on every other of these clips (sorted by
  name: the 1st, 3rd, ...) and on non-wake audio of another seed (7): `miss_rate_held_out`
  counts only the other clips, and the default `--seed` (2026) audio was not used.
- `--denoise off|auto` sets `wake.denoise` for the run (the same generated audio for both
  with the same `--seed`): "auto" hears noisy utterances' starts through DeepFilterNet3.
- CPU real-time factor of detection (VAD + wake detector) on one core, over the non-wake
  audio: CPU time / audio time (and the detector's own share, in wall time, which a busy
  machine inflates).
- Wake-to-listening latency: from the end of the phrase to its `WakeDetected` event (when
  the daemon starts the earcon), on the replay clock, which reports times as a live
  microphone would see them.
- `--echo`, instead of the above: the wake phrase while Sori speaks (the microphone hears
  the reply). Sori's voice (the config's, espeak-ng by default) says each clip's
  transcript and its fixed replies, heard live with what it played: self wakes per hour of
  Sori speaking, with the check in what Sori said (`heard_in`) and without it (Sori
  "played" silence: no check, nothing to cancel). Then each clip's opening word said over
  a long reply at four points and three levels of the reply below the speaker: the share of
  phrases found (a barge-in), wrong detections, how long after the phrase's end the reply
  ducks (`WakeHeard`) and stops (`WakeDetected`) on the replay clock, and the CPU
  real-time factor while Sori speaks. `--echo-room RT60` hears the speaker through a room
  instead of dry; `--echo-cancel off|auto` sets `audio.echo_cancel`: one filter hears the
  whole run, as the daemon's hears its microphone (it learns the room on the first of
  Sori's sentences).
- `--offsets`, instead of the above: each clip as recorded, after 0 to 32 ms of silence
  (`OFFSETS_MS`), so that its speech falls elsewhere on the 20 ms frames of the voice
  detector and the 30 ms frames of the spotter (a microphone array's beam delays the
  audio by 32 ms): the phrase's score at each offset (null: missed), the misses, and how
  far the score moves.
- `--nearer`, instead of the above: what several speakers compare to choose which one
  answers (`[wake] arbitrate`). Each clip's opening word over one room noise (pink, or
  babble of other clips; 25 and 15 dB below the nearest speaker's hearing), heard by
  speakers `FAINTER_DB` fainter over the same noise: each one's `snr_db` (null: missed),
  how much lower a fainter hearing reads, the share of pairs that both woke in which the
  nearer speaker ranks first, and how far apart in time the speakers that woke reported
  the phrase (on the replay clock); how many speakers, of those that woke and of those
  that did not, would have passed on the first rival's claim at once (`passes_at`:
  hearing nothing then, or no longer listening for the phrase, they leave it to the
  others). Then each row's four speakers arbitrate as `[wake] arbitrate` does
  (`rival_that_answers`, every one online, each claim arriving `NET_MS` later, a speaker
  that did not wake passing when its own hearing says), for several windows: how often
  the nearest that woke answers alone, another alone, two at once, or none. Then again
  in `MOVES` replays of each row, each speaker's report moved by up to `MOVED_MS` either
  way and each claim 1 to `MOVED_NET_MS` (`--net-ms`) in transit: with the rules as
  built, as if no speaker broke a silence (`breaks_the_silence`: the first to hear the
  phrase answers when every speaker would yield to another), and as if none passed late
  (`Arbiter.pass_unheard`), and how long the one that answered waited.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import sys
import time
import wave
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from sori.assemble.hearing import build_hearing
from sori.assemble.wake import build_wake_detector
from sori.core.clock import FakeClock
from sori.core.config import Config
from sori.core.config.sections import VoskConfig
from sori.core.events import WakeDetected, WakeHeard
from sori.hearing.audio.augment import (
    at_dbfs,
    babble,
    gain_db,
    make_noise,
    mix_at_snr,
    reverberate,
    room_impulse,
    to_pcm16,
)
from sori.hearing.audio.echo_cancel import EchoCanceller, cancel_echo
from sori.hearing.audio.format import RATE_HZ, AudioFrame
from sori.hearing.pacing import ReplayClock, replay
from sori.hearing.wake_gate import NeverOpen
from sori.serving.conversation.arbitration import (
    Arbiter,
    WakeClaim,
    breaks_the_silence,
    heard_first,
    rival_that_answers,
    rivals_decided_ns,
    yielding_to,
    yields_after_ns,
)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "audio" / "ko-read"
FALSE_PHRASES = ["소리야", "빅스비", "헤이 소리"]
NOISES = ("white", "pink", "brown", "hum", "babble")
OFFSETS_MS = (0, 4, 8, 12, 16, 20, 24, 28, 32)
FAINTER_DB = (0, 3, 6, 10)
"""How much fainter than the nearest each speaker of `--nearer` hears the talker."""
WINDOWS_MS = (150, 250, 400)
"""The arbitration windows `--nearer` plays each row's speakers through."""
MOVED_MS = 200
"""How far either way `--nearer` moves each speaker's report of a phrase, in `MOVES`
replays of each row: who answers turns on the order and gaps of the reports, which the
replay clock gives only one of (speakers report one phrase up to 1.35 s apart)."""
MOVES = 100
NET_MS = 5
"""How long each claim takes to reach the other speakers, in `--nearer`'s plays."""
MOVED_NET_MS = 15
"""... and in its moved replays: at random from 1 ms to this (`--net-ms`), for each pair
of speakers (a home broker takes milliseconds; the rules hold for up to an eighth of the
window)."""


def load_clips() -> list[tuple[str, str, np.ndarray]]:
    with open(SHARED / "manifest.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    clips = []
    for row in rows:
        with wave.open(str(SHARED / row["file"])) as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), np.int16)
        clips.append((row["file"], row["transcript"], pcm.astype(np.float32)))
    return clips


def noisy(speech: np.ndarray, kind: str, snr_db: float, rng, others) -> np.ndarray:
    if kind == "babble":
        noise = babble([o for o in others], len(speech), rng)
    else:
        noise = make_noise(kind, len(speech), rng)
    return mix_at_snr(speech, noise, snr_db)


def frames_of(audio: np.ndarray, frame_ms: int):
    pcm = to_pcm16(audio)
    step = RATE_HZ * frame_ms // 1000 * 2
    for i in range(0, len(pcm) - step + 1, step):
        yield AudioFrame(pcm[i : i + step], i // 2 * 1_000_000_000 // RATE_HZ)


def hear(config: Config, detector, audio: np.ndarray) -> tuple[list[WakeDetected], float, int]:
    """(detections, CPU seconds, wake busy ns) of `audio` through VAD and the detector."""
    events, cpu_s, busy_ns = hear_events(config, detector, audio)
    return [e for e in events if isinstance(e, WakeDetected)], cpu_s, busy_ns


def hear_events(config: Config, detector, audio: np.ndarray) -> tuple[list, float, int]:
    """(every hearing event, CPU seconds, wake busy ns) of `audio` through VAD and the
    detector."""
    clock = ReplayClock()
    hearing = build_hearing(config, None, None, clock, 0, detector, NeverOpen())
    cpu = time.process_time()
    events = list(replay(frames_of(audio, config.audio.frame_ms), hearing, clock))
    return events, time.process_time() - cpu, hearing.wake_busy_ns


def passes_at(events: list, phrase: str, claim_ns: int, window_ms: int) -> int:
    """When a speaker that heard `events` passes on another's claim of `phrase` that
    reaches it at `claim_ns`, by the arbiter's own rules fed the events on a clock that
    follows them: at once (`Arbiter.heard`: it hears nothing, or its wake detector no
    longer listens), once its detector stops listening (`Arbiter.hearing`), or at the
    latest 3/4 of `window_ms` later (`Arbiter.pass_unheard`). For a speaker that did not
    hear the phrase by then."""
    clock, passed = FakeClock(0), []
    arbiter = Arbiter("here", "run-here", window_ms, lambda m: passed.append(m) or True, clock)
    late_ns = claim_ns + yields_after_ns(window_ms * 1_000_000)
    claimed = False
    for event in events:
        if not claimed and event.t_ns > claim_ns:
            clock.advance_ns(max(0, claim_ns - clock.now_ns()))
            arbiter.heard(WakeClaim("there", "run-there", phrase, 0.0, 0.0))
            claimed = True
        if passed or event.t_ns >= late_ns:
            break
        clock.advance_ns(max(0, event.t_ns - clock.now_ns()))
        arbiter.hearing(event)
    if not claimed:
        clock.advance_ns(max(0, claim_ns - clock.now_ns()))
        arbiter.heard(WakeClaim("there", "run-there", phrase, 0.0, 0.0))
    return clock.now_ns() if passed else late_ns


def non_wake_stream(clips, minutes: float, rng) -> list[np.ndarray]:
    """Chunks (about a minute each) of varied clip audio with pauses, `minutes` in all."""
    chunks, chunk, total = [], [], 0.0
    voices = [c[2] for c in clips]
    while total < minutes * 60:
        name, _, speech = clips[rng.integers(len(clips))]
        offset = int(rng.uniform(0, 0.6) * len(speech)) if rng.random() < 0.6 else 0
        piece = speech[offset:]
        kind = NOISES[rng.integers(len(NOISES))]
        piece = noisy(piece, kind, float(rng.uniform(5, 30)), rng, voices[:6])
        piece = gain_db(piece, float(rng.uniform(-12, 6)))
        pause = at_dbfs(make_noise("pink", int(RATE_HZ * rng.uniform(0.6, 2.5)), rng), -60)
        chunk += [piece, pause]
        total += (len(piece) + len(pause)) / RATE_HZ
        if sum(len(p) for p in chunk) > 60 * RATE_HZ:
            chunks.append(np.concatenate(chunk))
            chunk = []
    if chunk:
        chunks.append(np.concatenate(chunk))
    return chunks


REPLY = (
    "거실 조명을 켰어요. 오늘 서울은 대체로 맑고 낮 최고 기온은 십오 도로 어제보다 조금 "
    "따뜻하겠습니다. 저녁에는 바람이 강하게 불 수 있으니 외출하실 때 겉옷을 챙기세요."
)
ECHO_LEAD_S = 0.5
"""Silence before Sori's voice in the echo trials."""
BELOW_DB = (20, 10, 0)
"""How much quieter than the speaker the microphone hears the reply, in dB."""
ECHO_DELAY_MS = 40
"""How late the microphone hears the speaker through a room (`--echo-room`): the output's
and input's buffers."""
SAID_AT_S = (2.0, 3.0, 4.1, 5.5)
"""Where the phrase is said in the reply, in seconds."""


def hear_live(config: Config, detector, audio: np.ndarray, played: np.ndarray, canceller=None):
    """(wake events, CPU seconds, the `WakeHeard` before them) of `audio` heard live while
    the speaker played `played` from `ECHO_LEAD_S`, through `canceller`
    (sori.hearing.audio.echo_cancel) when `audio.echo_cancel` is "auto"."""
    from sori.hearing.audio.played import PlayedAudio
    from sori.serving.conversation.listening import Conversation

    conversation = Conversation(gated=True, live=True)
    conversation.echo = PlayedAudio()
    conversation.echo.add(int(ECHO_LEAD_S * 1e9), to_pcm16(played), RATE_HZ)
    clock = ReplayClock()
    hearing = build_hearing(config, None, None, clock, 0, detector, conversation)
    cpu = time.process_time()
    frames = frames_of(audio, config.audio.frame_ms)
    if config.audio.echo_cancel == "auto":
        frames = cancel_echo(frames, conversation.echo, 0, canceller)
    events = list(replay(frames, hearing, clock))
    found = [e for e in events if isinstance(e, WakeDetected)]
    return found, time.process_time() - cpu, [e for e in events if isinstance(e, WakeHeard)]


def echo_path(rt60_s: float, rng):
    """How the microphone hears the speaker: dry (`rt60_s` 0), or `ECHO_DELAY_MS` late
    through a room of that reverberation, the direct sound 6 dB over the tail (a speaker
    near the microphone)."""
    if not rt60_s:
        return lambda x: x
    impulse = room_impulse(rt60_s, rng, drr_db=6.0)
    delay = np.zeros(RATE_HZ * ECHO_DELAY_MS // 1000, np.float32)
    return lambda x: reverberate(np.concatenate([delay, x]), impulse)[: len(x)]


def echo_trials(base: Config, clips, openers: dict[str, str], rt60_s: float, rng) -> dict:
    """The `--echo` figures (see the module docstring)."""
    from sori.assemble.speaking import REPLIES, build_voice
    from sori.hearing.audio.augment import said_over
    from sori.hearing.audio.format import to_pipeline

    voice = build_voice(base)
    heard = echo_path(rt60_s, rng)
    # one filter for the whole run, as the daemon's for its microphone: the room stays put
    canceller = EchoCanceller(RATE_HZ * base.audio.frame_ms // 1000)

    def says(text: str) -> np.ndarray:
        pcm = np.frombuffer(b"".join(voice.synthesize(text)), np.int16) / 32768
        return np.frombuffer(to_pipeline(pcm, voice.rate_hz), np.int16).astype(np.float32)

    config = replace(base, wake=replace(base.wake, phrases=FALSE_PHRASES))
    detector = build_wake_detector(config)
    lead = np.zeros(int(ECHO_LEAD_S * RATE_HZ), np.float32)
    spoken_s, own, unchecked = 0.0, 0, 0
    texts = [t for _, t, _ in clips] + [r.replace("{n}", "두") for r in REPLIES["ko"].values()]
    for text in texts:
        said = says(text)
        audio = np.concatenate([lead, heard(said), lead])
        spoken_s += len(said) / RATE_HZ
        own += len(hear_live(config, detector, audio, said, canceller)[0])
        unchecked += len(hear_live(config, detector, audio, np.zeros_like(said))[0])

    config = replace(base, wake=replace(base.wake, phrases=sorted(set(openers.values()))))
    detector = build_wake_detector(config)
    reply = says(REPLY)
    found = {db: 0 for db in BELOW_DB}
    trials = wrong = 0
    audio_s = cpu_s = 0.0
    ducked_ms: list[float] = []
    stopped_ms: list[float] = []
    for name, _, speech in clips:
        if name not in openers:
            continue
        for at_s in SAID_AT_S:
            for db in BELOW_DB:
                opening = speech[: int(2.5 * RATE_HZ)]
                audio = np.concatenate([lead, said_over(heard(reply), opening, at_s, db)])
                events, cpu, ducks = hear_live(config, detector, audio, reply, canceller)
                audio_s += len(audio) / RATE_HZ
                cpu_s += cpu
                trials += db == BELOW_DB[0]
                detected = [e for e in events if e.phrase == openers[name]]
                found[db] += bool(detected)
                wrong += len(events) - len(detected)
                if detected:  # from the phrase's end: the reply ducked, then stopped
                    woke = detected[0]
                    same = (woke.utterance_id, woke.phrase)
                    ducked = [h for h in ducks if (h.utterance_id, h.phrase) == same]
                    ducked_ms += [(h.t_ns - woke.end_ns) / 1e6 for h in ducked[-1:]]
                    stopped_ms.append((woke.t_ns - woke.end_ns) / 1e6)
    return {
        "echo_cancel": base.audio.echo_cancel,
        "echo_rt60_s": rt60_s,
        "sori_speaking_minutes": round(spoken_s / 60, 1),
        "self_wakes_per_hour_of_speech": round(own / spoken_s * 3600, 1),
        "self_wakes_per_hour_without_own_voice_check": round(unchecked / spoken_s * 3600, 1),
        "barge_in_trials_per_level": trials,
        "barge_in_found_by_reply_below_speaker_db": {
            str(db): round(n / trials, 3) for db, n in found.items()
        },
        "barge_in_wrong_phrase_detections": wrong,
        "barge_in_ducked_ms_p50_p90": percentiles(ducked_ms),
        "barge_in_stopped_ms_p50_p90": percentiles(stopped_ms),
        "rtf_while_sori_speaks_one_core": round(cpu_s / audio_s, 4),
    }


def percentiles(ms: list[float]) -> list[float] | None:
    """The median and 90th percentile of `ms`, or None when empty."""
    return [round(float(np.percentile(ms, q)), 1) for q in (50, 90)] if ms else None


def opening_words(clips, vosk: VoskConfig) -> dict[str, str]:
    """Each clip's first word, when it is a word of two syllables or more the model knows
    (one syllable is no name to call). `vosk` (`[stt.vosk]`) names the model the detectors
    share, so it loads once."""
    from sori.hearing.stt.vosk import load_model

    model = load_model(vosk.model or None, vosk.chunk_ms)
    openers = {}
    for name, transcript, _ in clips:
        first = transcript.split()[0]
        if len(first) >= 2 and model.vosk_model_find_word(first) >= 0:
            openers[name] = first
    return openers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="non-wake audio, minutes")
    parser.add_argument("--variants", type=int, default=6, help="noisy copies per clip (misses)")
    parser.add_argument(
        "--sweep", action="store_true",
        help="decide nothing (threshold -100): report false wakes and misses per threshold",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=2026, help="seed of the generated audio")
    parser.add_argument(
        "--denoise", choices=("off", "auto"), default=None,
        help="wake.denoise for this run (default: the config's)",
    )  # fmt: skip
    parser.add_argument(
        "--echo", action="store_true",
        help="only the wake phrase while Sori speaks: self wakes and barge-ins",
    )  # fmt: skip
    parser.add_argument(
        "--echo-room", type=float, default=0.0, metavar="RT60",
        help="with --echo: the speaker heard through a room of this reverberation, 40 ms "
        "late (default 0: dry, on time)",
    )  # fmt: skip
    parser.add_argument(
        "--echo-cancel", choices=("off", "auto"), default=None,
        help="with --echo: audio.echo_cancel for this run (default: the config's)",
    )  # fmt: skip
    parser.add_argument(
        "--offsets", action="store_true",
        help="only the clips as recorded, each after 0-32 ms of silence: the score's spread",
    )  # fmt: skip
    parser.add_argument(
        "--nearer", action="store_true",
        help="only the same phrase heard fainter over the same noise: snr_db, and whether "
        "the nearer speaker ranks first",
    )  # fmt: skip
    parser.add_argument(
        "--net-ms", type=float, default=MOVED_NET_MS,
        help="with --nearer: the most a claim takes to travel in the moved replays "
        f"(default {MOVED_NET_MS}; the rules hold to an eighth of the window)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    rng = np.random.default_rng(args.seed)
    clips = load_clips()
    base = Config()
    if args.denoise is not None:
        base = replace(base, wake=replace(base.wake, denoise=args.denoise))
    if args.echo_cancel is not None:
        base = replace(base, audio=replace(base.audio, echo_cancel=args.echo_cancel))
    if args.echo:
        trials = echo_trials(base, clips, opening_words(clips, base.stt.vosk), args.echo_room, rng)
        return report(trials, args.json)
    if args.offsets:
        return report(offset_trials(base, clips, opening_words(clips, base.stt.vosk)), args.json)
    if args.nearer:
        openers = opening_words(clips, base.stt.vosk)
        return report(nearer_trials(base, clips, openers, rng, args.net_ms), args.json)
    if args.sweep:
        base = replace(base, wake=replace(base.wake, threshold=-100.0))
    false_scores: list[float] = []
    own_scores: list[float] = []  # per trial: its own phrase's best score, or -inf

    # false wakes
    config = replace(base, wake=replace(base.wake, phrases=FALSE_PHRASES))
    detector = build_wake_detector(config)
    audio_s = cpu_s = busy_ns = 0.0
    false: dict[str, int] = {p: 0 for p in FALSE_PHRASES}
    for chunk in non_wake_stream(clips, args.minutes, rng):
        found, cpu, busy = hear(config, detector, chunk)
        audio_s += len(chunk) / RATE_HZ
        cpu_s += cpu
        busy_ns += busy
        for event in found:
            false[event.phrase] += 1
            false_scores.append(event.score)
    hours = audio_s / 3600

    # misses and latency
    openers = opening_words(clips, base.stt.vosk)
    config = replace(base, wake=replace(base.wake, phrases=sorted(set(openers.values()))))
    detector = build_wake_detector(config)
    voices = [c[2] for c in clips]
    calibration = sorted(openers)[::2]
    trials = misses = wrong = held_trials = held_misses = 0
    missed: list[str] = []
    missed_clean: list[str] = []
    latencies = []
    for name, _, speech in clips:
        if name not in openers:
            continue
        found, _, _ = hear(config, detector, speech)
        if not any(e.phrase == openers[name] for e in found):
            missed_clean.append(openers[name])
        for v in range(args.variants):
            kind = NOISES[v % len(NOISES)]
            audio = noisy(speech, kind, float(rng.uniform(15, 30)), rng, voices[:6])
            audio = gain_db(audio, float(rng.uniform(-10, 4)))
            found, _, _ = hear(config, detector, audio)
            trials += 1
            held_trials += name not in calibration
            own = [e for e in found if e.phrase == openers[name]]
            own_scores.append(max((e.score for e in own), default=float("-inf")))
            wrong += len(found) - len(own)
            if not own:
                misses += 1
                held_misses += name not in calibration
                missed.append(f"{openers[name]} ({kind})")
            else:
                latencies.append((own[0].t_ns - own[0].end_ns) / 1e6)
    latency_p50, latency_p90 = percentiles(latencies) or [None, None]
    result = {
        "wake_denoise": base.wake.denoise,
        "non_wake_minutes": round(audio_s / 60, 1),
        "false_wakes_per_hour": {p: round(n / hours, 2) for p, n in false.items()},
        "false_wakes": false,
        "rtf_vad_and_wake_one_core": round(cpu_s / audio_s, 4),
        "wake_detector_wall_s_per_audio_s": round(busy_ns / 1e9 / audio_s, 4),
        "miss_phrases": sorted(set(openers.values())),
        "miss_trials": trials,
        "misses": misses,
        "miss_rate": round(misses / trials, 3) if trials else None,
        "miss_rate_held_out": round(held_misses / held_trials, 3) if held_trials else None,
        "missed": missed,
        "miss_rate_clean": round(len(missed_clean) / len(openers), 3) if openers else None,
        "missed_clean": missed_clean,
        "wrong_phrase_detections": wrong,
        "wake_to_listening_ms_p50": latency_p50,
        "wake_to_listening_ms_p90": latency_p90,
    }
    if args.sweep:
        result["sweep"] = {
            t: {
                "false_wakes_per_hour": round(sum(x >= t for x in false_scores) / hours, 2),
                "miss_rate": round(sum(x < t for x in own_scores) / max(1, trials), 3),
            }
            for t in (-10.0, -6.0, -4.0, -2.0, 0.0, 2.0, 4.0)
        }
    return report(result, args.json)


def offset_trials(base: Config, clips, openers: dict[str, str]) -> dict:
    """Each clip as recorded, after each of `OFFSETS_MS` of silence (see the module)."""
    config = replace(base, wake=replace(base.wake, phrases=sorted(set(openers.values()))))
    detector = build_wake_detector(config)
    scores: dict[str, list[float | None]] = {}
    for name, _, speech in clips:
        if name not in openers:
            continue
        row: list[float | None] = []
        for offset_ms in OFFSETS_MS:
            silence = np.zeros(RATE_HZ * offset_ms // 1000, np.float32)
            found, _, _ = hear(config, detector, np.concatenate([silence, speech]))
            own = [e.score for e in found if e.phrase == openers[name]]
            row.append(round(max(own), 1) if own else None)
        scores[openers[name]] = row
    heard = [[s for s in row if s is not None] for row in scores.values()]
    spreads = [max(row) - min(row) for row in heard if row]
    return {
        "offsets_ms": list(OFFSETS_MS),
        "scores": scores,
        "misses": sum(s is None for row in scores.values() for s in row),
        "trials": len(scores) * len(OFFSETS_MS),
        "score_spread_median": round(float(np.median(spreads)), 1),
        "score_spread_max": round(max(spreads), 1),
        "lowest_score": min(min(row) for row in heard if row),
    }


def nearer_trials(
    base: Config, clips, openers: dict[str, str], rng, net_ms: float = MOVED_NET_MS
) -> dict:
    """Each clip's phrase heard `FAINTER_DB` fainter over one noise (see the module); in
    the moved replays, each claim 1 to `net_ms` ms in transit."""
    config = replace(base, wake=replace(base.wake, phrases=sorted(set(openers.values()))))
    detector = build_wake_detector(config)
    voices = [c[2] for c in clips]
    heard: dict[str, list[float | None]] = {}
    spreads_ms: list[float] = []  # per row: the last speaker's wake event after the first's
    events: list[list[WakeDetected | None]] = []  # per row, per speaker: its wake event
    passers: list[Passes] = []  # per row: when a speaker that did not wake passes
    passing: dict[str, list[bool]] = {"woke": [], "missed": []}  # see `passes_at`
    for name, _, speech in clips:
        if name not in openers:
            continue
        for kind, snr_db in (("pink", 25), ("babble", 25), ("pink", 15), ("babble", 15)):
            noise = noisy(speech, kind, snr_db, rng, voices[:6]) - speech
            woke: list[WakeDetected | None] = []
            heard_events = []  # per speaker: everything it heard
            for fainter_db in FAINTER_DB:
                audio = speech * 10 ** (-fainter_db / 20) + noise
                heard_events.append(hear_events(config, detector, audio)[0])
                own = [
                    e
                    for e in heard_events[-1]
                    if isinstance(e, WakeDetected) and e.phrase == openers[name]
                ]
                woke.append(own[0] if own else None)
            for i, seen in enumerate(heard_events):  # when the first rival's claim comes
                rivals_ns = [e.t_ns for j, e in enumerate(woke) if e and j != i]
                if rivals_ns:
                    first_ns = min(rivals_ns) + NET_MS * 1_000_000
                    passing["woke" if woke[i] else "missed"].append(
                        passes_at(seen, openers[name], first_ns, 250) == first_ns
                    )
            heard[f"{openers[name]} {kind} {snr_db}"] = [
                round(e.snr_db, 1) if e else None for e in woke
            ]
            events.append(woke)
            passers.append(row_passes(heard_events, openers[name]))
            reported_ns = [e.t_ns for e in woke if e]
            if len(reported_ns) > 1:
                spreads_ms.append((max(reported_ns) - min(reported_ns)) / 1e6)
    by_gap: dict[int, list[int]] = {}  # dB apart → [pairs ranked right, pairs both woke]
    drops: dict[int, list[float]] = {db: [] for db in FAINTER_DB[1:]}
    for row in heard.values():
        for (i, nearer), (j, farther) in itertools.combinations(enumerate(row), 2):
            if nearer is not None and farther is not None:
                counts = by_gap.setdefault(FAINTER_DB[j] - FAINTER_DB[i], [0, 0])
                counts[0] += nearer > farther
                counts[1] += 1
        for db, value in zip(FAINTER_DB[1:], row[1:], strict=True):
            if row[0] is not None and value is not None:
                drops[db].append(row[0] - value)
    woke_rows = [(woke, passes) for woke, passes in zip(events, passers, strict=True) if any(woke)]
    replays = [
        (
            [
                replace(e, t_ns=e.t_ns + int(rng.uniform(-MOVED_MS, MOVED_MS) * 1e6)) if e else None
                for e in woke
            ],
            rng.uniform(1, net_ms, size=(len(woke), len(woke))),
            passes,
        )
        for woke, passes in woke_rows
        for _ in range(MOVES)
    ]
    moved: dict[int, dict[str, dict]] = {}  # window → rules → who answered, and its wait
    for window_ms in WINDOWS_MS:
        for rules in ("as built", "no silence broken", "no late pass"):
            outcomes = [
                arbitrated(
                    woke,
                    window_ms,
                    rules != "no silence broken",
                    net,
                    rules != "no late pass",
                    passes,
                )  # fmt: skip
                for woke, net, passes in replays
            ]
            waits = [ms for _, ms in outcomes if ms is not None]
            moved.setdefault(window_ms, {})[rules] = {
                **Counter(outcome for outcome, _ in outcomes),
                "waited_ms_p50_p90_max": [
                    round(float(np.percentile(waits, q))) for q in (50, 90, 100)
                ],
            }
    right = sum(r for r, _ in by_gap.values())
    pairs = sum(n for _, n in by_gap.values())
    return {
        "fainter_db": list(FAINTER_DB),
        "snr_db": heard,
        "misses": sum(v is None for row in heard.values() for v in row),
        "hearings": len(heard) * len(FAINTER_DB),
        "pairs_both_woke": pairs,
        "nearer_ranked_first": round(right / pairs, 3) if pairs else None,
        "nearer_ranked_first_by_db_apart": dict(sorted(by_gap.items())),
        "snr_drop_db_median": {db: round(float(np.median(d)), 1) for db, d in drops.items() if d},
        "snr_drop_db_range": {
            db: [round(min(d), 1), round(max(d), 1)] for db, d in drops.items() if d
        },
        "wake_events_apart_ms_p50_p90_max": [
            round(float(np.percentile(spreads_ms, q)), 1) for q in (50, 90, 100)
        ]
        if spreads_ms
        else None,
        "passed_on_the_first_rivals_claim": {
            heard: f"{sum(passed)} of {len(passed)}" for heard, passed in passing.items()
        },
        "answered_by_window_ms": {
            window_ms: dict(
                Counter(arbitrated(woke, window_ms, passes=passes)[0] for woke, passes in woke_rows)
            )
            for window_ms in WINDOWS_MS
        },
        "moved_up_to_ms": MOVED_MS,
        "moved_net_ms": [1, net_ms],
        "answered_moved_by_window_ms": moved,
    }


Passes = Callable[[int, int, int], int]
"""When speaker j of a row, which did not wake, passes on a claim that reaches it at a
clock time, with a window of so many ms (`passes_at`)."""


def row_passes(heard_events: list[list], phrase: str) -> Passes:
    """`Passes` for a row whose speakers heard `heard_events` (each its own)."""
    return lambda j, claim_ns, window_ms: passes_at(heard_events[j], phrase, claim_ns, window_ms)


def arbitrated(
    woke: list[WakeDetected | None],
    window_ms: int,
    break_silence: bool = True,
    net_ms: np.ndarray | None = None,
    pass_late: bool = True,
    passes: Passes | None = None,
) -> tuple[str, float | None]:
    """Who answers when the speakers of `woke` (nearest first; None: it did not wake), all
    online and all hearing the talker, arbitrate with `window_ms`: "the nearest",
    "another", "twice" or "none", and how long the one that answers waited from its wake
    event to its decision (ms; None unless one answered). `net_ms[j, i]`: how long speaker
    j's word takes to reach speaker i (default `NET_MS` for all). For comparison, as if no
    speaker ever broke a silence (`break_silence=False`, `breaks_the_silence`) or passed
    late (`pass_late=False`, `Arbiter.pass_unheard`: a speaker that has not heard the
    phrase 3/4 of a window after the first claim of it came passes, and claims it no
    more). With `passes`, a speaker that did not wake passes when its own hearing says
    (sooner where its wake detector no longer listens); else 3/4 of a window late."""
    window_ns = window_ms * 1_000_000
    late_ns = yields_after_ns(window_ns)
    net_ns = np.full((len(woke), len(woke)), NET_MS * 1e6) if net_ms is None else net_ms * 1e6
    claimants: list[int] = []  # in the order they heard the phrase
    for i in sorted((i for i, e in enumerate(woke) if e), key=lambda i: woke[i].t_ns):
        came_ns = [woke[j].t_ns + net_ns[j, i] for j in claimants]
        if not (pass_late and came_ns and woke[i].t_ns >= min(came_ns) + late_ns):
            claimants.append(i)

    passed_ns: dict[int, float] = {}

    def said_ns(j: int, i: int) -> float | None:
        """When speaker j's claim or pass reaches speaker i; None: it says nothing."""
        if j in claimants:
            return woke[j].t_ns + net_ns[j, i]
        if not pass_late:
            return None
        if j not in passed_ns:
            came_ns = min(woke[k].t_ns + net_ns[k, j] for k in claimants)
            hears = passes is not None and woke[j] is None
            passed_ns[j] = passes(j, int(came_ns), window_ms) if hears else came_ns + late_ns
        return passed_ns[j] + net_ns[j, i]

    def arrivals(claims: list, i: int) -> list[tuple[int, WakeClaim]]:
        """The other claimants' `claims`, each with when it reaches speaker `i`."""
        return [(int(said_ns(j, i)), claims[j]) for j in claimants if j != i]

    said = [
        WakeClaim(f"speaker {i}", f"run {i}", e.phrase, e.snr_db, e.score) if e else None
        for i, e in enumerate(woke)
    ]
    claims = [
        replace(c, yields_to=yielding_to(c.phrase, woke[i].t_ns, arrivals(said, i), window_ns))
        if i in claimants
        else None
        for i, c in enumerate(said)
    ]
    answered: list[tuple[int, float]] = []  # each speaker that answers, and its wait (ms)
    for i in claimants:
        heard_ns = woke[i].t_ns
        arrived_by = arrivals(claims, i)
        words = [said_ns(j, i) for j in range(len(woke)) if j != i]
        every_peer_ns = None if None in words else max(words)  # each claimed or passed

        def claimed(by_ns: int) -> list[tuple[int, WakeClaim]]:
            return [(at, c) for at, c in arrived_by if at <= by_ns]  # noqa: B023

        decided_ns = heard_ns + window_ns
        if every_peer_ns is not None:  # decided once the last claim or pass is in
            decided_ns = min(max(heard_ns, every_peer_ns), decided_ns)
        mine = claims[i]
        if rival_that_answers(mine, heard_ns, claimed(decided_ns)) is None:
            answered.append((i, (decided_ns - heard_ns) / 1e6))
        elif break_silence and heard_first(mine, heard_ns, claimed(decided_ns), window_ns):
            # as `Arbiter._until_rivals_decided` waits, until no claim is left to come
            while not (every_peer_ns is not None and every_peer_ns <= decided_ns) and (
                decided_ns
                < (later := rivals_decided_ns(mine, heard_ns, claimed(decided_ns), window_ns))
            ):
                decided_ns = later
            if breaks_the_silence(mine, heard_ns, claimed(decided_ns), window_ns):
                answered.append((i, (decided_ns - heard_ns) / 1e6))
    if len(answered) != 1:
        return ("twice" if answered else "none"), None
    nearest = next(i for i, e in enumerate(woke) if e)
    return ("the nearest" if answered[0][0] == nearest else "another"), answered[0][1]


def report(result: dict, as_json: bool) -> int:
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
