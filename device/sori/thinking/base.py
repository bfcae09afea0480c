"""What the thinking tiers share: requests, tokens, judgments, protocols, errors, memory.

The router knows the tiers only through the protocols here, so a preset matcher, a
llama.cpp model, an edge client or a test double all plug in the same way:

    PresetTier   text → PresetHit | None          (the preset matcher, injected)
    LocalTier    judge(Ask) → Judgment;  stream(Ask) → Token…
    EdgeTier     stream(Ask) → Token…             (raises EdgeUnavailable / EdgeInterrupted)

Errors (all `BackendError`, so callers that catch Sori errors see them):

    TierFailed          a tier could not answer; `reason` says why in a few words
    ├── EdgeUnavailable   no edge endpoint produced a first token (down, slow, refused)
    └── EdgeInterrupted   an edge stream broke after tokens had been sent; `partial` holds them
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sori.core.errors import BackendError

LOCAL = "local"
"""`Token.source` of tokens from the on-device model."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One finished exchange, kept as conversation memory."""

    user: str
    """What the user said."""
    assistant: str
    """What Sori answered (the spoken text)."""


class Memory:
    """The last few turns, shared by every tier so follow-ups make sense."""

    def __init__(self, max_turns: int = 4) -> None:
        self._turns: deque[Turn] = deque(maxlen=max(max_turns, 0))

    def add(self, user: str, assistant: str) -> None:
        if self._turns.maxlen:
            self._turns.append(Turn(user, assistant))

    def turns(self) -> tuple[Turn, ...]:
        return tuple(self._turns)

    def clear(self) -> None:
        self._turns.clear()


@dataclass(frozen=True, slots=True)
class Ask:
    """A request to a language-model tier: answer (or read) this text."""

    text: str
    """The user's words."""
    history: tuple[Turn, ...] = ()
    """Conversation memory, oldest first."""
    language: str = "ko"
    """Language to answer in: "ko" or "en"."""
    deep: bool = False
    """The router marked this turn as deep reasoning; the edge may enable thinking."""
    first_token_timeout_s: float | None = None
    """Seconds left for the first answer token; None for the tier's own limits."""


@dataclass(frozen=True, slots=True)
class Token:
    """A piece of answer text as it arrives from a tier."""

    text: str
    """The text; never reasoning, which is not spoken."""
    source: str = LOCAL
    """`LOCAL`, or the URL of the edge endpoint that produced it."""


@dataclass(frozen=True, slots=True)
class Judgment:
    """The local model's constrained reading of a turn the presets missed."""

    intent: str | None
    """Home Assistant intent the text was mapped to; None for "none"."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Slot values of the intent (area and name as the home's canonical names)."""
    escalate: bool = False
    """The model's own view: answering needs reasoning beyond it (edge)."""
    confidence: float = 0.0
    """Geometric mean probability the unconstrained model gave the intent's tokens, in [0, 1]."""
    raw: str = ""
    """The JSON exactly as generated."""
    elapsed_ms: float = 0.0
    """Time the judgment took."""


class PresetHit(Protocol):
    """What the router needs from a preset match (`sori.understanding.intents.IntentMatch` fits)."""

    intent: str
    slots: dict[str, Any]
    confidence: float
    response: str


PresetTier = Callable[[str], PresetHit | None]
"""The preset matcher, injected by the caller: text → a match or None."""


class LocalTier(Protocol):
    """The on-device model: reads intents with constrained decoding and answers briefly."""

    async def judge(self, ask: Ask) -> Judgment: ...

    def stream(self, ask: Ask) -> AsyncIterator[Token]: ...


class EdgeTier(Protocol):
    """Edge servers: stream an answer, failing over between endpoints inside."""

    def stream(self, ask: Ask) -> AsyncIterator[Token]: ...


@dataclass(frozen=True, slots=True)
class HomeAnswer:
    """What Home Assistant's conversation agent made of a turn it understood."""

    speech: str
    """Its spoken answer (response.speech.plain.speech)."""
    done: tuple[str, ...] = ()
    """Entity ids it acted on (response.data.success)."""
    failed: tuple[str, ...] = ()
    """Entity ids it failed to act on (response.data.failed)."""
    kind: str = "action_done"
    """response.response_type: action_done or query_answer."""


class HomeTier(Protocol):
    """Home Assistant's conversation agent: a turn it understands, it carries out and
    answers; None when it did not understand (or cannot be reached)."""

    async def converse(self, ask: Ask) -> HomeAnswer | None: ...


class TierFailed(BackendError):
    """A tier could not answer."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EdgeUnavailable(TierFailed):
    """No edge endpoint produced a first token: all down, slow, refusing or out of rotation."""


class EdgeInterrupted(TierFailed):
    """An edge stream broke after some answer text had already been sent."""

    def __init__(self, reason: str, partial: str, endpoint: str) -> None:
        super().__init__(reason)
        self.partial = partial
        self.endpoint = endpoint
