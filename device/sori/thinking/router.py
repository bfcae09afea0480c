"""The tier router: preset, then local, then edge, under a latency budget; records why.

Each turn:
1. Presets first, every turn (follow-ups included). A match at or above `preset_threshold`
   is committed and nothing else runs.
2. Explicit rules: a long question, several questions, or words that ask for knowledge,
   length, planning or multi-step reasoning send the turn to the edge (planning words mark it
   *deep*: the edge may enable thinking).
3. Otherwise the local model reads the text under a grammar: a known intent (committed if
   its confidence reaches `local_intent_threshold`), or "none" with its own judgment of
   whether the answer needs reasoning (edge) or not (local answers).
3b. Home Assistant's conversation agent, when configured, gets what the local model did
   not commit (rules still go straight to the edge): what it understands it carries out,
   and its answer is spoken; what it does not goes on to the edge or the local answer.
4. The edge must produce a first token within what is left of `first_token_budget_ms`
   (at least `MIN_EDGE_S`); when no edge is reachable, or one breaks off midway, the local
   model answers and the user first hears a short note that the answer is from the device.

Answers stream as `AnswerChunk`s and become `AnswerSentence`s as sentences complete, so
speech can start on the first. The turn ends with `TurnRouted`: tier, reason, timings.
A short conversation memory is shared by the tiers; an answer sentence that recites the
prompt or repeats an earlier user's words is withheld (`sori.thinking.leaks`).

Imports only `thinking.base` and the pure `thinking.rules`, `thinking.sentences` and
`thinking.leaks` (no backends): presets, the local model and the edge client are injected.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from sori.core.clock import Clock, MonotonicClock
from sori.core.events import (
    AnswerChunk,
    AnswerSentence,
    AnswerStarted,
    AnswerStopped,
    Event,
    IntentCommitted,
    TurnRouted,
)
from sori.thinking.base import (
    Ask,
    EdgeInterrupted,
    EdgeTier,
    HomeAnswer,
    HomeTier,
    Judgment,
    LocalTier,
    Memory,
    PresetTier,
    TierFailed,
    Token,
)
from sori.thinking.leaks import leaks
from sori.thinking.rules import Rule, escalation_rule
from sori.thinking.sentences import SentenceSplitter, detect_language

log = logging.getLogger(__name__)

Force = Literal["auto", "preset", "local", "edge"]

MIN_EDGE_S = 1.0
"""The edge always gets at least this long for its first token, even when reading the turn
locally used up the budget."""

DEVICE_NOTE = {
    "ko": "서버에 연결할 수 없어서 기기에서 답할게요.",
    "en": "I can't reach the server, so this answer comes from the device.",
}
"""Spoken before a local answer to a question that should have gone to the edge."""

CANNOT_ANSWER = {
    "ko": "그건 제가 답하기 어려워요.",
    "en": "That's not something I can answer here.",
}
"""Said at once, instead of a local answer, when the local model does not answer open
questions (`RouterSettings.local_answers`)."""

CANNOT_REACH = {
    "ko": "서버에 연결할 수 없어서 지금은 답하기 어려워요.",
    "en": "I can't reach the server, so I can't answer that right now.",
}
"""Said instead of a local answer to an edge question when no edge answered and the local
model does not answer open questions."""

INTERRUPTED_NOTE = {
    "ko": "서버 연결이 끊겨서 기기에서 다시 답할게요.",
    "en": "The server connection broke, so the device answers instead.",
}
"""Spoken when an edge answer broke off midway and the local model takes over."""


@dataclass(frozen=True)
class RouterSettings:
    """Budgets, thresholds and rules (the `[router]` config)."""

    preset_threshold: float = 0.8
    local_intent_threshold: float = 0.3
    first_token_budget_ms: int = 3000
    local_deadline_ms: int = 15000
    memory_turns: int = 4
    escalate_min_chars: int = 90
    escalate_words: tuple[str, ...] = ()
    deep_words: tuple[str, ...] = ()
    language: str = "ko"
    """Answer language when the text shows none (digits only, say)."""
    device_note: dict[str, str] = field(default_factory=lambda: dict(DEVICE_NOTE))
    """Spoken before a device answer to an edge question, by language."""
    interrupted_note: dict[str, str] = field(default_factory=lambda: dict(INTERRUPTED_NOTE))
    """Spoken when an edge answer broke off and the device takes over, by language."""
    local_answers: bool = True
    """Whether the local model answers open questions (its measured answers are good
    enough); False: CANNOT_ANSWER (or CANNOT_REACH) is said at once instead. Forcing the
    local tier still asks it."""


@dataclass
class _Turn:
    """What a turn has produced so far."""

    utterance_id: int
    text: str
    started_ns: int
    tier: str = "none"
    reasons: list[str] = field(default_factory=list)
    intent: str | None = None
    slots: dict[str, Any] = field(default_factory=dict)
    answer: list[str] = field(default_factory=list)
    sentences: int = 0
    endpoint: str = ""
    first_token_ns: int | None = None
    first_sentence_ns: int | None = None
    earlier_users: tuple[str, ...] = ()
    """What earlier users said (the memory): an answer never repeats it."""
    withheld: list[str] = field(default_factory=list)
    """Answer sentences not spoken: they recited the prompt or an earlier user's words."""


