#!/usr/bin/env python3
"""Calibrate `stt.vosk.lr_threshold`, the likelihood-ratio test of the constrained pass,
and the second check after it (the free-form pass's `agreement`, `CALIBRATED_AGREEMENT_FLOOR`).

Every clip is decoded once by both vosk passes, the whole clip as one utterance (as the
final result is), giving the free-form text, the phrase-constrained text and `lr_score`
(constrained minus free-form total path score per second of audio). Then, for each
threshold, the decision of modes "both" (constrained text when lr_score >= threshold,
else free-form) and "grammar" (constrained text, else nothing) is matched against the
presets:

- a command is right when the decided text means the expected intent (manifest column
  `intent`), or, for a stand-in without one, when it agrees with the transcript (at least
  0.9 of characters): its transcript is then added to the grammar's phrases, as a home's
  own phrase would be;
- a non-command is a false action when the decided text fires an intent that acts (not a
  Hass…Get… query); a false accept when its constrained result stands at all.

DIR_OR_TSV is a manifest (tab-separated, columns `file` (relative to the manifest),
`transcript`, optional `intent`) or a folder (its manifest.tsv, else every .wav/.flac).
Non-commands are decoded against the presets' phrases only. No recordings of spoken
commands ship here: the stand-in is real read speech whose sentence is in the grammar.

    PYTHONPATH=device .venv/bin/python scripts/calibrate_rejection.py \\
        --commands ../shared/audio/ko-read --non-commands ../shared/audio/ko-read \\
        --fixtures ../shared/conformance/ha-intents-ko/_fixtures.yaml [--snr 20 --snr 10] [--json]

With `--noise white --noise pink --noise babble --snr 20 --snr 10 --snr 5 --window 3` it
gives the figures of docs/hearing.md ("A second check before acting"): how many noisy
non-command utterances of a command's length pass the gate, by agreement floor.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))

from sori.core.config.sections import VoskConfig  # noqa: E402
from sori.core.errors import SoriError  # noqa: E402
from sori.hearing.audio.augment import babble, make_noise, mix_at_snr, to_pcm16  # noqa: E402
from sori.hearing.audio.sources import FileSource  # noqa: E402
from sori.hearing.stt.vosk import (  # noqa: E402
    CALIBRATED_AGREEMENT_FLOOR,
    DEFAULT_LR_THRESHOLD,
    VoskRecognizer,
    agreement,
    load_model,
)
from sori.testing.fakes import agreement as char_agreement  # noqa: E402
from sori.understanding.intents import load_presets  # noqa: E402
from sori.understanding.intents.loader import load_fixtures  # noqa: E402

THRESHOLDS = (-30.0, -20.0, -10.0, -5.0, -2.0, 0.0, 2.0, 5.0, 10.0)
FLOORS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7)
"""Agreement floors of the second check to try (0: the ratio alone)."""


@dataclass(frozen=True)
class Clip:
    path: Path
    transcript: str = ""
    intent: str = ""
    """Expected intent of a command; "" for a stand-in (its transcript is the phrase)."""


@dataclass(frozen=True)
class Scored:
    clip: Clip
    kind: str
    """"command" or "non-command"."""
    condition: str
    free: str
    grammar: str
    lr_score: float

    @property
    def agree(self) -> float:
        """The second check's measure: see `sori.hearing.stt.vosk.agreement`."""
        return agreement(self.grammar, self.free)

    def passes(self, threshold: float, floor: float) -> bool:
        """Whether the constrained result stands: the ratio, then the agreement."""
        return bool(self.grammar) and self.lr_score >= threshold and self.agree >= floor


def read_set(spec: str) -> list[Clip]:
    """Clips of a manifest or a folder (see the module docstring)."""
    path = Path(spec).expanduser()
    if path.is_dir():
        manifest = path / "manifest.tsv"
        if not manifest.is_file():
            clips = [Clip(p) for p in sorted(path.iterdir()) if p.suffix in (".wav", ".flac")]
            if not clips:
                raise SystemExit(f"{path} holds no manifest.tsv and no .wav/.flac files")
            return clips
        path = manifest
    if not path.is_file():
        raise SystemExit(f"no such manifest or folder: {spec}")
    rows = list(csv.DictReader(path.open(encoding="utf-8"), delimiter="\t"))
    if not rows or "file" not in rows[0]:
        raise SystemExit(f"{path}: a tab-separated manifest needs a header with a 'file' column")
    return [
        Clip(path.parent / r["file"], r.get("transcript") or "", r.get("intent") or "")
        for r in rows
    ]


