"""Typed events that flow between stages: audio → hearing → understanding → actions and speech.

Standard library only. Every event is a frozen, slotted dataclass stamped with `t_ns`,
monotonic nanoseconds from the pipeline's clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class SpeechStarted:
    """The endpointer heard the start of an utterance."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Counts utterances within one stream, from 0."""
    audio_start_ns: int
    """Stream time of the first voiced frame (pre-roll excluded), in nanoseconds."""
    doa_deg: float | None = None
    """Direction the talker spoke from, in degrees counter-clockwise from the microphone
    array's +x axis (sori.hearing.audio.array); None with one microphone."""


@dataclass(frozen=True, slots=True)
class SpeechStopped:
    """The endpointer decided the utterance is over."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance ended."""
    audio_end_ns: int
    """Stream time of the end of the last voiced frame, in nanoseconds."""


@dataclass(frozen=True, slots=True)
class TranscriptPartial:
    """The recognizer's current hypothesis changed."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance this hypothesis belongs to."""
    text: str
    """The hypothesis so far."""


@dataclass(frozen=True, slots=True)
class TranscriptFinal:
    """The recognizer's final result for an utterance."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance was transcribed."""
    text: str
    """The final transcript."""
    confidence: float = 1.0
    """Recognizer confidence in [0, 1]; 1.0 when the backend gives none."""
    lr_score: float | None = None
    """Constrained minus free-form decode score per second of audio (see
    `sori.hearing.stt.base.Hypothesis.lr_score`); None when no constrained pass scored it."""


@dataclass(frozen=True, slots=True)
class IntentCommitted:
    """Understanding acted on an utterance: a preset intent is final."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance was understood."""
    text: str
    """The text the intent was matched on."""
    intent: str
    """Home Assistant intent name, e.g. "HassTurnOn"."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Slot values; area and name as canonical names."""
    confidence: float = 1.0
    """Match confidence in [0, 1]."""
    response: str = ""
    """The spoken reply."""
    early: bool = False
    """True when committed from a partial hypothesis before the final transcript."""
    lr_score: float | None = None
    """Score per second of the hypothesis committed on, constrained minus free-form decode
    (see `sori.hearing.stt.base.Hypothesis.lr_score`); None when not scored."""


@dataclass(frozen=True, slots=True)
class FollowUpResolved:
    """A follow-up ("안방도", "다시 꺼줘", "더 밝게") was read as a full command using the
    context an earlier turn left; the IntentCommitted that follows carries the result."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """The follow-up's utterance."""
    text: str
    """What was said."""
    form: str
    """Which follow-up form: "also", "again", "that", "brighter" or "darker"."""
    context_utterance_id: int
    """The earlier turn whose intent and targets were used."""
    context_text: str
    """What was said in that earlier turn."""
    intent: str
    """The intent it was resolved to."""
    slots: dict[str, Any] = field(default_factory=dict)
    """The slots it was resolved to."""


@dataclass(frozen=True, slots=True)
class IntentCorrected:
    """A final transcript contradicted an early commit."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance was corrected."""
    previous: IntentCommitted
    """The early commit that turned out wrong."""
    replacement: IntentCommitted | None
    """What the final transcript means instead; None when it matches no preset."""


@dataclass(frozen=True, slots=True)
class IntentNotRecognized:
    """No preset matched; the turn falls through to the language-model tiers."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance was not recognized."""
    text: str
    """The text that matched nothing."""


@dataclass(frozen=True, slots=True)
class ActionFinished:
    """A handler finished acting on one target (a device, or the speaker itself)."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance's intent was acted on."""
    intent: str
    """Home Assistant intent name."""
    handler: str
    """Handler that acted: "mqtt", "home_assistant", "webhook", "shell", "dry_run", "local"."""
    target: str = ""
    """Entity id acted on; empty for intents the speaker handles itself (timers, time)."""
    ok: bool = True
    """False when the handler failed or timed out."""
    detail: str = ""
    """What was sent, or what went wrong."""
    speech: str = ""
    """A reply computed by the handler (the time, a timer's state); replaces the preset's."""
    elapsed_ns: int = 0
    """How long the handler took, in nanoseconds."""
    unconfirmed: bool = False
    """True when the command was sent but not confirmed by its deadline (ok is False then):
    it may or may not have been carried out, and nothing more of it is sent."""


