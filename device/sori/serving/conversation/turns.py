"""One turn, from what was understood to what was said: act, answer or think, then speak.

Turn logic (floor 3); the daemon wires hearing and `POST /say` to it. A command's reply is
spoken only once its action has ended: what was done when it succeeded, else (after the
error earcon) what failed, never "done" and then "sorry". A question is answered from the
home's state (`sori.understanding.answering`), and a sentence of several commands is acted
on part by part (`sori.understanding.multi_command`). Text no preset understands is tried
as a follow-up of the last command (`sori.serving.conversation.context`), then goes to the
language-model router when one is configured. Every turn ends in one `TurnFinished` event
and one trace line.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Protocol

from sori.core.clock import Clock
from sori.core.events import (
    ActionFinished,
    AnswerSentence,
    Event,
    FollowUpResolved,
    IntentCommitted,
    IntentNotRecognized,
    TurnFinished,
    TurnRouted,
    UtteranceHeard,
)
from sori.core.metrics import Metrics
from sori.serving.conversation.context import FollowUps
from sori.serving.conversation.listening import Conversation
from sori.serving.conversation.meaning import missing
from sori.speaking.playback import Spoken
from sori.understanding.multi_command import Plan, carry_out, plan
from sori.understanding.screening import Screened, screen

log = logging.getLogger(__name__)
trace = logging.getLogger("sori.trace")

MS = 1_000_000

Turn = dict[str, Any]
"""A finished turn as JSON: what `POST /say` answers and the trace line carries."""


class Understanding(Protocol):
    """Preset understanding (`sori.understanding.intents.Presets`)."""

    def match(self, text: str) -> Any: ...


class Acting(Protocol):
    """Carries out a committed intent (`sori.acting.actions.ActionRegistry`)."""

    async def act(self, committed: IntentCommitted) -> list[ActionFinished]: ...


class Speaking(Protocol):
    """Speaks replies in the order asked (`sori.speaking.playback.Player`)."""

    async def say(self, text: str, utterance_id: int = 0, tone: str = "") -> Spoken: ...


class Answering(Protocol):
    """Answers questions from the home's state (`sori.understanding.answering.Answerer`)."""

    def answers(self, intent: str) -> bool: ...

    async def answer(self, intent: str, slots: dict[str, Any]) -> str: ...


class Thinker(Protocol):
    """The language-model router (`sori.thinking.router.Router`): the events of one turn
    (IntentCommitted, AnswerSentence, ..., TurnRouted last)."""

    def turn(self, text: str, utterance_id: int) -> AsyncIterator[Event]: ...