def noisy(
    pcm: bytes, kind: str, snr_db: float | None, seed: int, voices: list[np.ndarray]
) -> bytes:
    """`pcm` with noise of `kind` at `snr_db` (None: as it is). Babble is six talkers from
    `voices`, other real speech than the clip's own."""
    if snr_db is None:
        return pcm
    speech = np.frombuffer(pcm, "<i2").astype(np.float64)
    rng = np.random.default_rng(seed)
    if kind == "babble":
        noise = babble(voices, len(speech), rng, talkers=6)
    else:
        noise = make_noise(kind, len(speech), rng)
    return to_pcm16(mix_at_snr(speech, noise, snr_db))


def windows(pcm: bytes, seconds: float) -> list[bytes]:
    """`pcm` cut into pieces of `seconds` (the last one kept when at least half as long):
    non-command utterances of a command's length. 0: the whole clip."""
    if seconds <= 0:
        return [pcm]
    step = int(seconds * 16000) * 2
    return [pcm[i : i + step] for i in range(0, len(pcm), step) if len(pcm) - i >= step // 2]


def decode(recognizer: VoskRecognizer, pcm: bytes) -> tuple[str, str, float]:
    stream = recognizer.open_stream()
    for i in range(0, len(pcm), 640):  # 20 ms frames, as the pipeline hands them over
        stream.feed(pcm[i : i + 640])
    stream.finalize()
    free, gram, lr = stream.passes()
    assert gram is not None and lr is not None
    return free.text, gram.text, lr


def acting(found) -> bool:
    return found is not None and "Get" not in found.intent


def table(
    scored: list[Scored], presets, thresholds, floor: float = CALIBRATED_AGREEMENT_FLOOR
) -> list[dict]:
    rows = []
    commands = [s for s in scored if s.kind == "command"]
    others = [s for s in scored if s.kind == "non-command"]
    for t in thresholds:
        row: dict = {"threshold": t}
        for mode in ("both", "grammar"):
            right = actions = 0
            for s in scored:
                stands = s.passes(t, floor)
                text = s.grammar if stands else (s.free if mode == "both" else "")
                found = presets.match(text) if text else None
                if s.kind == "command":
                    if s.clip.intent:
                        right += found is not None and found.intent == s.clip.intent
                    else:
                        right += stands and char_agreement(text, s.clip.transcript) >= 0.9
                else:
                    actions += acting(found)
            total = len(scored)
            row[f"{mode}_commands_right"] = right
            row[f"{mode}_false_actions"] = actions
            row[f"{mode}_accuracy"] = (
                round((right + len(others) - actions) / total, 3) if total else None
            )
        row["false_accepts"] = sum(s.passes(t, floor) for s in others)
        row["false_accepts_ratio_only"] = sum(s.passes(t, 0.0) for s in others)
        row["commands"], row["non_commands"] = len(commands), len(others)
        rows.append(row)
    return rows


def gate_table(scored: list[Scored], threshold: float, floors) -> list[dict]:
    """Per kind and condition: utterances, how many pass the gate at `threshold` with each
    floor (0: the ratio alone), for commands how many a floor keeps."""
    rows = []
    groups: dict[tuple[str, str], list[Scored]] = {}
    for s in scored:
        groups.setdefault((s.kind, s.condition), []).append(s)
    for (kind, condition), group in groups.items():
        row: dict = {"set": kind, "condition": condition, "utterances": len(group)}
        for floor in floors:
            row[f"pass@{floor:g}"] = sum(s.passes(threshold, floor) for s in group)
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", action="append", default=[], metavar="DIR_OR_TSV")
    parser.add_argument("--non-commands", action="append", default=[], metavar="DIR_OR_TSV")
    parser.add_argument("--fixtures", help="home of a conformance fixtures YAML file")
    parser.add_argument("--snr", type=float, action="append", default=[], help="noise SNR, dB")
    parser.add_argument(
        "--noise", action="append", default=[], help="white, pink, brown, hum or babble "
        "(babble: six talkers from the other non-command clips); default white",
    )  # fmt: skip
    parser.add_argument(
        "--window", type=float, default=0.0,
        help="cut non-commands into pieces of this many seconds (0: whole clips)",
    )  # fmt: skip
    parser.add_argument(
        "--noisy-commands", action="store_true", help="commands in every noise too (not clean only)"
    )
    parser.add_argument("--floors", default=",".join(str(f) for f in FLOORS), help="comma list")
    parser.add_argument(
        "--thresholds", default=",".join(str(t) for t in THRESHOLDS), help="comma list"
    )
    parser.add_argument("--json", action="store_true", help="scores and table as JSON")
    args = parser.parse_args()
    if not args.commands and not args.non_commands:
        parser.error("give --commands and/or --non-commands (a folder or a manifest .tsv)")
    try:
        thresholds = [float(t) for t in args.thresholds.split(",")]
    except ValueError:
        parser.error(f"--thresholds must be numbers separated by commas: {args.thresholds}")
    commands = [c for spec in args.commands for c in read_set(spec)]
    others = [c for spec in args.non_commands for c in read_set(spec)]
    try:
        home = load_fixtures(args.fixtures) if args.fixtures else None
        presets = load_presets("ko", home)
        model = load_model(chunk_ms=VoskConfig().chunk_ms)
    except SoriError as exc:
        print(f"calibrate_rejection: {exc}", file=sys.stderr)
        return 2
    phrases = presets.phrases()
    stand_ins = [c.transcript for c in commands if not c.intent and c.transcript]
    recognizers = {
        "command": VoskRecognizer(model, phrases=[*phrases, *stand_ins], mode="both"),
        "non-command": VoskRecognizer(model, phrases=phrases, mode="both"),
    }
    floors = [float(f) for f in args.floors.split(",")]
    conditions = {"clean": ("white", None)}
    for kind in args.noise or ["white"]:
        conditions.update({f"{kind} {s:g} dB": (kind, s) for s in args.snr})
    audio = {c.path: FileSource(c.path).pcm for c in [*commands, *others]}
    scored: list[Scored] = []
    for kind, clips in (("command", commands), ("non-command", others)):
        for seed, clip in enumerate(clips):
            voices = [
                np.frombuffer(audio[c.path], "<i2").astype(np.float64)
                for c in others
                if c.path != clip.path
            ]
            pieces = windows(audio[clip.path], args.window if kind == "non-command" else 0)
            for condition, (noise, snr) in conditions.items():
                if kind == "command" and snr is not None and not args.noisy_commands:
                    continue
                for piece in pieces:
                    heard = noisy(piece, noise, snr, seed, voices)
                    free, gram, lr = decode(recognizers[kind], heard)
                    scored.append(Scored(clip, kind, condition, free, gram, lr))
                    if not args.json:
                        print(
                            f"{kind}\t{condition}\t{clip.path.name}\t{lr:+.1f}\t"
                            f"{agreement(gram, free):.2f}\t{gram}\t| {free}",
                            flush=True,
                        )
    rows = table(scored, presets, thresholds)
    gates = gate_table(scored, DEFAULT_LR_THRESHOLD, floors)
    if args.json:
        print(
            json.dumps(
                {
                    "scores": [
                        {
                            "file": s.clip.path.name,
                            "set": s.kind,
                            "condition": s.condition,
                            "lr_score": round(s.lr_score, 2),
                            "free": s.free,
                            "grammar": s.grammar,
                            "agreement": round(s.agree, 3),
                        }
                        for s in scored
                    ],
                    "table": rows,
                    "gate": gates,
                },
                ensure_ascii=False,
            )
        )
        return 0
    print()
    head = ("threshold", "both right", "both false", "grammar right", "grammar false", "accepts")
    print("\t".join(head) + f"\t(of {rows[0]['commands']} commands, {rows[0]['non_commands']})")
    for r in rows:
        print(
            f"{r['threshold']:+g}\t{r['both_commands_right']}\t{r['both_false_actions']}\t"
            f"{r['grammar_commands_right']}\t{r['grammar_false_actions']}\t{r['false_accepts']}"
            f"\t(ratio only {r['false_accepts_ratio_only']})"
        )
    print(f"\npassing the gate at lr_threshold {DEFAULT_LR_THRESHOLD:+g}, by agreement floor")
    print("\t".join(["set", "condition", "n", *(f"{f:g}" for f in floors)]))
    for g in gates:
        counts = [str(g[f"pass@{f:g}"]) for f in floors]
        print("\t".join([g["set"], g["condition"], str(g["utterances"]), *counts]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
