"""Benchmark hearing across a room by array size: the shared read clips said in `sori
test`'s simulated room (sori.hearing.audio.room) at each RT60, quiet and with babble,
heard through one microphone and through circular arrays of 2, 4 and 6, with the late
reverberation suppressor off and on.

    .venv/bin/python scripts/bench_rooms.py                       # 4 clips, every size
    .venv/bin/python scripts/bench_rooms.py --mics 1,4 --clips 8 --json rooms.json

- The room is `sori test`'s ({room: {...}} in a manifest): 6 x 5 x 2.7 m, the array at
  (2.0, 1.5, 1.0) m, the talker `--distance-m` away at 60 deg, babble (the other clips at
  once; with one clip, the clip itself) 1.5 m away at 160 deg, `--babble-db` under the
  talker at the first microphone, from the talker's first word or `--lead-s` before it
  (a television on first; what it says alone is not held against the clips).
- Each size is heard as `sori test` hears it, with device/sori.example.toml's recognizer:
  `audio.channels` = microphones, `[audio.array] mic_positions_m` where the room puts
  them (3.2 cm radius; the front end's defaults: MVDR, the direction found per
  utterance), and `audio.dereverb` off or "spectral".
- CER: every clip's transcripts against the manifest's, spaces ignored, summed over the
  clips. Actions: the commands committed (the clips are read news, none a command: each
  is a device wrongly switched).
- RTF: the runs' wall time over their audio's, one process (the room's simulation, done
  once per clip and room, included).

Nothing is stored; every room is the same every run. pyroomacoustics is a test and
benchmark dependency (scripts/install.sh --test installs it).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "device"))

from sori.hearing.audio.room import mic_positions  # noqa: E402
from sori.testing.harness.manifest import load_manifest  # noqa: E402
from sori.testing.harness.runner import Runner  # noqa: E402

CLIPS = REPO.parent / "shared" / "audio" / "ko-read"


def config_text(mics: int, dereverb: str) -> str:
    """A config heard through `mics` microphones placed as the room places them."""
    audio = f'[audio]\ndereverb = "{dereverb}"\n'
    if mics == 1:
        return audio
    positions = ", ".join(f"[{x!r}, {y!r}, {z!r}]" for x, y, z in mic_positions(mics).tolist())
    return audio + f"channels = {mics}\n[audio.array]\nmic_positions_m = [{positions}]\n"


def manifest_text(config: Path, rows: list[dict], rooms: list[str]) -> str:
    fixtures = "".join(
        f"  - audio: {CLIPS / r['file']}\n"
        f"    expect: {{transcript: {json.dumps(r['transcript'], ensure_ascii=False)}, "
        "no_action: true}\n"
        for r in rows
    )
    augment = "".join(f"  - {room}\n" for room in rooms)
    return f"defaults: {{config: {config}, max_cer: 1.0}}\nfixtures:\n{fixtures}augment:\n{augment}"


def rooms_for(
    mics: int, rt60s: list[float], distance_m: float, babble_db: float, lead_s: float
) -> dict[str, str]:
    """The manifest's rooms by their column in the table: each RT60 quiet, and babble at
    RT60 0.4 s (or the middle RT60), on `lead_s` before the talker."""
    rooms = {
        f"RT60 {t:g} s": f"{{room: {{rt60: {t}, distance_m: {distance_m}, mics: {mics}}}}}"
        for t in rt60s
    }
    middle = 0.4 if 0.4 in rt60s else rt60s[len(rt60s) // 2]
    first = f" on {lead_s:g} s first" if lead_s else ""
    rooms[f"RT60 {middle:g} s, babble {babble_db:g} dB{first}"] = (
        f"{{room: {{rt60: {middle}, distance_m: {distance_m}, interferer: babble, "
        f"snr_db: {babble_db}, mics: {mics}, lead_s: {lead_s}}}}}"
    )
    return rooms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clips", type=int, default=4, help="the N shortest shared clips")
    parser.add_argument("--mics", default="1,2,4,6", help="array sizes, comma-separated")
    parser.add_argument("--rt60", default="0.2,0.4,0.8", help="reverberation times, seconds")
    parser.add_argument("--distance-m", type=float, default=2.0, help="talker to array")
    parser.add_argument("--babble-db", type=float, default=5.0, help="babble under the talker")
    parser.add_argument(
        "--lead-s", type=float, default=0.0, help="babble alone before the talker, seconds"
    )
    parser.add_argument("--dereverb", default="off,spectral", help="audio.dereverb values")
    parser.add_argument("--json", metavar="FILE", help="write every figure as JSON")
    args = parser.parse_args()
    if not (CLIPS / "manifest.tsv").exists():
        print(f"bench_rooms: no shared clips at {CLIPS}", file=sys.stderr)
        return 2
    with open(CLIPS / "manifest.tsv", encoding="utf-8") as f:
        rows = sorted(csv.DictReader(f, delimiter="\t"), key=lambda r: float(r["duration_s"]))
    rows = rows[: args.clips]
    rt60s = [float(t) for t in args.rt60.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="sori-bench-rooms-") as folder:
        for mics in [int(m) for m in args.mics.split(",")]:
            rooms = rooms_for(mics, rt60s, args.distance_m, args.babble_db, args.lead_s)
            for dereverb in args.dereverb.split(","):
                config = Path(folder) / f"sori-{mics}-{dereverb}.toml"
                config.write_text(config_text(mics, dereverb), encoding="utf-8")
                manifest = Path(folder) / f"rooms-{mics}-{dereverb}.yaml"
                manifest.write_text(manifest_text(config, rows, [*rooms.values()]), "utf-8")
                runner = Runner(load_manifest(manifest))
                for a, label in enumerate(rooms, start=1):  # 0 is the clean run, no room
                    started, audio_s, errors, chars, actions = time.perf_counter(), 0.0, 0, 0, 0
                    for i, row in enumerate(rows):
                        run = runner.run(i, a)
                        said = len(row["transcript"].replace(" ", ""))
                        errors += round(run["cer"] * said)
                        chars += said
                        actions += run["false_actions"]
                        audio_s += run["audio_s"]
                    result = {
                        "mics": mics, "dereverb": dereverb, "room": label,
                        "cer": round(errors / chars, 3), "actions": actions,
                        "rtf": round((time.perf_counter() - started) / audio_s, 3),
                    }  # fmt: skip
                    results.append(result)
                    print(json.dumps(result, ensure_ascii=False), file=sys.stderr, flush=True)
    rooms = list(dict.fromkeys(r["room"] for r in results))
    print("| microphones | dereverb | " + " | ".join(rooms) + " |")
    print("|---|---|" + "---|" * len(rooms))
    for mics, dereverb in dict.fromkeys((r["mics"], r["dereverb"]) for r in results):
        cells = [
            f"{r['cer']:.3f} / {r['actions']}"
            for r in results
            if (r["mics"], r["dereverb"]) == (mics, dereverb)
        ]
        print(f"| {mics} | {dereverb} | " + " | ".join(cells) + " |")
    print("\nCER / actions; RTF per run (wall over audio, one process): "
          f"{min(r['rtf'] for r in results):.2f}-{max(r['rtf'] for r in results):.2f}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