@dataclass(frozen=True, slots=True)
class PlaybackStarted:
    """The first audio of a reply reached the speaker (or the output file)."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance is being answered."""
    text: str
    """What is being said."""
    cached: bool = False
    """True when the audio came from the fixed-reply cache."""


@dataclass(frozen=True, slots=True)
class PlaybackStopped:
    """A reply finished playing, or was cut off."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance was being answered."""
    interrupted: bool = False
    """True when barge-in (or shutdown) stopped it early."""
    audio_ns: int = 0
    """Length of the audio played, in nanoseconds."""


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """A turn is over: heard (or typed), understood, acted on and answered."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance the turn answered."""
    text: str
    """What the user said."""
    intent: str = ""
    """Intent acted on; empty when none."""
    tier: str = ""
    """Who understood it: "preset", "local", "edge", or "none"."""
    response: str = ""
    """What the speaker said."""
    stages_ns: dict[str, int] = field(default_factory=dict)
    """Duration of each stage, in nanoseconds ("understand", "act", "first_audio", ...)."""
    error: str = ""
    """What went wrong, if anything."""


@dataclass(frozen=True, slots=True)
class UtteranceHeard:
    """Hearing is done with an utterance: its timeline and where the time went (the trace)."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance."""
    text: str
    """The final transcript."""
    speech_start_ns: int
    """Stream time of the first voiced frame, in nanoseconds."""
    speech_end_ns: int
    """Stream time of the end of speech the commit follows, in nanoseconds: for an early
    commit that stands, where the trailing silence it waited on began; otherwise the end
    of the utterance's last voiced frame. Never after `commit_t_ns`."""
    stopped_t_ns: int
    """Clock time the endpointer ended the utterance, in nanoseconds (or Sori's answer
    to the committed command began, which ends the turn: `sori.hearing.pipeline`)."""
    final_t_ns: int
    """Clock time of the final transcript, in nanoseconds."""
    commit_t_ns: int | None = None
    """Clock time a preset intent was committed (early or not); None when none was."""
    stages_ns: dict[str, int] = field(default_factory=dict)
    """Processing time spent per stage on this utterance ("vad", "stt", "understand"), and
    "audio", the length of the audio fed to the recognizer, all in nanoseconds."""
    lr_score: float | None = None
    """Score per second of the final transcript, constrained minus free-form decode (see
    `sori.hearing.stt.base.Hypothesis.lr_score`); None when not scored."""
    doa_deg: float | None = None
    """Direction the talker spoke from, in degrees counter-clockwise from the microphone
    array's +x axis, as the beam held it for the utterance; None with one microphone."""
    constrained: bool = False
    """The final transcript is the phrase-constrained pass's: it passed the recognizer's
    tests (the likelihood ratio asked of it, in noise the higher one, and the second
    check), where otherwise the free-form text stands."""


@dataclass(frozen=True, slots=True)
class AnswerStarted:
    """A language-model tier began answering a turn (or took over after another failed)."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance is being answered."""
    tier: str
    """Who answers: "local" or "edge"."""
    reason: str = ""
    """Why this tier answers."""


@dataclass(frozen=True, slots=True)
class AnswerChunk:
    """Answer text as it streams from a tier (reasoning text is never included)."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance is being answered."""
    text: str
    """The new text."""
    source: str = "local"
    """"local", or the URL of the edge endpoint that produced it."""


@dataclass(frozen=True, slots=True)
class AnswerSentence:
    """A complete sentence of the answer, ready to be spoken."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance is being answered."""
    text: str
    """The sentence."""
    index: int = 0
    """Position in the answer, from 0."""


