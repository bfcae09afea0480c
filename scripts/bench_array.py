"""Benchmark a microphone array across the room: one microphone against the 4-mic beam
(MVDR, and delay-and-sum) on the shared read clips and on short phrases of them heard as
commands, in a simulated living room; and the CPU the direction finding and the beam cost.

    .venv/bin/python scripts/bench_array.py                  # 4 clips, pink and babble
    .venv/bin/python scripts/bench_array.py --clips 8 --json out.json

The room (pyroomacoustics, image sources; `pip install pyroomacoustics`, a test and
benchmark dependency only): 6 × 5 × 3 m, RT60 0.4 s, a ReSpeaker 4-mic HAT on a table
in the middle (1 m high), the talker 2 m away at 60° (mouth 1.5 m high), an interferer
1.8 m away at 160° playing throughout, under the talker at microphone 0 by `--below-db`
(default 5 dB): pink noise (a fan, a fridge) or babble (four other clips at once from
one loudspeaker, a television). `--lead-s` of the interferer alone come first (default 1
s; a television on for minutes before the command: `--lead-s 20`). `--distance-m` moves
the talker nearer or farther along the floor (default 2 m; 0.7 m is a step away, 0.86 m
from mouth to array).

- CER: transcripts of a clip's utterances joined, against the manifest's, spaces
  ignored, summed over the clips; "talker's CER" joins only the utterances that start
  after the interferer's lead (less 0.3 s), so that the television's words before the
  talker speaks do not count; "1 mic" replays microphone 0 as `sori replay` with
  `audio.channels = 1`, the beams replay all four as `sori replay` with
  `audio.channels = 4` (the same recognizer, denoising off unless `--denoise auto`, so
  the beam alone differs).
- Actions: intents committed on the read clips, none of which is a command: each one a
  device wrongly switched.
- DOA: the direction the beam held for the talker's first utterance, against 60°.
- Commands: no recordings of spoken commands ship here, so the stand-ins are real
  speech. Phrases of 2-4 words (0.7-1.8 s) are cut from the read clips where the
  recognizer heard them right, close-talk, at its own word times (`--standins` of them).
  Each is added to the grammar, as a home's own phrase would be, and said in the room
  after the interferer's lead. The paths are one microphone and MVDR, each without
  dereverberation and with each kind (`audio.dereverb = "wpe"`, `"spectral"`, the
  latter at `audio.rt60_s`'s default, not the room's). A phrase is right when an
  utterance's transcript holds it, spaces ignored, with at most 2 characters more (a
  neighbour's syllable at the cut). It is wrong when the constrained pass stood for
  anything else: a command the user did not say. The rooms are the interferers at
  `--below-db`, and "room alone", pink noise 30 dB under the talker (the reverberation
  alone). `--paths` picks some of these paths (comma-separated, as the table names
  them); `--clips 0` leaves the read clips out and hears the stand-ins only.
- `--fault` breaks the board the same way in every room: `dead:N` reads zeros from
  microphone N (a cracked joint, a slot the driver does not map), `hot:N:DB` gives it DB
  more gain than the others (a mixer control set apart), clipped at full scale as a
  board would. The array leaves a dead microphone out and evens a hot one out
  (sori.hearing.audio.channel_health); "1 mic" hears microphone 0 as it is.
- CPU RTF: process time of `ArrayFrontEnd` (the beam, the statistics, the direction
  finding as the voice detector steers it) over the audio's duration, BLAS on one
  thread.

Nothing is stored; every mix is the same every run.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, before numpy loads BLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from itertools import zip_longest  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))

import numpy as np  # noqa: E402

from sori.assemble.hearing import build_recognizer  # noqa: E402
from sori.assemble.understanding import home_from_config, presets_from_config  # noqa: E402
from sori.core.config import load_config  # noqa: E402
from sori.hearing.audio.array import BOARDS, ArrayGeometry  # noqa: E402
from sori.hearing.audio.augment import babble, make_noise  # noqa: E402
from sori.hearing.audio.format import RATE_HZ, float_to_s16, read_file, s16_to_float  # noqa: E402
from sori.hearing.audio.front_end import FFT_SIZE, ArrayFrontEnd  # noqa: E402
from sori.hearing.audio.ring import FrameChunker  # noqa: E402
from sori.hearing.audio.sources import ChannelChunker  # noqa: E402
from sori.hearing.audio.standing import angle_apart_deg  # noqa: E402
from sori.testing.fakes import character_errors  # noqa: E402
from sori.testing.replaying import replay_events, summarize  # noqa: E402

BOARD = "respeaker-4mic-hat"
ROOM_M = (6.0, 5.0, 3.0)
ARRAY_AT_M = np.array([3.0, 2.5, 1.0])
TALKER_DEG, INTERFERER_DEG = 60.0, 160.0
LEAD_S = 1.0
"""Seconds of the interferer alone before the talker, unless `--lead-s` says otherwise."""
DISTANCE_M = 2.0
"""The talker's distance from the array along the floor, unless `--distance-m` says
otherwise."""
PATHS = ("1 mic", "delay-sum", "mvdr")
STANDIN_PATHS = tuple(
    f"{beam}{dereverb}" for beam in ("1 mic", "mvdr") for dereverb in ("", " + wpe", " + spectral")
)
CLOSE_PATHS = ("1 mic", "1 mic + spectral")
"""Close-talk, the stand-ins are heard as they were recorded, and dereverberated: what the
suppression costs a talker near the device."""
STANDIN_WORDS = (2, 3, 4)
STANDIN_S = (0.7, 1.8)
"""A stand-in phrase's words, and its length between its words' first start and last end."""
ROOM_ALONE_DB = 30.0
"""The interferer this far under the talker: the room's reverberation alone."""


