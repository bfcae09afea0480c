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

    def start(self, cancellers: Sequence[EchoCanceller]) -> bool:
        """Start `cancellers` (one per microphone, in order) from the kept paths, when
        the file holds paths for this setup; whether it did."""
        stored = self._read()
        if stored is None:
            return False
        if stored.get("setup") != self.setup or len(stored.get("paths", ())) != len(cancellers):
            log.info("%s: learned for another setup; the echo canceller starts afresh", self.path)
            return False
        try:
            for canceller, encoded in zip(cancellers, stored["paths"], strict=True):
                taps = np.frombuffer(base64.b64decode(encoded, validate=True), "<f4")
                if not np.isfinite(taps).all():
                    raise ValueError("a tap that is not a number")
                canceller.start_from(taps.reshape(canceller.partitions, canceller.block))
        except (TypeError, ValueError) as exc:
            for canceller in cancellers:
                canceller.start_from(np.zeros((canceller.partitions, canceller.block)))
            set_aside(self.path, f"not an echo path ({exc})", "the canceller starts afresh")
            return False
        self._kept = [c.changes for c in cancellers]
        log.info("echo canceller starts from the path kept in %s", self.path)
        return True

    def keep(self, cancellers: Sequence[EchoCanceller]) -> threading.Thread | None:
        """Write the cancellers' paths when they learned since they were last written, in
        a thread of its own (a slow SD card never holds up the audio); the thread, or None
        when there was nothing new to write or a write is still going on."""
        changes = [c.changes for c in cancellers]
        if changes == self._kept or not any(changes):
            return None
        if not self._writing.acquire(blocking=False):
            return None
        self._kept = changes
        document = {
            "version": VERSION,
            "setup": self.setup,
            "paths": [
                base64.b64encode(c.echo_path().astype("<f4").tobytes()).decode() for c in cancellers
            ],
        }
        writer = threading.Thread(
            target=self._write, args=(document,), name="echo-path", daemon=True
        )
        writer.start()
        self._writer = writer
        return writer

    def wait(self, timeout_s: float = 5.0) -> None:
        """Until the path being written is in place (a stream that ends: a stop)."""
        if self._writer is not None:
            self._writer.join(timeout_s)

    def describe(self) -> str:
        """What the file holds for this setup, in a line (`sori doctor`), touching
        nothing: what `start` would find."""
        try:
            stored = read_json(self.path, MAX_BYTES)
        except FileNotFoundError:
            return "none kept yet: the first reply is cancelled as the filter learns"
        except (OSError, ValueError) as exc:
            return f"{self.path} cannot be used ({exc}): the next start sets it aside"
        if not isinstance(stored, dict) or stored.get("version") != VERSION:
            return f"{self.path} is not an echo path file: the next start sets it aside"
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
            log.warning(
                "cannot keep the echo path in %s (%s); the next start learns it again",
                self.path,
                exc,
            )
        finally:
            self._writing.release()

    def _read(self) -> dict[str, Any] | None:
        try:
            stored = read_json(self.path, MAX_BYTES)
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("cannot read %s (%s); the echo canceller starts afresh", self.path, exc)
            return None
        except ValueError as exc:
            set_aside(self.path, str(exc), "the echo canceller starts afresh")
            return None
        if not isinstance(stored, dict) or stored.get("version") != VERSION:
            set_aside(self.path, "not an echo path file", "the echo canceller starts afresh")
            return None
        return stored
