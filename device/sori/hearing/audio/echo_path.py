"""The echo path the cancellers learned, kept across restarts.

An echo canceller starting from nothing takes about 2 dB of Sori's voice out in the first
second of a reply and 25 dB by the fifth (sori.hearing.audio.echo_cancel), so after every
restart (an update, a power cut) a "소리야" said over the first reply was masked by it.
The path from Sori's speaker to its microphones is the room's and changes little: when the
cancellers fall quiet after a reply, the path they learned is written to a state file
(off the audio thread), and the next start begins from it.

The file is JSON: the setup it was learned for (the microphone, its channels, the frame),
and each microphone's impulse response as base64 float32. A file for another setup is
not used; one Sori cannot read is set aside (sori.core.files). A path that no longer
fits the room is mended or dropped by the canceller itself: scaled to the speaker's new
level, or to next to nothing when the speaker was moved or muted
(`EchoCanceller._rescale`), so a stale file costs a few blocks, never added echo.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sori.core.files import read_json, replace_file, set_aside
from sori.hearing.audio.echo_cancel import EchoCanceller

log = logging.getLogger(__name__)

FILE_NAME = "echo-path.json"
"""The state file's name, in Sori's state folder (sori.core.files.state_folder)."""
MAX_BYTES = 4_000_000
"""Larger than any array's paths (32 channels of 256 ms at 16 kHz, about 900 kB)."""
VERSION = 1


class EchoPathStore:
    """The state file at `path` for cancellers working in `setup` (a description of
    the microphones and the frame: a file learned for another is not used)."""

    def __init__(self, path: Path, setup: dict[str, Any]) -> None:
        self.path = path
        self.setup = setup
        self._kept: list[int] | None = None
        """Each canceller's `changes` when its path was last written."""
        self._writing = threading.Lock()
        self._writer: threading.Thread | None = None
        self._failed = False
        """A write failed and said so: a read-only folder would say it after every reply."""

    def start(self, cancellers: Sequence[EchoCanceller]) -> bool:
        """Start `cancellers` (one per microphone, in order) from the kept paths, when
        the file holds paths for this setup; whether it did."""
        try:
            stored, unusable = self._load()
        except OSError as exc:
            log.warning("cannot read %s (%s); the echo canceller starts afresh", self.path, exc)
            return False
        if unusable:
            set_aside(self.path, unusable, "the echo canceller starts afresh")
            return False
        if stored is None:
            return False
        if stored.get("setup") != self.setup or len(stored.get("paths", ())) != len(cancellers):
            log.info("%s: learned for another setup; the echo canceller starts afresh", self.path)
            return False
        try:
            paths = [
                decoded(encoded, canceller)
                for canceller, encoded in zip(cancellers, stored["paths"], strict=True)
            ]
        except (TypeError, ValueError) as exc:
            set_aside(self.path, f"not an echo path ({exc})", "the canceller starts afresh")
            return False
        for canceller, path in zip(cancellers, paths, strict=True):
            canceller.start_from(path)
        self._kept = [c.changes for c in cancellers]
        log.info("echo canceller starts from the path kept in %s", self.path)
        return True

    def keep(self, cancellers: Sequence[EchoCanceller]) -> None:
        """Write the cancellers' paths when they learned since they were last written, in
        a thread of its own (a slow SD card never holds up the audio); nothing when there
        is nothing new, or while a write is still going on."""
        changes = [c.changes for c in cancellers]
        if changes == self._kept or not any(changes):
            return
        if not self._writing.acquire(blocking=False):
            return
        self._kept = changes
        document = {
            "version": VERSION,
            "setup": self.setup,
            "paths": [
                base64.b64encode(c.echo_path().astype("<f4").tobytes()).decode() for c in cancellers
            ],
        }
        self._writer = threading.Thread(
            target=self._write, args=(document,), name="echo-path", daemon=True
        )
        self._writer.start()

    def finish(self, cancellers: Sequence[EchoCanceller]) -> None:
        """The stream has ended (a stop, perhaps during a reply): write what the
        cancellers learned since the last write, and wait until it is in place. A write
        begun at the reply's last pause is waited for first, or it would turn this one
        away."""
        self._wait()
        self.keep(cancellers)
        self._wait()

    def _wait(self, timeout_s: float = 5.0) -> None:
        """Until the path being written is in place."""
        if self._writer is not None:
            self._writer.join(timeout_s)

    def describe(self) -> str:
        """What the file holds for this setup, in a line (`sori doctor`), touching
        nothing: what `start` would find."""
        try:
            stored, unusable = self._load()
        except OSError as exc:
            return f"{self.path} cannot be read ({exc}): every start learns the path afresh"
        if unusable:
            return f"{self.path} cannot be used ({unusable}): the next start sets it aside"
        if stored is None:
            return "none kept yet: the first reply is cancelled as the filter learns"
        if stored.get("setup") != self.setup:
            return f"{self.path} was learned for another setup: the next start learns afresh"
        written = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.path.stat().st_mtime))
        paths = len(stored.get("paths", ()))
        return f"kept for this setup ({paths} microphone(s), {written}) in {self.path}"

    def _write(self, document: dict[str, Any]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(self.path, json.dumps(document))
        except OSError as exc:
            log.log(
                logging.DEBUG if self._failed else logging.WARNING,
                "cannot keep the echo path in %s (%s); the next start learns it again",
                self.path,
                exc,
            )
            self._failed = True
        finally:
            self._writing.release()

    def _load(self) -> tuple[dict[str, Any] | None, str]:
        """(the file's document, "") when it is an echo path file; (None, "") when there
        is none; (None, why) when it is no echo path file. An OSError when it cannot be
        read (it may be readable next time). Touches nothing."""
        try:
            stored = read_json(self.path, MAX_BYTES)
        except FileNotFoundError:
            return None, ""
        except ValueError as exc:
            return None, str(exc)
        if not isinstance(stored, dict) or stored.get("version") != VERSION:
            return None, "not an echo path file"
        return stored, ""


def decoded(encoded: Any, canceller: EchoCanceller) -> np.ndarray:
    """A path as `keep` wrote it, shaped for `canceller`; a ValueError (or TypeError)
    saying what is wrong with it."""
    taps = np.frombuffer(base64.b64decode(encoded, validate=True), "<f4")
    if not np.isfinite(taps).all():
        raise ValueError("a tap that is not a number")
    return taps.reshape(canceller.partitions, canceller.block)
