"""The daemon behind `sori run`: hearing, understanding, actions and speech on one loop.

Turns come from the microphone (or a file) through the hearing pipeline, or as text from
the HTTP API. A command's reply is spoken only once its action has ended: what was done
when it succeeded, else (after the error earcon) what failed, never "done" and then
"sorry". A question is answered from the home's state (`sori.answering`), and a
sentence of several commands is acted on part by part (`sori.multi_command`).
Text no preset understands goes to the language-model router when one is configured.
Every stage emits events; metrics, the SSE stream and the per-turn trace line observe them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict
from typing import Any, Protocol

from sori.actions import ActionRegistry, Timers
from sori.actions.timers import Timer
from sori.clock import Clock, MonotonicClock
from sori.conversation.context import FollowUps
from sori.conversation.listening import Conversation
from sori.events import (
    ActionFinished,
    AnswerSentence,
    Event,
    FollowUpResolved,
    IntentCommitted,
    IntentCorrected,
    IntentNotRecognized,
    SpeechStarted,
    TurnFinished,
    TurnRouted,
    UtteranceHeard,
    WakeDetected,
)
from sori.metrics import Metrics
from sori.multi_command import Plan, carry_out, plan
from sori.playback import Player, Spoken

log = logging.getLogger(__name__)
trace = logging.getLogger("sori.trace")

MS = 1_000_000


class Understanding(Protocol):
    """Preset understanding (`sori.intents.Presets`)."""

    def match(self, text: str) -> Any: ...


class Answering(Protocol):
    """Answers questions from the home's state (`sori.answering.Answerer`)."""

    def answers(self, intent: str) -> bool: ...

    async def answer(self, intent: str, slots: dict[str, Any]) -> str: ...


class Thinker(Protocol):
    """The language-model router (`sori.llm.router.Router`): the events of one turn
    (IntentCommitted, AnswerSentence, ..., TurnRouted last)."""

    def turn(self, text: str, utterance_id: int) -> AsyncIterator[Event]: ...