@dataclass(frozen=True, slots=True)
class AnswerStopped:
    """The answer is complete, or was cut off."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance was answered."""
    text: str
    """The whole answer as spoken."""
    interrupted: bool = False
    """True when a deadline or a broken stream cut it short."""


@dataclass(frozen=True, slots=True)
class TurnRouted:
    """Understanding is done with a turn: which tier answered, why, and how fast."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """Which utterance."""
    text: str
    """What the user said."""
    tier: str
    """Who answered: "preset", "local", "edge", or "none"."""
    reason: str
    """Why that tier answered (rules fired, judgments, failures and fallbacks)."""
    intent: str | None = None
    """The committed intent, if the turn was a command; None for answers."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Slot values of the intent."""
    answer: str = ""
    """The spoken answer or the intent's response."""
    endpoint: str = ""
    """URL of the edge endpoint that answered; empty when none did."""
    ttft_ns: int | None = None
    """Turn start to the first model token (or to the commit), in nanoseconds."""
    first_sentence_ns: int | None = None
    """Turn start to the first complete sentence, in nanoseconds."""
    total_ns: int = 0
    """Turn start to the end of the answer, in nanoseconds."""


@dataclass(frozen=True, slots=True)
class WakeDetected:
    """A wake phrase was heard at the start of an utterance."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """The utterance it opens."""
    phrase: str
    """The configured phrase heard (`[wake] phrases`)."""
    start_ns: int
    """Stream time where the phrase begins, in nanoseconds."""
    end_ns: int
    """Stream time where the phrase ends, in nanoseconds."""
    score: float
    """The detector's decision score (phrase backend: likelihood ratio per second)."""
    snr_db: float = 0.0
    """How far the phrase's speech band stood above the room measured before the utterance
    (the denoise decision's), in dB: the speakers that heard the same phrase compare it
    (`[wake] arbitrate`), and the nearest one answers."""


@dataclass(frozen=True, slots=True)
class WakeHeard:
    """A wake phrase was heard while Sori speaks, and is being told from Sori's own voice:
    `WakeDetected` or `WakeDismissed` follows, with the next frame. The daemon ducks the
    reply meanwhile, so the user is answered at once."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """The utterance it was heard in."""
    phrase: str
    """The configured phrase heard (`[wake] phrases`)."""


@dataclass(frozen=True, slots=True)
class WakeDismissed:
    """The phrase of the last `WakeHeard` was Sori's own voice: nothing woke."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """The utterance it was heard in."""
    phrase: str
    """The configured phrase that Sori itself said."""


@dataclass(frozen=True, slots=True)
class WakeListenEnded:
    """The wake detector stopped listening in this utterance without hearing a phrase: a
    phrase begins an utterance, and this one's start is over. No phrase wakes Sori before
    the next utterance, unless the speaker sounds first (then it listens again,
    `sori.hearing.wake_gate`). Another speaker's claim of a phrase finds this one unable
    to hear it, and is passed on at once (`[wake] arbitrate`)."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """The utterance no longer listened to."""


@dataclass(frozen=True, slots=True)
class WakeYielded:
    """Another speaker heard the same wake phrase clearer and answers it
    (`[wake] arbitrate`): this one plays nothing and acts on nothing it opened."""

    t_ns: int
    """When the event was emitted, in clock nanoseconds."""
    utterance_id: int
    """The utterance the phrase opened."""
    phrase: str
    """The configured phrase heard."""


Event = (
    SpeechStarted
    | SpeechStopped
    | TranscriptPartial
    | TranscriptFinal
    | IntentCommitted
    | IntentCorrected
    | FollowUpResolved
    | IntentNotRecognized
    | UtteranceHeard
    | ActionFinished
    | PlaybackStarted
    | PlaybackStopped
    | TurnFinished
    | AnswerStarted
    | AnswerChunk
    | AnswerSentence
    | AnswerStopped
    | TurnRouted
    | WakeDetected
    | WakeHeard
    | WakeDismissed
    | WakeListenEnded
    | WakeYielded
)
