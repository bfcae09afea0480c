#!/usr/bin/env python3
"""A recorded amixer interface (no ALSA card here: no /proc/asound, no snd-dummy): answers
`amixer -D DEV [-q] sget|sset CONTROL [N%|N%+|N%-|mute|unmute]...` in amixer 1.2's output
format, keeping the level in the JSON file $FAKE_AMIXER_STATE, and logs each call. With
$FAKE_AMIXER_FIRST_SGET_S set, the first `sget` answers that many seconds late, with the
level as it was when asked (a card slow to answer while the level changes meanwhile).
Tests put it in place with `install`."""

import json
import os
import sys
import time
from pathlib import Path


def install(folder: Path, monkeypatch, device: str, control: str) -> tuple[Path, Path]:
    """Put an `amixer` program in `folder` that runs this fake on a card `device` with a
    `control` at 40 %, on; return the program and its JSON state file."""
    state = folder / "mixer.json"
    state.write_text(json.dumps({"device": device, "control": control, "level": 40, "on": True}))
    monkeypatch.setenv("FAKE_AMIXER_STATE", str(state))
    program = folder / "amixer"
    program.write_text(f'#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} "$@"\n')
    program.chmod(0o755)
    return program, state


def main() -> None:
    state_path = os.environ["FAKE_AMIXER_STATE"]
    with open(state_path) as file:
        state = json.load(file)
    args = sys.argv[1:]
    log_path = Path(state_path + ".log")
    first_sget = "sget" in args and "sget" not in (
        log_path.read_text() if log_path.exists() else ""
    )
    with open(log_path, "a") as log:
        log.write(" ".join(args) + "\n")
    device = args[args.index("-D") + 1]
    rest = [a for a in args[args.index("-D") + 2 :] if a != "-q"]
    control, values = rest[1], rest[2:]  # sget and sset differ only in having values
    if device != state["device"]:
        print(f"amixer: Mixer attach {device} error: No such file or directory", file=sys.stderr)
        sys.exit(1)
    if control != state["control"]:
        print(f"amixer: Unable to find simple control '{control}',0", file=sys.stderr)
        sys.exit(1)
    for value in values:
        if value in ("mute", "unmute"):
            state["on"] = value == "unmute"
        elif value.endswith("%"):
            state["level"] = max(0, min(100, int(value[:-1])))
    with open(state_path, "w") as file:
        json.dump(state, file)
    if first_sget and os.environ.get("FAKE_AMIXER_FIRST_SGET_S"):
        time.sleep(float(os.environ["FAKE_AMIXER_FIRST_SGET_S"]))
    raw = state["level"] * 65536 // 100
    switch = "on" if state["on"] else "off"
    if "-q" not in args:
        print(f"Simple mixer control '{control}',0")
        print("  Capabilities: pvolume pswitch pswitch-joined")
        print("  Playback channels: Front Left - Front Right")
        print("  Limits: Playback 0 - 65536")
        print("  Mono:")
        print(f"  Front Left: Playback {raw} [{state['level']}%] [{switch}]")
        print(f"  Front Right: Playback {raw} [{state['level']}%] [{switch}]")


if __name__ == "__main__":
    main()
