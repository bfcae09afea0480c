"""Who the assistant is listening to: the wake phrase, listening and follow-up windows,
mute. The turn logic between hearing and the daemon.

With wake enabled, an utterance becomes a turn only when it opens with a wake phrase
("소리야 불 켜줘": the command after the phrase is understood), or when it begins inside
a window:
- a listening window of `listen_s` after a wake phrase alone (or `POST /listen`);
- a follow-up window of `follow_up_s` after a reply, for a command without the phrase.
Anything else (the TV, a conversation in the room) is ignored: no turn, no reply.
Muted, nothing reaches the recognizer; the state is kept in a small file across restarts.

Live, `echo` is what Sori's speaker played (`sori.hearing.audio.played`): while Sori speaks, the
hearing pipeline listens for the wake phrase all through an utterance, since the reply and
a user's "소리야" over it are one utterance to the voice detector.

Windows are counted on the hearing stream's clock (for a microphone, the daemon's clock).
A live microphone's follow-up window opens when the reply has been spoken; with a file as
input, where the reply is never heard, it opens at the end of the utterance that made
the turn.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from sori.core.files import read_json, replace_file, set_aside
from sori.hearing.audio.played import PlayedAudio

log = logging.getLogger(__name__)

S = 1_000_000_000
MAX_STATE_BYTES = 4096
"""A wake state file larger than this is not one Sori wrote (it writes one short line)."""


class Conversation:
    """The listening state the hearing pipeline consults (`is_open`, `muted`) and the
    daemon updates (`woke`, `heard`, `replied`, `listen`, `mute`)."""

    def __init__(
        self,
        *,
        gated: bool,
        listen_s: float = 5.0,
        follow_up_s: float = 4.0,
        live: bool = True,
        muted: bool = False,
        state_file: str | Path | None = None,
    ) -> None:
        self.gated = gated
        """Whether a turn needs the wake phrase or a window; False: every utterance is one."""
        self.listen_ns = int(listen_s * S)
        self.follow_up_ns = int(follow_up_s * S)
        self.live = live
        self.state_path = Path(state_file).expanduser() if state_file else None
        self.open_until_ns = 0
        """Stream time until which an utterance that begins is heard as a command."""
        self.wakes = 0
        self.echo: PlayedAudio | None = None
        """What Sori's speaker played into the room the microphone hears (live only; set
        by the daemon's builder)."""
        self._lock = threading.Lock()  # hearing runs on a worker thread
        self.muted = self._load_muted(muted)

    # -- asked by the hearing pipeline -----------------------------------------------------

    def is_open(self, t_ns: int) -> bool:
        """Whether an utterance beginning at stream time `t_ns` is heard as a command."""
        return not self.gated or t_ns < self.open_until_ns

    # -- told by the daemon ----------------------------------------------------------------

    def woke(self, end_ns: int) -> None:
        """A wake phrase ended at stream time `end_ns`: listen for `listen_s`."""
        with self._lock:
            self.wakes += 1
            self.open_until_ns = max(self.open_until_ns, end_ns + self.listen_ns)

    def close_window(self) -> None:
        """The window a wake phrase opened closes: another speaker answers it."""
        with self._lock:
            self.open_until_ns = 0

    def listen(self, now_ns: int) -> None:
        """Push-to-talk (`POST /listen`): listen for `listen_s` from now."""
        with self._lock:
            self.open_until_ns = max(self.open_until_ns, now_ns + self.listen_ns)

    def heard(self, speech_end_ns: int) -> None:
        """An utterance made a turn. Live, the window closes until the reply has been
        spoken (the speaker's own voice is no command); from a file, the follow-up window
        opens at once."""
        with self._lock:
            if self.live:
                self.open_until_ns = 0
            else:
                self.open_until_ns = speech_end_ns + self.follow_up_ns if self.follow_up_ns else 0

    def replied(self, now_ns: int) -> None:
        """A turn's reply has been spoken: a live follow-up window opens."""
        if self.live and self.follow_up_ns:
            with self._lock:
                self.open_until_ns = max(self.open_until_ns, now_ns + self.follow_up_ns)

    def mute(self, muted: bool = True) -> None:
        """Mute (nothing reaches the recognizer) or unmute; kept in the state file."""
        with self._lock:
            self.muted = muted
            if muted:
                self.open_until_ns = 0
        self._save()
        log.info("%s", "muted" if muted else "unmuted")

    def state(self, now_ns: int) -> dict[str, Any]:
        """For /health: muted, gated, and how long the window stays open (0: closed)."""
        left = max(0, self.open_until_ns - now_ns) if self.gated else 0
        return {
            "muted": self.muted,
            "wake": self.gated,
            "listening_s": round(left / S, 3),
            "wakes": self.wakes,
        }

    # -- the state file --------------------------------------------------------------------

    def _load_muted(self, default: bool) -> bool:
        """The muted flag of the state file; `default` when there is none. A damaged file
        (empty, cut short, `"muted": "false"`) is set aside and logged: a string is never
        taken for true, and start-up goes on."""
        if self.state_path is None or not self.state_path.exists():
            return default
        try:
            data = read_json(self.state_path, MAX_STATE_BYTES)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            muted = data.get("muted", default)
            if not isinstance(muted, bool):
                raise ValueError(f"muted must be true or false, got {muted!r:.40}")
            return muted
        except (OSError, ValueError) as exc:
            instead = f"starting {'muted' if default else 'unmuted'} (wake.muted)"
            set_aside(self.state_path, str(exc), instead)
            return default

    def _save(self) -> None:
        if self.state_path is None:
            return
        try:
            self.state_path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(self.state_path, json.dumps({"muted": self.muted}) + "\n")
        except OSError as exc:  # the state still changes; only the restart forgets it
            log.error("cannot keep the muted state in %s: %s", self.state_path, exc)
