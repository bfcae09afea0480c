"""The committer alone: which intent a turn's words commit to, and when, with no audio."""

from __future__ import annotations

from sori.core.clock import FakeClock
from sori.core.events import IntentCommitted, IntentCorrected, IntentNotRecognized
from sori.hearing.committing import CommitSettings, Committer, Turn
from sori.hearing.stt.base import Hypothesis
from sori.understanding.intents import IntentMatch

MS = 1_000_000


class Lights:
    """거실 불 켜/꺼; closed when the text ends in 줘."""

    def match(self, text):
        for verb, intent in (("켜", "HassTurnOn"), ("꺼", "HassTurnOff")):
            if text.startswith(f"거실 불 {verb}"):
                return IntentMatch(intent, {"area": "거실"}, 1.0, "네", text)
        return None

    def is_closed(self, text):
        return text.endswith("줘")


def turn_saying(partial: str) -> Turn:
    turn = Turn(1, stream=None, speech_start_ns=0)  # the committer never feeds the stream
    turn.partial, turn.hyp = partial, Hypothesis(partial)
    return turn


def committer(**settings) -> Committer:
    return Committer(Lights(), CommitSettings(**settings), FakeClock())


def test_a_closed_command_commits_once_the_silence_is_long_enough():
    commits, turn = committer(silence_ms=40), turn_saying("거실 불 켜 줘")
    assert commits.early(turn, 20 * MS) is None
    committed = commits.early(turn, 40 * MS)
    assert isinstance(committed, IntentCommitted) and committed.early
    assert committed.intent == "HassTurnOn"


def test_an_open_ending_or_a_connective_waits_for_the_final_transcript():
    commits = committer()
    assert commits.early(turn_saying("거실 불 켜"), 500 * MS) is None
    held = turn_saying("거실 불 켜고")
    assert commits.early(held, 500 * MS) is None and held.held
    held.partial = "거실 불 켜 줘"  # held for the rest of the utterance
    assert commits.early(held, 500 * MS) is None


def test_a_final_transcript_that_means_something_else_corrects_the_early_commit():
    commits, turn = committer(), turn_saying("거실 불 켜 줘")
    turn.committed = commits.early(turn, 100 * MS)
    (corrected,), _ = commits.final(turn, Hypothesis("거실 불 꺼 줘"), 900 * MS)
    assert isinstance(corrected, IntentCorrected)
    assert corrected.replacement is not None and corrected.replacement.intent == "HassTurnOff"
    (unknown,), end_ns = committer().final(turn_saying(""), Hypothesis("음악 틀어"), 900 * MS)
    assert isinstance(unknown, IntentNotRecognized) and end_ns == 900 * MS


def test_a_flush_comes_at_a_pause_and_again_only_while_the_partial_lags():
    commits = committer(flush_steps=2)
    closed, lagging = turn_saying("거실 불 켜 줘"), turn_saying("거실 불 켜")
    assert commits.wants_flush(closed) and commits.wants_flush(lagging)
    closed.flushes = lagging.flushes = 1
    assert not commits.wants_flush(closed) and commits.wants_flush(lagging)
    lagging.flushes = 2
    assert not commits.wants_flush(lagging)