class Recording:
    """A recording held in memory, as a replay source: mono (channel 0) for one
    microphone, every channel for the array."""

    def __init__(self, name: str, samples: np.ndarray, frame_ms: int) -> None:
        self.name, self.samples, self.frame_ms = name, samples, frame_ms

    def frames(self):  # noqa: ANN201
        pcm = float_to_s16(self.samples[:, 0])
        chunker = FrameChunker(self.frame_ms)
        yield from chunker.push(pcm)
        yield from chunker.flush()

    def channel_frames(self, channels: int):  # noqa: ANN201
        chunker = ChannelChunker(self.frame_ms, channels)
        yield from chunker.push(self.samples.astype(np.float32))
        yield from chunker.flush()


def at(azimuth_deg: float, distance_m: float, height_m: float) -> list[float]:
    a = np.radians(azimuth_deg)
    x, y, _ = ARRAY_AT_M + distance_m * np.array([np.cos(a), np.sin(a), 0.0])
    return [float(x), float(y), height_m]


def in_room(
    speech: np.ndarray,
    interferer: np.ndarray,
    below_db: float,
    lead_s: float = LEAD_S,
    distance_m: float = DISTANCE_M,
) -> tuple[np.ndarray, np.ndarray]:
    """(the mix at the 4 microphones, the talker's part of it), both (samples, mics), the
    talker `distance_m` away along the floor, the interferer `below_db` under them at
    microphone 0, alone for `lead_s` first."""
    import pyroomacoustics as pra

    absorption, order = pra.inverse_sabine(0.4, ROOM_M)
    room = pra.ShoeBox(ROOM_M, fs=RATE_HZ, materials=pra.Material(absorption), max_order=20)
    lead = int(lead_s * RATE_HZ)
    talker = np.concatenate([np.zeros(lead), speech, np.zeros(RATE_HZ // 2)])
    room.add_source(at(TALKER_DEG, distance_m, 1.5), signal=talker)
    room.add_source(at(INTERFERER_DEG, 1.8, 1.2), signal=interferer[: len(talker)])
    room.add_microphone_array((ARRAY_AT_M + np.array(BOARDS[BOARD])).T)
    heard = room.simulate(return_premix=True)[:, :, : len(talker)]
    said, other = heard[0].T, heard[1].T
    other *= np.sqrt(np.mean(said[lead:, 0] ** 2) / np.mean(other[:, 0] ** 2))
    other /= 10 ** (below_db / 20)
    scale = 0.5 / np.abs(said + other).max()
    return (said + other) * scale, said * scale


def fault(text: str) -> tuple[int, float | None]:
    """One `--fault`: (the microphone, its extra gain in dB; None for dead)."""
    kind, *rest = text.split(":")
    if not (kind == "dead" and len(rest) == 1 or kind == "hot" and len(rest) == 2):
        raise argparse.ArgumentTypeError(f"{text!r}: give dead:N or hot:N:DB")
    try:
        channel, gain_db = int(rest[0]), float(rest[1]) if kind == "hot" else None
    except ValueError:
        why = f"{text!r}: N is a microphone's index, DB a number"
        raise argparse.ArgumentTypeError(why) from None
    if not 0 <= channel < len(BOARDS[BOARD]):
        raise argparse.ArgumentTypeError(
            f"{text!r}: the board has microphones 0-{len(BOARDS[BOARD]) - 1}"
        )
    return channel, gain_db


def faulted(mixed: np.ndarray, faults: list[tuple[int, float | None]]) -> np.ndarray:
    """`mixed` (samples, mics) as a board with `faults` (`--fault`) gives it."""
    broken = mixed.copy()
    for channel, gain_db in faults:
        if gain_db is None:
            broken[:, channel] = 0.0
        else:
            broken[:, channel] *= 10 ** (gain_db / 20)
    return np.clip(broken, -1.0, 1.0)


def interferer(kind: str, samples: int, voices: list[np.ndarray], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "babble":
        return babble(voices, samples, rng)
    return make_noise(kind, samples, rng)


def with_audio(config, channels: int, beamform: str = "mvdr", dereverb: str = "off"):  # noqa: ANN001, ANN201
    array = dataclasses.replace(
        config.audio.array, geometry=BOARD if channels > 1 else "", beamform=beamform
    )
    audio = dataclasses.replace(config.audio, channels=channels, array=array, dereverb=dereverb)
    return dataclasses.replace(config, audio=audio)


def hear(
    recording: Recording,
    config,
    recognizer,
    presets,
    lead_s: float = LEAD_S,
) -> tuple[list[dict], list[dict]]:
    """The records of a replay, and those of the talker's utterances: the ones starting
    after the interferer's `lead_s` alone (the interferer may make utterances of its own
    before)."""
    events, origin = replay_events(recording, config, recognizer, presets)
    records = summarize(recording.name, events, origin)
    return records, [r for r in records if r["speech_start_s"] >= lead_s - 0.3]


def path_config(path: str, config):  # noqa: ANN001, ANN201
    """The config of a path: "1 mic" or a beam, " + " and an `audio.dereverb` after it."""
    beam, _, dereverb = path.partition(" + ")
    dereverb = dereverb or "off"
    if beam == "1 mic":
        return with_audio(config, 1, dereverb=dereverb)
    return with_audio(config, 4, beam, dereverb)


def cpu_rtf(mixed: np.ndarray, talker: np.ndarray) -> float:
    """Process time of the array's front end over the audio's duration, told after each
    frame what a voice detector would say (the talker's part loud; an utterance from 120
    ms of it)."""
    array = ArrayFrontEnd(ArrayGeometry(np.array(BOARDS[BOARD])), "mvdr")
    frame, run, in_speech = 320, 0, False
    loud = 1e-2 * np.mean(talker[:, 0] ** 2)
    started = time.process_time()
    for k in range(0, len(mixed) - frame + 1, frame):
        array.process(mixed[k : k + frame])
        at_ = max(0, k - FFT_SIZE)
        voiced = bool(np.mean(talker[at_ : at_ + frame, 0] ** 2) > loud)
        run = run + 1 if voiced else 0
        in_speech = in_speech or run >= 6
        array.heard(voiced, in_speech)
    return (time.process_time() - started) / (len(mixed) / RATE_HZ)


def standins(rows: list[dict], voices: dict, count: int) -> list[tuple[str, np.ndarray]]:
    """Up to `count` phrases of the read clips, each (its words, its audio with 50 ms
    before and 100 ms after), where vosk heard every word of it right close-talk, cut at
    vosk's word times; a few from each clip, the clips taken in turn."""
    import vosk

    from sori.hearing.stt.vosk import load_model

    model = load_model()
    per_clip: list[list[tuple[str, np.ndarray]]] = []
    for row in rows:
        speech = voices[row["file"]]
        recognizer = vosk.KaldiRecognizer(model, RATE_HZ)
        recognizer.SetWords(True)
        pcm = float_to_s16(speech)
        words = []
        for at_ in range(0, len(pcm), RATE_HZ):  # half a second at a time
            if recognizer.AcceptWaveform(pcm[at_ : at_ + RATE_HZ]):  # a pause ended a part
                words += json.loads(recognizer.Result()).get("result", [])
        words += json.loads(recognizer.FinalResult()).get("result", [])
        said = row["transcript"].replace(" ", "")
        found, i = [], 0
        while i < len(words):
            for n in STANDIN_WORDS:
                run = words[i : i + n]
                seconds = run[-1]["end"] - run[0]["start"]
                text = " ".join(w["word"] for w in run)
                fits = STANDIN_S[0] <= seconds <= STANDIN_S[1]
                if len(run) == n and fits and text.replace(" ", "") in said:
                    start = max(0, int(run[0]["start"] * RATE_HZ) - RATE_HZ // 20)
                    end = int(run[-1]["end"] * RATE_HZ) + RATE_HZ // 10
                    found.append((text, speech[start:end]))
                    i += n  # the next phrase starts a word later: no shared edge
                    break
            i += 1
        per_clip.append(found)
    taken = [p for turn in zip_longest(*per_clip) for p in turn if p is not None]
    return taken[:count]


def standin_right(phrase: str, transcript: str) -> bool:
    """`transcript` holds `phrase`, spaces ignored, with at most 2 characters more."""
    want, heard = phrase.replace(" ", ""), transcript.replace(" ", "")
    return want in heard and len(heard) <= len(want) + 2


def commands_in_rooms(args, config, presets, rows, voices, results) -> None:  # noqa: ANN001
    """The stand-in phrases said in each room through each path: right and wrong."""
    phrases = standins(rows, voices, args.standins)
    grammar = [*presets.phrases(config.stt.phrases.max_phrases), *(p for p, _ in phrases)]
    recognizer = build_recognizer(config.stt, grammar)
    rooms = [("room alone", "pink", ROOM_ALONE_DB)]
    rooms += [
        (f"{kind}, {args.below_db:g} dB under", kind, args.below_db)
        for kind in args.noises.split(",")
    ]
    print(f"\n{len(phrases)} phrases of the read clips heard as commands")
    print("| room | path | right | wrong | actions |\n|---|---|---|---|---|")
    close = {p: {"right": 0, "wrong": 0, "actions": 0} for p in CLOSE_PATHS if p in args.paths}
    for text, said in phrases:
        padded = np.concatenate([np.zeros(RATE_HZ // 2), said, np.zeros(RATE_HZ // 2)])
        for path in close:
            records, _ = hear(
                Recording(text, padded[:, None], 20), path_config(path, config), recognizer,
                presets, 0.0,
            )  # fmt: skip
            tally(close[path], text, records)
    for path, count in close.items():
        print(f"| close-talk | {path} | {row(count)} |", flush=True)
    results["commands"] = {"phrases": len(phrases), "close-talk": close}
    for label, kind, below_db in rooms:
        counts = {p: {"right": 0, "wrong": 0, "actions": 0} for p in args.paths}
        for k, (text, said) in enumerate(phrases):
            length = len(said) + int((args.lead_s + 1) * RATE_HZ)
            sound = interferer(kind, length, list(voices.values()), 7 + k)
            mixed, _ = in_room(said, sound, below_db, args.lead_s, args.distance_m)
            mixed = faulted(mixed, args.fault)
            for path in counts:
                records, _ = hear(
                    Recording(text, mixed, 20), path_config(path, config), recognizer,
                    presets, args.lead_s,
                )  # fmt: skip
                tally(counts[path], text, records)
        results["commands"][label] = counts
        for path, count in counts.items():
            print(f"| {label} | {path} | {row(count)} |", flush=True)


def row(counts: dict) -> str:
    return f"{counts['right']} | {counts['wrong']} | {counts['actions']}"


def tally(counts: dict, phrase: str, records: list[dict]) -> None:
    """Count `phrase` right when an utterance heard it; wrong for each utterance whose
    constrained pass stood for something else; actions for each intent committed (no
    phrase is a command of the home)."""
    heard = [r for r in records if r["transcript"]]
    counts["right"] += any(standin_right(phrase, r["transcript"]) for r in heard)
    for r in heard:
        if r["constrained"] and not standin_right(phrase, r["transcript"]):
            counts["wrong"] += 1
            counts.setdefault("wrong_heard", []).append([phrase, r["transcript"]])
        if r["intent"]:
            counts["actions"] += 1
            counts.setdefault("acted_on", []).append([phrase, r["transcript"], r["intent"]])


def clips_in_rooms(args, config, presets, recognizer, chosen, voices, results) -> None:  # noqa: ANN001
    """The read clips said in each room through each path: CER, actions, the direction."""
    print(
        "| interferer | path | CER | talker's CER | actions | DOA error (median, max) |\n"
        "|---|---|---|---|---|---|"
    )
    for n_kind, kind in enumerate(args.noises.split(",")):
        errors = {p: [0, 0, 0, 0] for p in PATHS}  # edits, characters, talker's edits, actions
        doa_errors: list[float] = []
        for k, row in enumerate(chosen):
            speech = voices[row["file"]]
            others = [v for name, v in voices.items() if name != row["file"]]
            length = len(speech) + int((args.lead_s + 1) * RATE_HZ)
            sound = interferer(kind, length, others, 100 * n_kind + k)
            mixed, talker = in_room(speech, sound, args.below_db, args.lead_s, args.distance_m)
            mixed = faulted(mixed, args.fault)
            results["cpu_rtf"].append(cpu_rtf(mixed, talker))
            for path in PATHS:
                records, talkers = hear(
                    Recording(row["file"], mixed, 20), path_config(path, config), recognizer,
                    presets, args.lead_s,
                )  # fmt: skip
                said = " ".join(r["transcript"] for r in records if r["transcript"])
                edits, chars = character_errors(row["transcript"], said)
                errors[path][0] += edits
                errors[path][1] += chars
                said = " ".join(r["transcript"] for r in talkers if r["transcript"])
                errors[path][2] += character_errors(row["transcript"], said)[0]
                errors[path][3] += sum(1 for r in records if r["intent"])
                doa = talkers[0]["doa_deg"] if talkers else None
                if path == "mvdr" and doa is not None:
                    doa_errors.append(float(angle_apart_deg(doa, TALKER_DEG)))
        results["doa_error_deg"][kind] = doa_errors
        for path in PATHS:
            cer = errors[path][0] / max(1, errors[path][1])
            talker_cer = errors[path][2] / max(1, errors[path][1])
            results["cer"][f"{kind} / {path}"] = round(cer, 3)
            results["talker_cer"][f"{kind} / {path}"] = round(talker_cer, 3)
            results["actions"][f"{kind} / {path}"] = errors[path][3]
            doa = (
                f"{np.median(doa_errors):.0f}°, {max(doa_errors):.0f}°"
                if path == "mvdr" and doa_errors
                else ""
            )
            print(
                f"| {kind} | {path} | {cer:.3f} | {talker_cer:.3f} | {errors[path][3]} | {doa} |",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="sori.toml (default: the embedded defaults)")
    parser.add_argument("--clips", type=int, default=4, help="shortest read clips used")
    parser.add_argument("--noises", default="pink,babble", help="interferers, comma-separated")
    parser.add_argument("--below-db", type=float, default=5.0, help="interferer under talker")
    parser.add_argument(
        "--lead-s", type=float, default=LEAD_S, help="interferer alone first, seconds"
    )
    parser.add_argument("--no-commands", action="store_true", help="the read clips only")
    parser.add_argument(
        "--standins", type=int, default=24, help="phrases of the read clips heard as commands"
    )
    parser.add_argument(
        "--distance-m", type=float, default=DISTANCE_M, help="talker's distance along the floor"
    )
    parser.add_argument(
        "--paths",
        default=",".join(STANDIN_PATHS),
        help="the stand-ins' paths, comma-separated (default: all)",
    )
    parser.add_argument(
        "--denoise",
        choices=("off", "auto"),
        default="off",
        help='audio.denoise on every path (default "off": the beam alone differs)',
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        type=fault,
        metavar="dead:N|hot:N:DB",
        help="a broken microphone of the board (repeatable; see above)",
    )
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    args.paths = args.paths.split(",")
    if unknown := [p for p in args.paths if p not in STANDIN_PATHS]:
        parser.error(f"unknown path {unknown[0]!r}; the paths are {', '.join(STANDIN_PATHS)}")

    config = load_config(args.config)
    config = dataclasses.replace(
        config,
        stt=dataclasses.replace(config.stt, warm_up_s=0.0),
        audio=dataclasses.replace(config.audio, denoise=args.denoise),
    )
    presets = presets_from_config(config.intents, home_from_config(config.home))
    recognizer = build_recognizer(config.stt, presets.phrases(config.stt.phrases.max_phrases))

    folder = REPO.parent / "shared" / "audio" / "ko-read"
    rows = list(csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t"))
    rows.sort(key=lambda r: float(r["duration_s"]))
    voices = {r["file"]: s16_to_float(read_file(folder / r["file"])) for r in rows}
    chosen = rows[: args.clips]
    results: dict = {
        "cer": {}, "talker_cer": {}, "actions": {}, "doa_error_deg": {}, "commands": {},
        "cpu_rtf": [],
    }  # fmt: skip
    if chosen:
        clips_in_rooms(args, config, presets, recognizer, chosen, voices, results)
    if not args.no_commands:
        commands_in_rooms(args, config, presets, rows, voices, results)

    if rtf := results["cpu_rtf"]:
        median, most = np.median(rtf), max(rtf)
        print(f"\nCPU RTF of DOA + MVDR beam, one core: median {median:.3f}, max {most:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