class Router:
    """Routes each turn to the cheapest tier that can answer it well."""

    def __init__(
        self,
        presets: PresetTier | None,
        local: LocalTier | None,
        edge: EdgeTier | None,
        settings: RouterSettings | None = None,
        clock: Clock | None = None,
        memory: Memory | None = None,
        home: HomeTier | None = None,
    ) -> None:
        self.presets = presets
        self.local = local
        self.edge = edge
        self.home = home
        self.settings = settings or RouterSettings()
        self.clock = clock or MonotonicClock()
        self.memory = memory if memory is not None else Memory(self.settings.memory_turns)

    async def ask(
        self,
        text: str,
        utterance_id: int = 0,
        force: Force = "auto",
        on_event: Callable[[Event], None] | None = None,
    ) -> TurnRouted:
        """Run a turn to its end; `on_event` sees every event on the way."""
        routed = None
        async for event in self.turn(text, utterance_id, force):
            if on_event is not None:
                on_event(event)
            if isinstance(event, TurnRouted):
                routed = event
        assert routed is not None
        return routed

    async def turn(
        self, text: str, utterance_id: int = 0, force: Force = "auto"
    ) -> AsyncIterator[Event]:
        """The events of one turn, ending with `TurnRouted`."""
        earlier = tuple(t.user for t in self.memory.turns())
        state = _Turn(utterance_id, text, self.clock.now_ns(), earlier_users=earlier)
        language = detect_language(text, self.settings.language)

        if force in ("auto", "preset") and self.presets is not None:
            hit = self.presets(text)
            if hit is not None and hit.confidence >= self.settings.preset_threshold:
                state.reasons.append(
                    f"preset {hit.intent} matched (confidence {hit.confidence:.2f})"
                )
                yield self._commit(
                    state, "preset", hit.intent, dict(hit.slots), hit.confidence, hit.response
                )
                yield self._finish(state)
                return
            if hit is not None:
                state.reasons.append(
                    f"preset {hit.intent} too unsure ({hit.confidence:.2f} < "
                    f"{self.settings.preset_threshold:.2f})"
                )
            else:
                state.reasons.append("no preset matched")
        if force == "preset":
            yield self._finish(state)
            return

        ask = Ask(text, self.memory.turns(), language)
        escalate, deep = force == "edge", False
        by_rule = False
        if force == "edge":
            state.reasons.append("edge forced")
        elif force == "auto" and (rule := self._rule(text)):
            escalate, deep, by_rule = True, rule.deep, True
            state.reasons.append(f"rule: {rule.reason}")
        elif self.local is not None:
            judgment = await self._judge(ask, state)
            if judgment is not None and judgment.intent is not None:
                if judgment.confidence >= self.settings.local_intent_threshold:
                    state.reasons.append(
                        f"local model mapped it to {judgment.intent} "
                        f"(confidence {judgment.confidence:.2f})"
                    )
                    yield self._commit(
                        state, "local", judgment.intent, judgment.slots, judgment.confidence, ""
                    )
                    yield self._finish(state)
                    return
                state.reasons.append(
                    f"local model's {judgment.intent} too unsure ({judgment.confidence:.2f} < "
                    f"{self.settings.local_intent_threshold:.2f})"
                )
            elif judgment is not None and judgment.escalate and force == "auto":
                escalate = True
                state.reasons.append("local model judged it needs reasoning")
            elif judgment is not None and judgment.escalate:
                state.reasons.append("local model judged it needs reasoning; local tier forced")
            elif judgment is not None:
                state.reasons.append("local model judged it can answer")

        if self.home is not None and force == "auto" and not by_rule:
            answer = await self.home.converse(ask)
            if answer is not None:
                did = ", ".join(answer.done) or "nothing"
                state.reasons.append(f"Home Assistant understood it (acted on: {did})")
                async for event in self._speak(state, "home_assistant", _spoken(answer)):
                    if not isinstance(event, TierFailed):
                        yield event
                yield self._finish(state)
                return
            state.reasons.append("Home Assistant did not understand it")

        note, edge_failed = "", False
        on_device = self.local is not None and (self.settings.local_answers or force == "local")
        answered = "; answered on device" if on_device else ""
        if escalate and self.edge is None:
            state.reasons.append(f"no edge configured{answered}")
            note = self._note(self.settings.device_note, language) if on_device else ""
        elif escalate:
            budget_s = self.settings.first_token_budget_ms / 1000 - self._elapsed_s(state)
            edge_ask = Ask(text, ask.history, language, deep, max(budget_s, MIN_EDGE_S))
            failure = None
            async for event in self._speak(state, "edge", self.edge.stream(edge_ask)):
                if isinstance(event, TierFailed):
                    failure = event
                else:
                    yield event
            if failure is None:
                yield self._finish(state)
                return
            edge_failed = True
            if isinstance(failure, EdgeInterrupted):
                state.reasons.append(f"edge broke off ({failure.reason}){answered}")
                note = self._note(self.settings.interrupted_note, language)
            else:
                state.reasons.append(f"edge unavailable ({failure.reason}){answered}")
                note = self._note(self.settings.device_note, language)
            if force == "edge":
                yield self._finish(state)
                return

        if self.local is None:
            state.reasons.append("no local model")
            yield self._finish(state)
            return
        if not on_device:
            state.reasons.append(
                "the local model does not answer open questions (router.local_answers)"
            )
            said = self._note(CANNOT_REACH if edge_failed else CANNOT_ANSWER, language)
            state.answer.append(said)
            yield self._sentence(state, said)
            yield self._finish(state)
            return
        if note:
            state.answer.append(note + " ")
            yield self._sentence(state, note)
        async for event in self._speak(state, "local", self.local.stream(ask)):
            if isinstance(event, TierFailed):
                state.reasons.append(f"local model failed ({event.reason})")
            else:
                yield event
        yield self._finish(state)

    # -- pieces ------------------------------------------------------------------------------

    async def _judge(self, ask: Ask, state: _Turn) -> Judgment | None:
        try:
            return await self.local.judge(ask)  # type: ignore[union-attr]
        except Exception as exc:  # noqa: BLE001 - a broken judge must not end the turn
            log.warning("local intent mapping failed: %s", exc)
            state.reasons.append(f"local intent mapping failed ({exc})")
            return None

    async def _speak(
        self, state: _Turn, tier: str, tokens: AsyncIterator[Token]
    ) -> AsyncIterator[Any]:
        """Stream a tier's tokens as chunks and sentences. A failure is yielded, not raised:
        TierFailed before any token means nothing was said by this tier."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.local_deadline_ms / 1000 if tier == "local" else None
        splitter = SentenceSplitter()
        started = False
        own: list[str] = []
        interrupted = False
        try:
            while True:
                try:
                    if deadline is None:
                        token = await anext(tokens)
                    else:
                        async with asyncio.timeout(max(deadline - loop.time(), 0.0)):
                            token = await anext(tokens)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    state.reasons.append(f"{tier} answer cut at its deadline")
                    interrupted = True
                    break
                except Exception as exc:  # noqa: BLE001 - any tier failure ends in a fallback
                    failure = exc if isinstance(exc, TierFailed) else TierFailed(_brief(exc))
                    if started:
                        for sentence in self._kept(state, splitter.flush()):
                            yield self._sentence(state, sentence)
                        yield AnswerStopped(
                            self.clock.now_ns(), state.utterance_id, "".join(own), True
                        )
                    yield failure
                    return
                if not started:
                    started = True
                    state.tier = tier
                    if tier == "edge":
                        state.endpoint = token.source
                    yield AnswerStarted(
                        self.clock.now_ns(), state.utterance_id, tier, "; ".join(state.reasons)
                    )
                if state.first_token_ns is None:
                    state.first_token_ns = self.clock.now_ns() - state.started_ns
                own.append(token.text)
                state.answer.append(token.text)
                yield AnswerChunk(self.clock.now_ns(), state.utterance_id, token.text, token.source)
                for sentence in self._kept(state, splitter.feed(token.text)):
                    yield self._sentence(state, sentence)
        finally:
            await tokens.aclose()
        for sentence in self._kept(state, splitter.flush()):
            yield self._sentence(state, sentence)
        if not started:
            state.tier = tier
            yield AnswerStarted(
                self.clock.now_ns(), state.utterance_id, tier, "; ".join(state.reasons)
            )
        yield AnswerStopped(self.clock.now_ns(), state.utterance_id, "".join(own), interrupted)

    def _kept(self, state: _Turn, sentences: Iterable[str]) -> Iterator[str]:
        """The sentences that may be spoken; one that leaks is withheld and logged."""
        for sentence in sentences:
            if leaks(sentence, state.earlier_users, state.text):
                log.info("turn %d: withheld a sentence that recited the prompt or an earlier "
                         "user's words", state.utterance_id)  # fmt: skip
                state.withheld.append(sentence)
            else:
                yield sentence

    def _sentence(self, state: _Turn, text: str) -> AnswerSentence:
        now = self.clock.now_ns()
        if state.first_sentence_ns is None:
            state.first_sentence_ns = now - state.started_ns
        state.sentences += 1
        return AnswerSentence(now, state.utterance_id, text, state.sentences - 1)

    def _commit(
        self,
        state: _Turn,
        tier: str,
        intent: str,
        slots: dict[str, Any],
        confidence: float,
        response: str,
    ) -> IntentCommitted:
        now = self.clock.now_ns()
        state.tier, state.intent, state.slots = tier, intent, slots
        state.answer = [response]
        state.first_token_ns = now - state.started_ns
        return IntentCommitted(
            now, state.utterance_id, state.text, intent, slots, confidence, response
        )

    def _finish(self, state: _Turn) -> TurnRouted:
        now = self.clock.now_ns()
        answer = "".join(state.answer)
        for sentence in state.withheld:
            answer = answer.replace(sentence, "", 1)
        answer = " ".join(answer.split()) if state.withheld else answer.strip()
        if state.withheld:
            state.reasons.append(f"{len(state.withheld)} sentence(s) withheld: they repeated "
                                 "the prompt or an earlier user's words")  # fmt: skip
        reason = "; ".join(state.reasons)
        if state.intent is not None or answer:
            self.memory.add(state.text, answer or state.intent or "")
        log.info("turn %d: %s (%s)", state.utterance_id, state.tier, reason)
        return TurnRouted(
            t_ns=now,
            utterance_id=state.utterance_id,
            text=state.text,
            tier=state.tier,
            reason=reason,
            intent=state.intent,
            slots=state.slots,
            answer=answer,
            endpoint=state.endpoint,
            ttft_ns=state.first_token_ns,
            first_sentence_ns=state.first_sentence_ns,
            total_ns=now - state.started_ns,
        )

    def _rule(self, text: str) -> Rule | None:
        s = self.settings
        return escalation_rule(text, s.escalate_words, s.deep_words, s.escalate_min_chars)

    def _elapsed_s(self, state: _Turn) -> float:
        return (self.clock.now_ns() - state.started_ns) / 1e9

    def _note(self, notes: dict[str, str], language: str) -> str:
        return notes.get(language) or notes.get("en", "")


async def _spoken(answer: HomeAnswer) -> AsyncIterator[Token]:
    """Home Assistant's answer as the one token of a streamed answer."""
    yield Token(answer.speech, "home_assistant")


def _brief(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:160]