class Turns:
    """Runs turns and emits their events. Built by the daemon, which owns the loop."""

    def __init__(
        self,
        *,
        understanding: Understanding,
        acting: Acting,
        speaking: Speaking,
        replies: dict[str, str],
        emit: Callable[[Event], None],
        clock: Clock,
        metrics: Metrics,
        conversation: Conversation,
        thinker: Thinker | None = None,
        answerer: Answering | None = None,
        followups: FollowUps | None = None,
        earcon: bool = True,
        hold_after_ms: int = 0,
    ) -> None:
        self.understanding = understanding
        self.acting = acting
        self.speaking = speaking
        self.replies = replies
        """Fixed replies by key ("ack", "not_understood", "failed", ...)."""
        self.emit = emit
        self.clock = clock
        self.metrics = metrics
        self.conversation = conversation
        """Told when a reply ends, so the follow-up window opens then."""
        self.thinker = thinker
        self.answerer = answerer
        self.followups = followups
        """The last command's context, for follow-ups ("안방도"); None: no follow-ups."""
        self.earcon = earcon
        """A failure's reply opens with the error earcon."""
        self.hold_after_ms = hold_after_ms
        """A model's answer with nothing said this long gets the holding line first
        ([router] hold_after_ms); 0: never."""
        self.hand_over: Callable[[IntentNotRecognized], bool] | None = None
        """Takes a heard utterance nothing here matched (True: Home Assistant's pipeline
        answers it, `sori.serving.wyoming_server.satellite`); False or None: the router thinks."""
        self.done = 0
        """Turns finished since start."""
        self._text_ids = itertools.count(1_000_000)  # text turns, apart from hearing's ids
        self._heard: dict[int, UtteranceHeard] = {}
        self._followed: dict[int, int] = {}  # follow-up turn → the turn whose context it used

    def heard(self, event: UtteranceHeard) -> None:
        """Keep an utterance's hearing stages for the trace line of the turn it makes."""
        self._heard[event.utterance_id] = event
        while len(self._heard) > 32:  # utterances that made no turn (empty transcripts)
            self._heard.pop(next(iter(self._heard)))

    async def say(self, text: str) -> Turn:
        """A turn from text (`POST /say`): understand, act, speak."""
        uid = next(self._text_ids)
        started = self.clock.now_ns()
        found = self.understanding.match(text)
        understood = self.clock.now_ns()
        stages = {"understand": understood - started}
        screened = self.screen(text)
        if found is not None and missing(screened):  # named at once, nothing committed
            assert screened is not None
            return await self.screened(screened, text, uid, started, stages)
        if found is not None:
            return await self.command(self._commit(found, uid, text), started, stages)
        turn = self.unrecognized(text, uid, started, stages, missed_ns=understood)
        assert turn is not None  # only a heard utterance is handed over
        return await turn

    def unrecognized(
        self, text: str, uid: int, started_ns: int, stages: dict[str, int] | None = None,
        *, missed_ns: int | None = None, heard: IntentNotRecognized | None = None,
    ) -> Coroutine[Any, Any, Turn] | None:  # fmt: skip
        """The turn of text no preset matched as a whole: a follow-up of the last command,
        several commands, else the router. Chosen now (the follow-up's events are emitted
        now), run when awaited. `missed_ns`: a text turn's time of not matching, for its
        IntentNotRecognized (a heard turn had that from hearing, `heard`). None when
        `hand_over` took the heard utterance (Home Assistant's pipeline answers it)."""
        found = self._follow_up(text, uid)
        if found is not None:
            return self.command(self._commit(found, uid, text), started_ns, stages)
        several = plan(self.understanding, text)
        if several is not None:
            return self.multi(several, uid, started_ns, stages)
        if missed_ns is not None:
            self.emit(IntentNotRecognized(missed_ns, uid, text))
        if heard is not None and self.hand_over is not None and self.hand_over(heard):
            return None
        screened = self.screen(text)
        if screened is not None:  # a device the home lacks, or words barely heard: no model
            return self.screened(screened, text, uid, started_ns, stages)
        return self.think(text, uid, started_ns, stages)

    def screen(self, text: str) -> Screened | None:
        """The answer that needs no action and no model (`sori.understanding.screening`)."""
        home = getattr(self.understanding, "home", None)
        return screen(home, text, getattr(self.understanding, "language", "ko") or "ko")

    async def screened(
        self, screened: Screened, text: str, uid: int, started_ns: int,
        stages: dict[str, int] | None = None,
    ) -> Turn:  # fmt: skip
        """Say at once what the screen found: the missing device named, or "잘 못 들었어요"."""
        stages = dict(stages or {})
        said = self.clock.now_ns()
        spoken = await self.speaking.say(screened.reply, uid)
        return self._finish(
            uid, text, "", {}, "none", [spoken], [], said, started_ns, stages, "",
            reason=screened.reason,
        )  # fmt: skip

    def _follow_up(self, text: str, uid: int) -> Any:
        """The full intent (an IntentMatch) of a follow-up of the last command, or None."""
        if self.followups is None:
            return None
        now = self.clock.now_ns()
        found = self.followups.resolve(text, now)
        if found is None:
            return None
        used = found.context
        self._followed[uid] = used.utterance_id
        self.emit(
            FollowUpResolved(
                now,
                uid,
                text,
                found.form,
                context_utterance_id=used.utterance_id,
                context_text=used.text,
                intent=found.match.intent,
                slots=dict(found.match.slots),
            )
        )
        return found.match

    def _commit(self, found: Any, uid: int, text: str) -> IntentCommitted:
        committed = IntentCommitted(
            self.clock.now_ns(), uid, text, found.intent, dict(found.slots),
            float(found.confidence), found.response, False,
        )  # fmt: skip
        self.emit(committed)
        return committed

    async def command(
        self, committed: IntentCommitted, started_ns: int, stages: dict[str, int] | None = None
    ) -> Turn:
        """Act on a committed intent (or answer it), then speak what happened."""
        stages = dict(stages or {})
        uid = committed.utterance_id
        began = self.clock.now_ns()
        actions, reply, tone = await self.outcome(committed)
        stages["act"] = self.clock.now_ns() - began
        spoken = await self.speaking.say(reply, uid, tone)
        return self._finish(
            uid, committed.text, committed.intent, committed.slots, "preset",
            [spoken], actions, committed.t_ns, started_ns, stages, _failures(actions),
        )  # fmt: skip

    async def multi(
        self, several: Plan, uid: int, started_ns: int, stages: dict[str, int] | None = None
    ) -> Turn:
        """Several commands in one sentence: each part in order, one reply after all."""
        stages = dict(stages or {})
        began = self.clock.now_ns()
        tone = self._error_tone()
        done = await carry_out(several, uid, self.clock.now_ns, self.outcome, self.emit, tone)
        stages["act"] = self.clock.now_ns() - began
        spoken = await self.speaking.say(done.reply, uid, done.tone)
        parts = [
            {"text": p.piece.said, "intent": p.match.intent if p.match else None,
             "slots": dict(p.match.slots) if p.match else {}}
            for p in several.parts
        ]  # fmt: skip
        return self._finish(
            uid, several.text, "+".join(done.intents), {"parts": parts}, "preset",
            [spoken], done.actions, began, started_ns, stages, _failures(done.actions),
        )  # fmt: skip

    async def outcome(self, committed: IntentCommitted) -> tuple[list[ActionFinished], str, str]:
        """(actions, reply, tone) of one intent: the action ends (or the question is
        answered) before the reply is chosen, so a reply never claims what did not happen."""
        if self.answerer is not None and self.answerer.answers(committed.intent):
            if self.followups is not None:  # a question clears what a follow-up may refer to
                self.followups.remember(committed, [], self.clock.now_ns())
            return [], await self.answerer.answer(committed.intent, dict(committed.slots)), ""
        screened = self.screen(committed.text)
        if screened is not None and screened.kind == "missing_device":  # never acted on
            return [], screened.reply, ""
        actions = await self._act(committed)
        failed = [a for a in actions if not a.ok]
        if failed:
            return actions, self._failure_reply(failed), self._error_tone()
        reply = next((a.speech for a in actions if a.speech), "")
        return actions, reply or committed.response or self.replies["ack"], ""

    async def think(
        self, text: str, uid: int, started_ns: int, stages: dict[str, int] | None = None
    ) -> Turn:
        """Text no preset understood: the router answers, else the not-understood reply."""
        stages = dict(stages or {})
        asked = self.clock.now_ns()
        if self.thinker is None:
            spoken = await self.speaking.say(self.replies["not_understood"], uid)
            return self._finish(
                uid, text, "", {}, "none", [spoken], [], asked, started_ns, stages, ""
            )
        speaking: list[asyncio.Task] = []  # replies queue up in order in the player
        actions: list[ActionFinished] = []
        tier, intent, slots, error = "none", "", {}, ""

        def say(text: str, tone: str = "") -> None:
            speaking.append(asyncio.create_task(self.speaking.say(text, uid, tone)))

        async def hold() -> None:
            await asyncio.sleep(self.hold_after_ms / 1000)
            if not speaking:  # the model has said nothing yet: never silence
                say(self.replies["holding"])

        holding = asyncio.create_task(hold()) if self.hold_after_ms else None
        try:
            async for event in self.thinker.turn(text, uid):
                if holding is not None and isinstance(event, (AnswerSentence, IntentCommitted)):
                    holding.cancel()  # before the sentence is queued: nothing comes between
                self.emit(event)
                if isinstance(event, AnswerSentence):
                    say(event.text)
                elif isinstance(event, IntentCommitted):
                    actions, reply, tone = await self.outcome(event)
                    say(reply, tone)
                elif isinstance(event, TurnRouted):
                    tier, intent, slots = event.tier, event.intent or "", dict(event.slots)
                    if event.ttft_ns is not None and tier == "edge":
                        self.metrics.observe_edge_ttfb(event.ttft_ns / 1e9)
        except Exception as exc:  # a failing tier is spoken about, never fatal
            error = f"router failed: {exc}"
            log.error("%s", error)
            self.metrics.count_error("router")
            say(self.replies["failed"], self._error_tone())
        finally:
            if holding is not None:
                holding.cancel()
        if not speaking:
            say(self.replies["not_understood"])
        spoken_all = list(await asyncio.gather(*speaking))
        return self._finish(
            uid, text, intent, slots, tier, spoken_all, actions, asked, started_ns, stages, error
        )

    def _error_tone(self) -> str:
        return "error" if self.earcon else ""

    def _failure_reply(self, failed: list[ActionFinished]) -> str:
        """A failure's own words when it has them ("no player is set"); "sent, not
        confirmed" when every failure is only that; else "could not"."""
        own = next((a.speech for a in failed if a.speech), "")
        if own:
            return own
        if all(a.unconfirmed for a in failed):
            return self.replies["action_unconfirmed"]
        return self.replies["action_failed"]

    async def _act(self, committed: IntentCommitted) -> list[ActionFinished]:
        actions = await self.acting.act(committed)
        for action in actions:
            self.emit(action)
        if self.followups is not None:
            self.followups.remember(committed, actions, self.clock.now_ns())
        return actions

    def _finish(
        self, uid: int, text: str, intent: str, slots: dict, tier: str, spoken: list[Spoken],
        actions: list[ActionFinished], commit_ns: int, started_ns: int,
        stages: dict[str, int], error: str, reason: str = "",
    ) -> Turn:  # fmt: skip
        now = self.clock.now_ns()
        heard = self._heard.pop(uid, None)
        if heard is not None:  # the hearing stages of a spoken turn, in the same trace line
            stages.update({f"hear_{k}": v for k, v in heard.stages_ns.items()})
            if heard.commit_t_ns is not None:
                stages["speech_end_to_commit"] = heard.commit_t_ns - heard.speech_end_ns
        first = next((s for s in spoken if s.first_audio_ns is not None), None)
        if first is not None:
            stages["first_audio"] = max(0, first.first_audio_ns - commit_ns)
        stages["speak"] = sum(s.audio_ns for s in spoken)
        stages["total"] = now - started_ns
        error = error or "; ".join(s.error for s in spoken if s.error)
        response = " ".join(s.text for s in spoken if s.text)
        self.emit(TurnFinished(now, uid, text, intent, tier, response, stages, error))
        self.conversation.replied(now)
        self.done += 1
        turn = {
            "turn": uid,
            "text": text,
            "intent": intent or None,
            "slots": slots,
            "tier": tier,
            "response": response,
            "cached": bool(first and first.cached),
            "interrupted": any(s.interrupted for s in spoken),
            "actions": [
                {
                    "handler": a.handler,
                    "target": a.target,
                    "ok": a.ok,
                    "unconfirmed": a.unconfirmed,
                    "detail": a.detail,
                }  # fmt: skip
                for a in actions
            ],
            "stages_ms": {k: round(v / MS, 3) for k, v in stages.items()},
            "error": error,
            "context_utterance_id": self._followed.pop(uid, None),
        }
        if reason:
            turn["reason"] = reason
        trace.info("turn %s %s", uid, tier, extra={"turn": turn})
        return turn


def _failures(actions: list[ActionFinished]) -> str:
    """The failed actions, named, for the turn's error field."""
    return "; ".join(f"{a.target or a.handler}: {a.detail}" for a in actions if not a.ok)