class Daemon:
    """Runs turns and publishes their events. Built by `sori.assemble.daemon`."""

    def __init__(
        self,
        *,
        understanding: Understanding,
        registry: ActionRegistry,
        player: Player,
        timers: Timers,
        replies: dict[str, str],
        thinker: Thinker | None = None,
        answerer: Answering | None = None,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        barge_in: bool = True,
        earcon: bool = True,
        followups: FollowUps | None = None,
        conversation: Conversation | None = None,
    ) -> None:
        self.understanding = understanding
        self.registry = registry
        self.player = player
        self.timers = timers
        self.replies = replies
        self.thinker = thinker
        self.answerer = answerer
        self.clock = clock or MonotonicClock()
        self.metrics = metrics or Metrics()
        self.barge_in = barge_in
        self.earcon = earcon
        self.followups = followups
        """The last command's context, for follow-ups ("안방도"); None: no follow-ups."""
        self.conversation = conversation or Conversation(gated=False)
        """Wake, windows and mute (`sori.conversation.listening`); ungated: every utterance
        is heard."""
        self.metrics.muted = self.conversation.muted
        self.player.emit = self.emit
        self.timers.on_ring = self._ring
        self._subscribers: set[asyncio.Queue] = set()
        self._tasks: set[asyncio.Task] = set()
        self._text_ids = itertools.count(1_000_000)
        self._unheard: set[int] = set()
        self._heard: dict[int, UtteranceHeard] = {}
        self._followed: dict[int, int] = {}  # follow-up turn → the turn whose context it used
        self.turns_done = 0
        self.reloads = 0
        self.last_reload: dict[str, Any] | None = None
        """The last SIGHUP's result for /health: ok, error (the reason), t (Unix seconds)."""
        self._reloading = asyncio.Lock()
        self.reloader: Callable[[], str | None] | None = None
        """Checks the whole new config, then swaps packs and home (set by the builder); run on
        a worker thread by reload(). It raises to refuse, and may return a note ("restart to
        apply [vad]")."""
        self.closers: list[Callable[[], Awaitable[None]]] = []
        """Coroutines to await at shutdown (edge clients, the local model, ...)."""
        self.stoppers: list[Callable[[], None]] = []
        """Called first at shutdown, without waiting: background work (model loading, cache
        warming) ends at its next step."""
        self.threads: list[threading.Thread] = []
        """Background threads (set by the builder) that shutdown waits for, with a bound."""
        self.listeners: list[Callable[[Event], None]] = []
        """Called with every event, on the loop (MQTT discovery's "last command")."""
        self.starters: list[Callable[[], None]] = []
        """Called once by start(), on the running loop (connections that need it)."""
        self.hand_over: Callable[[IntentNotRecognized], bool] | None = None
        """Takes a heard utterance no preset matched elsewhere (True: Home Assistant's
        pipeline, `sori.wyoming_server.satellite`); False or None: Sori thinks it over."""

    # -- events ------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Publish an event to metrics and every SSE subscriber (slow ones lose events)."""
        self.metrics.observe(event)
        for listener in self.listeners:
            try:
                listener(event)
            except Exception as exc:  # a listener's failure never ends a turn
                log.warning("event listener failed: %s", exc)
        if not self._subscribers:
            return
        payload = event_json(event)
        for queue in list(self._subscribers):
            if not queue.full():
                queue.put_nowait(payload)

    def subscribe(self, max_events: int = 256) -> asyncio.Queue:
        queue: asyncio.Queue = asyncio.Queue(max_events)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue) -> None:
        self._subscribers.discard(queue)

    # -- turns -------------------------------------------------------------------------------

    async def say(self, text: str) -> dict[str, Any]:
        """A turn from text (`POST /say`): understand, act, speak; the turn as JSON."""
        uid = next(self._text_ids)
        started = self.clock.now_ns()
        found = self.understanding.match(text)
        understood = self.clock.now_ns()
        stages = {"understand": understood - started}
        if found is None:
            found = self._follow_up(text, uid)
        if found is None:
            several = plan(self.understanding, text)
            if several is not None:
                return await self.multi_turn(several, uid, started, stages)
            self.emit(IntentNotRecognized(understood, uid, text))
            return await self.think_turn(text, uid, started, stages)
        committed = self._commit(found, uid, text)
        return await self.command_turn(committed, started, stages)

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

    async def command_turn(
        self, committed: IntentCommitted, started_ns: int, stages: dict[str, int] | None = None
    ) -> dict[str, Any]:
        """Act on a committed intent (or answer it), then speak what happened."""
        stages = dict(stages or {})
        uid = committed.utterance_id
        began = self.clock.now_ns()
        actions, reply, tone = await self.outcome(committed)
        stages["act"] = self.clock.now_ns() - began
        spoken = await self.player.say(reply, uid, tone)
        error = "; ".join(f"{a.target or a.handler}: {a.detail}" for a in actions if not a.ok)
        return self._finish(
            uid, committed.text, committed.intent, committed.slots, "preset",
            [spoken], actions, committed.t_ns, started_ns, stages, error,
        )  # fmt: skip

    async def multi_turn(
        self, several: Plan, uid: int, started_ns: int, stages: dict[str, int] | None = None
    ) -> dict[str, Any]:
        """Several commands in one sentence: each part in order, one reply after all."""
        stages = dict(stages or {})
        began = self.clock.now_ns()
        tone = "error" if self.earcon else ""
        done = await carry_out(several, uid, self.clock.now_ns, self.outcome, self.emit, tone)
        stages["act"] = self.clock.now_ns() - began
        spoken = await self.player.say(done.reply, uid, done.tone)
        parts = [
            {"text": p.piece.said, "intent": p.match.intent if p.match else None,
             "slots": dict(p.match.slots) if p.match else {}}
            for p in several.parts
        ]  # fmt: skip
        error = "; ".join(f"{a.target or a.handler}: {a.detail}" for a in done.actions if not a.ok)
        return self._finish(
            uid, several.text, "+".join(done.intents), {"parts": parts}, "preset",
            [spoken], done.actions, began, started_ns, stages, error,
        )  # fmt: skip

    async def outcome(self, committed: IntentCommitted) -> tuple[list[ActionFinished], str, str]:
        """(actions, reply, tone) of one intent: the action ends (or the question is
        answered) before the reply is chosen, so a reply never claims what did not happen."""
        if self.answerer is not None and self.answerer.answers(committed.intent):
            if self.followups is not None:  # a question clears what a follow-up may refer to
                self.followups.remember(committed, [], self.clock.now_ns())
            return [], await self.answerer.answer(committed.intent, dict(committed.slots)), ""
        actions = await self._act(committed)
        failed = [a for a in actions if not a.ok]
        if failed:
            return actions, self._failure_reply(failed), "error" if self.earcon else ""
        reply = next((a.speech for a in actions if a.speech), "")
        return actions, reply or committed.response or self.replies["ack"], ""

    async def think_turn(
        self, text: str, uid: int, started_ns: int, stages: dict[str, int] | None = None
    ) -> dict[str, Any]:
        """Text no preset understood: the router answers, else the not-understood reply."""
        stages = dict(stages or {})
        asked = self.clock.now_ns()
        if self.thinker is None:
            spoken = await self.player.say(self.replies["not_understood"], uid)
            return self._finish(
                uid, text, "", {}, "none", [spoken], [], asked, started_ns, stages, ""
            )
        speaking: list[asyncio.Task] = []  # replies queue up in order in the player
        actions: list[ActionFinished] = []
        tier, intent, slots, error = "none", "", {}, ""

        def say(text: str, tone: str = "") -> None:
            speaking.append(asyncio.create_task(self.player.say(text, uid, tone)))

        try:
            async for event in self.thinker.turn(text, uid):
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
            say(self.replies["failed"], "error" if self.earcon else "")
        if not speaking:
            say(self.replies["not_understood"])
        spoken_all = list(await asyncio.gather(*speaking))
        return self._finish(
            uid, text, intent, slots, tier, spoken_all, actions, asked, started_ns, stages, error
        )

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
        actions = await self.registry.act(committed)
        for action in actions:
            self.emit(action)
        if self.followups is not None:
            self.followups.remember(committed, actions, self.clock.now_ns())
        return actions

    def _finish(
        self, uid: int, text: str, intent: str, slots: dict, tier: str, spoken: list[Spoken],
        actions: list[ActionFinished], commit_ns: int, started_ns: int,
        stages: dict[str, int], error: str,
    ) -> dict[str, Any]:  # fmt: skip
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
        self.turns_done += 1
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
        trace.info("turn %s %s", uid, tier, extra={"turn": turn})
        return turn

    async def _ring(self, timer: Timer) -> None:
        """One ring of a due timer or alarm; it rings again until stopped ("그만")."""
        key = "alarm_rings" if timer.kind == "alarm" else "timer_done"
        await self.player.say(self.replies.get(key, self.replies["timer_done"]), 0, "ring")

    def start(self) -> None:
        """Begin background work on the running loop: timers ring, and those that came due
        while the speaker was off are announced once."""
        self.timers.ensure_running()
        for starter in self.starters:
            starter()
        missed, self.timers.missed = self.timers.missed, []
        if missed:
            text = self.replies.get("missed", "{n}").format(n=len(missed))
            self.spawn(self.player.say(text, 0, "ring"))

    # -- audio -------------------------------------------------------------------------------

    def spawn(self, coro) -> asyncio.Task:  # noqa: ANN001 - a coroutine
        """Run a turn in the background so listening goes on; kept until it finishes."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.metrics.count_error("turn")
            log.error("turn failed: %r", task.exception())

    async def on_heard(self, event: Event) -> None:
        """React to one hearing event: barge-in, commits, corrections, misses.

        Without barge-in, an utterance that begins while the speaker talks is most likely
        the speaker's own voice (there is no echo cancellation), so it is not acted on."""
        self.emit(event)
        if isinstance(event, WakeDetected):
            self._woke(event)
        elif isinstance(event, SpeechStarted):
            if self.conversation.gated:
                return  # with a wake phrase, only the phrase stops a reply (see _woke)
            if self.barge_in and self.player.interrupt():
                self.metrics.barge_ins += 1
                log.info("barge-in: reply stopped for utterance %d", event.utterance_id)
            elif not self.barge_in and self.player.playing:
                self._unheard.add(event.utterance_id)
                log.info("utterance %d began while speaking; ignored", event.utterance_id)
        elif isinstance(event, UtteranceHeard):
            if event.text.strip():
                self.conversation.heard(event.speech_end_ns)
            self._unheard.discard(event.utterance_id)
            self._heard[event.utterance_id] = event
            while len(self._heard) > 32:  # utterances that made no turn (empty transcripts)
                self._heard.pop(next(iter(self._heard)))
        elif getattr(event, "utterance_id", None) in self._unheard:
            return
        elif isinstance(event, IntentCommitted):
            self.spawn(self.command_turn(event, event.t_ns))
        elif isinstance(event, IntentCorrected):
            log.warning(
                "utterance %d: early commit %s corrected to %s", event.utterance_id,
                event.previous.intent, event.replacement.intent if event.replacement else None,
            )  # fmt: skip
            if event.replacement is not None:
                self.spawn(self.command_turn(event.replacement, event.t_ns))
        elif isinstance(event, IntentNotRecognized) and event.text.strip():
            found = self._follow_up(event.text, event.utterance_id)
            several = plan(self.understanding, event.text) if found is None else None
            if found is not None:
                committed = self._commit(found, event.utterance_id, event.text)
                self.spawn(self.command_turn(committed, event.t_ns))
            elif several is not None:
                self.spawn(self.multi_turn(several, event.utterance_id, event.t_ns))
            elif self.hand_over is not None and self.hand_over(event):
                pass  # Home Assistant's pipeline answers it
            else:
                self.spawn(self.think_turn(event.text, event.utterance_id, event.t_ns))

    def _woke(self, event: WakeDetected) -> None:
        """The wake phrase: stop a reply (barge-in), play the listening earcon, listen."""
        self.conversation.woke(event.end_ns)
        self._unheard.discard(event.utterance_id)
        if self.player.interrupt():
            self.metrics.barge_ins += 1
            log.info("barge-in: the wake phrase stopped the reply")
        if self.earcon:
            self.spawn(self.player.say("", event.utterance_id, "listen"))

    def mute(self, muted: bool) -> dict[str, Any]:
        """`POST /mute`, `/unmute`: nothing reaches the recognizer while muted."""
        self.conversation.mute(muted)
        self.metrics.muted = muted
        if muted:
            self.player.interrupt()
        return self.conversation.state(self.clock.now_ns())

    def listen_now(self) -> dict[str, Any]:
        """`POST /listen` (push-to-talk): a command without the wake phrase, from now."""
        self.conversation.listen(self.clock.now_ns())
        if self.earcon and not self.conversation.muted:
            self.spawn(self.player.say("", 0, "listen"))
        return self.conversation.state(self.clock.now_ns())

    async def listen(self, events: AsyncIterator[Event]) -> None:
        """Consume hearing events until the source ends, then let open turns finish."""
        async for event in events:
            await self.on_heard(event)
        await self.drain()

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- lifecycle ---------------------------------------------------------------------------

    async def reload(self) -> bool:
        """SIGHUP: read and check the whole new config on a worker thread, then swap packs
        and home; audio keeps flowing. A refused reload changes nothing; `health()` tells
        the last result."""
        if self.reloader is None:
            return False
        async with self._reloading:  # two quick SIGHUPs check and swap one after the other
            try:
                note = await asyncio.to_thread(self.reloader)
            except Exception as exc:  # a bad edit keeps the running config
                log.error("reload refused, keeping the running config: %s", exc)
                self.metrics.count_error("reload")
                self.last_reload = {"ok": False, "error": str(exc), "t": time.time()}
                return False
            self.reloads += 1
            self.last_reload = {"ok": True, "error": "", "t": time.time()}
            if note:
                self.last_reload["note"] = note
                log.warning("reloaded packs and home; %s", note)
            else:
                log.info("reloaded packs and home")
            return True

    def health(self) -> dict[str, Any]:
        """Liveness ("status" stays "ok" while turns run: a refused reload leaves the
        running config in service) and the last reload's result (null before any)."""
        return {
            "status": "ok",
            "turns": self.turns_done,
            "reloads": self.reloads,
            "reload": self.last_reload,
            "playing": self.player.playing,
            "timers": len(self.timers.active()),
            "listening": self.conversation.state(self.clock.now_ns()),
        }

    async def close(self, timeout_s: float = 5.0) -> list[str]:
        """Stop everything within `timeout_s`: background work is told to stop, turns are
        cancelled, handlers and closers closed, background threads waited for. Nothing is
        waited on past the deadline; returns what is still running then (empty: all done)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s

        def left() -> float:
            return max(0.0, deadline - loop.time())

        for stop in self.stoppers:
            with contextlib.suppress(Exception):
                stop()
        self.player.interrupt()
        turns = list(self._tasks)
        for task in turns:
            task.cancel()
        unfinished = []
        if turns:
            _, pending = await asyncio.wait(turns, timeout=left())
            unfinished += [f"turn {t.get_name()}" for t in pending]
        if not await _within(self.registry.close(), left()):
            unfinished.append("action handlers")
        for close in self.closers:
            if not await _within(close(), left()):
                unfinished.append(getattr(close, "__qualname__", "closer"))
        self.player.sink.close()
        while any(t.is_alive() for t in self.threads) and left() > 0:
            await asyncio.sleep(0.02)
        unfinished += [t.name for t in self.threads if t.is_alive()]
        if unfinished:
            log.warning("still running at the shutdown deadline: %s", ", ".join(unfinished))
        return unfinished


async def _within(step: Awaitable[Any], timeout_s: float) -> bool:
    """Await `step` for at most `timeout_s`: True if it ended (errors are logged), False if it
    is still running then; it is cancelled but not waited for, as it may ignore that."""
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        task.cancel()
        return False
    if not task.cancelled() and task.exception() is not None:
        log.warning("while closing: %s", task.exception())
    return True


def event_json(event: Event) -> dict[str, Any]:
    """An event as a JSON-ready dict with its type name."""
    return {"type": type(event).__name__, **asdict(event)}
