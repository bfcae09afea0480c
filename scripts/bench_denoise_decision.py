"""What `audio.denoise = "auto"` decides, per utterance, for the shared read clips in
generated rooms: white, pink, brown and babble noise at several SNRs, and quiet to loud
rooms (a steady noise at a fixed dBFS) under clean speech. The clips go through the real
hearing pipeline (Silero VAD, the pre-roll, `sori.hearing.audio.denoise.RoomDenoise`) with a
recognizer that only listens, so it is quick; nothing is decoded or denoised.

    .venv/bin/python scripts/bench_denoise_decision.py [--clips 17] [--json]

Prints, per condition, the share of utterances denoised and the estimated SNR (min /
median / max, dB) and room level: the figures `SNR_BELOW_DB` is chosen from
(docs/hearing.md).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))

from sori.core.config import first_run_config  # noqa: E402
from sori.hearing.audio.augment import (  # noqa: E402
    at_dbfs,
    babble,
    make_noise,
    mix_at_snr,
    to_pcm16,  # noqa: E402
)
from sori.hearing.audio.denoise import RoomDenoise, decision_ms  # noqa: E402
from sori.hearing.audio.format import read_file  # noqa: E402
from sori.hearing.audio.sources import RawSource  # noqa: E402
from sori.hearing.stt.denoised import AutoDenoised  # noqa: E402
from sori.testing.fakes import ScriptedRecognizer  # noqa: E402
from sori.testing.replaying import replay_events  # noqa: E402

LEAD_S = 1.0
"""Room before each clip (the clips' own leading silence follows)."""


def conditions() -> list[tuple[str, str, float]]:
    """(name, noise kind, SNR in dB or room dBFS) of every room heard."""
    rooms = [("clean", "none", 0.0)]
    rooms += [(f"{k} {snr:g} dB", k, snr) for k in ("white", "pink", "brown", "babble")
              for snr in (5, 10, 15, 20, 30)]  # fmt: skip
    rooms += [(f"{k} room -35 dBFS", f"room {k}", -35.0) for k in ("hum", "brown", "pink")]
    rooms += [(f"pink room {db:g} dBFS", "room pink", db) for db in (-55, -45, -30)]
    return rooms


def in_room(speech: np.ndarray, kind: str, value: float, voices, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    speech = np.concatenate([np.zeros(int(16_000 * LEAD_S), np.float32), speech])
    if kind == "none":
        return speech
    if kind.startswith("room"):  # clean speech as recorded, over a room at `value` dBFS
        return speech + at_dbfs(make_noise(kind.split()[1], len(speech), rng), value)
    noise = (
        babble(voices, len(speech), rng, 6)
        if kind == "babble"
        else make_noise(kind, len(speech), rng)
    )
    voiced = speech[int(16_000 * LEAD_S) :]
    mixed = mix_at_snr(voiced, noise[len(speech) - len(voiced) :], value)
    lead = noise[: len(speech) - len(voiced)] * (mixed - voiced).std() / max(noise.std(), 1e-9)
    return np.concatenate([lead, mixed]).astype(np.float32)


def decisions(config, signal: np.ndarray) -> list:
    room = RoomDenoise(None, config.audio.denoise_above_dbfs,
                       decision_ms(config.vad.pre_roll_ms, config.vad.start_ms))  # fmt: skip
    recognizer = AutoDenoised(ScriptedRecognizer([]), room)
    room.lend = lambda: None  # decide only: nothing is denoised
    source = RawSource(io.BytesIO(to_pcm16(signal)), name="clip")
    replay_events(source, config, recognizer, None)
    return room.decisions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", default=str(REPO.parent / "shared"), help="shared data")
    parser.add_argument("--clips", type=int, default=17, help="read clips (default all 17)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = Path(args.shared) / "audio" / "ko-read"
    rows = list(csv.DictReader((folder / "manifest.tsv").open(encoding="utf-8"), delimiter="\t"))
    clips = [np.frombuffer(read_file(folder / r["file"]), "<i2").astype(np.float32)
             for r in rows[: args.clips]]  # fmt: skip
    config = first_run_config()
    table = []
    for name, kind, value in conditions():
        heard = []
        for i, speech in enumerate(clips):
            voices = [c for j, c in enumerate(clips) if j != i]
            heard += decisions(config, in_room(speech, kind, value, voices, seed=i))
        snrs = [e.snr_db for e, _ in heard]
        table.append({
            "room": name, "utterances": len(heard),
            "denoised": sum(d for _, d in heard),
            "snr_db": [min(snrs), statistics.median(snrs), max(snrs)] if snrs else [],
            "room_dbfs": statistics.median(e.room_dbfs for e, _ in heard) if heard else None,
        })  # fmt: skip
    if args.json:
        print(json.dumps(table))
        return 0
    print("| room | denoised | SNR estimate min / median / max | room (median) |")
    print("|---|---|---|---|")
    for row in table:
        snr = " / ".join(f"{v:.0f}" for v in row["snr_db"])
        print(f"| {row['room']} | {row['denoised']} of {row['utterances']} | {snr} dB "
              f"| {row['room_dbfs']:.0f} dBFS |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
