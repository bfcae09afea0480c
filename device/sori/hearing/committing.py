"""What an utterance's words commit to, and when: the intent half of the hearing pipeline.

`sori.hearing.pipeline.Hearing` feeds the recognizer and keeps one `Turn` per open utterance; a
`Committer` matches the turn's words against the presets (an `Understanding`) and says
which intent the turn commits to:

- Early, from the partial hypothesis: when it is a complete command (`match`, confidence
  at least `CommitSettings.min_confidence`), its Korean sentence-final form is closed
  (`is_closed`) and the endpointer has heard `silence_ms` of trailing silence, the intent
  is committed at once (`IntentCommitted(early=True)`) instead of after the recognizer's
  final result. A hypothesis of a recognizer's phrase-constrained pass (source "grammar",
  with an `lr_score`) has passed the recognizer's likelihood-ratio test and its second
  check (the free-form pass heard much the same), which then stand in for the confidence
  floor. A partial that ends in a connective (켜고, 그리고, 이랑)
  holds the turn: the final transcript decides.
- On the final transcript: the intent it matches (`IntentCommitted`), or, after an early
  commit that the final transcript contradicts, `IntentCorrected`; else
  `IntentNotRecognized`.

It also says when a pause should be flushed through the recognizer (`wants_flush`): at a
pause's first silent frame, and again while the partial is empty or a command whose
closing word has not appeared.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from sori.core.clock import Clock
from sori.core.events import Event, IntentCommitted, IntentCorrected, IntentNotRecognized
from sori.hearing.audio.format import AudioFrame
from sori.hearing.stt.base import Hypothesis, RecognizerStream
from sori.understanding.intents.splitting import continues

MS = 1_000_000


class Understanding(Protocol):
    """What the pipeline needs from preset understanding (`sori.understanding.intents.Presets`)."""

    def match(self, text: str) -> Any:
        """An IntentMatch-like result (intent, slots, confidence, response) or None."""
        ...

    def is_closed(self, text: str) -> bool:
        """True when `text` ends in a closed sentence-final form."""
        ...


@dataclass(frozen=True, slots=True)
class CommitSettings:
    """When a partial hypothesis may be acted on."""

    early: bool = True
    """Commit from partial hypotheses at all."""
    silence_ms: int = 40
    """Trailing silence the endpointer must have heard first, in milliseconds."""
    min_confidence: float = 0.9
    """Least preset match confidence for an early commit, in [0, 1]."""
    flush_steps: int = 2
    """How many times a pause may be flushed while no commit is possible yet."""
    flush_ms: int = 120
    """Silence fed to the recognizer ahead of time when a pause begins while the partial is
    empty or an unclosed command, in milliseconds, so a chunked decoder shows its hypothesis
    up to the end of speech at once; the same amount of real silence that follows is then
    not fed again. 0 = off."""


@dataclass
class Turn:
    """Bookkeeping of one open utterance."""

    utterance_id: int
    stream: RecognizerStream
    speech_start_ns: int
    partial: str = ""
    hyp: Hypothesis | None = None
    """The hypothesis `partial` came from."""
    committed: IntentCommitted | None = None
    commit_t_ns: int | None = None
    commit_speech_end_ns: int | None = None
    """Where the trailing silence an early commit waited on began: the end of speech that
    commit follows (clock-comparable stream time)."""
    audio_ns: int = 0
    flushes: int = 0
    held: bool = False
    """A partial ended in a connective (켜고, 그리고, 이랑): no early commit in this
    utterance; the final transcript decides."""
    pad_credit_ns: int = 0
    quiet: deque[AudioFrame] = field(default_factory=deque)
    """Quiet frames the recognizer has not heard yet (sori.hearing.pipeline.QUIET_HOLD_MS)."""
    busy_ns: dict[str, int] = field(default_factory=lambda: {"vad": 0, "stt": 0, "understand": 0})


class Committer:
    """Matches one turn at a time against `understanding` (see the module docstring)."""

    def __init__(
        self, understanding: Understanding | None, settings: CommitSettings, clock: Clock
    ) -> None:
        self.understanding = understanding
        """None: nothing is matched (transcripts only)."""
        self.settings = settings
        self.clock = clock
        self._matches: dict[str, tuple[Any, bool]] = {}

    def begin(self) -> None:
        """A new turn: matches of the last one are forgotten."""
        self._matches.clear()

    def match(self, turn: Turn, text: str) -> tuple[Any, bool]:
        """(match or None, closed), cached per text within the turn."""
        if self.understanding is None or not text:
            return None, False
        if text not in self._matches:
            t0 = time.perf_counter_ns()
            found = self.understanding.match(text)
            closed = found is not None and self.understanding.is_closed(text)
            turn.busy_ns["understand"] += time.perf_counter_ns() - t0
            self._matches[text] = (found, closed)
        return self._matches[text]

    def wants_flush(self, turn: Turn) -> bool:
        """A pause began: flush at once, so the hypothesis has caught up by the time the
        silence gate opens (a closed command too, so "거실 불 켜" still becomes "거실 불
        켜고" when the decoder holds the ending back); again only while the partial is
        empty or a command whose closing word has not appeared."""
        if not self.settings.flush_ms or turn.flushes >= self.settings.flush_steps:
            return False
        found, closed = self.match(turn, turn.partial)
        lagging = not turn.partial or (found is not None and not closed)
        return turn.flushes == 0 or lagging

    def early(self, turn: Turn, silence_ns: int) -> IntentCommitted | None:
        """The commit the turn's partial makes after `silence_ns` of trailing silence, or
        None (not yet, or not from a partial)."""
        if turn.held or continues(turn.partial):  # "거실 불 켜고 …": the final decides
            turn.held = True
            return None
        if silence_ns < self.settings.silence_ms * MS or not turn.partial:
            return None
        found, closed = self.match(turn, turn.partial)
        if found is None or not closed:
            return None
        # A phrase-constrained hypothesis reaches here only when it passed the recognizer's
        # likelihood-ratio test, which stands in for the match-confidence floor: the text is
        # one of the phrases, and the ratio says the audio was that phrase.
        hyp = turn.hyp
        constrained = hyp is not None and hyp.source == "grammar" and hyp.lr_score is not None
        if found.confidence < self.settings.min_confidence and not constrained:
            return None
        return self._committed(turn, turn.partial, found, True, hyp.lr_score if hyp else None)

    def final(self, turn: Turn, final: Hypothesis, audio_end_ns: int) -> tuple[list[Event], int]:
        """What the final transcript commits to (`IntentCommitted`, `IntentCorrected` or
        `IntentNotRecognized`), and the end of speech the standing commit follows: for an
        early commit that stands, where the silence it waited on began (noise heard later
        may keep the utterance open past the commit); else the utterance's end."""
        found, _ = self.match(turn, final.text)
        previous = turn.committed
        if previous is None:
            if found is None:
                unknown = IntentNotRecognized(self.clock.now_ns(), turn.utterance_id, final.text)
                return [unknown], audio_end_ns
            committed = self._committed(turn, final.text, found, False, final.lr_score)
            turn.commit_t_ns = committed.t_ns
            return [committed], audio_end_ns
        same = found is not None and (found.intent, dict(found.slots)) == (
            previous.intent,
            previous.slots,
        )
        if same:
            waited_on = turn.commit_speech_end_ns
            return [], audio_end_ns if waited_on is None else min(waited_on, audio_end_ns)
        replacement = (
            self._committed(turn, final.text, found, False, final.lr_score) if found else None
        )
        turn.commit_t_ns = replacement.t_ns if replacement else None
        corrected = IntentCorrected(self.clock.now_ns(), turn.utterance_id, previous, replacement)
        return [corrected], audio_end_ns

    def _committed(
        self, turn: Turn, text: str, found: Any, early: bool, lr_score: float | None
    ) -> IntentCommitted:
        return IntentCommitted(
            self.clock.now_ns(),
            turn.utterance_id,
            text,
            found.intent,
            dict(found.slots),
            float(found.confidence),
            found.response,
            early,
            lr_score,
        )
