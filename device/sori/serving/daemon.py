"""The daemon behind `sori run`: hearing, understanding, actions and speech on one loop.

Turns come from the microphone (or a file) through the hearing pipeline, or as text from
the HTTP API; `sori.serving.conversation.turns` runs each one (act, answer or think, then speak).
The daemon wires hearing events to it (barge-in, wake, corrections), owns the background
tasks, timers, reload and shutdown, and publishes every event: metrics, the SSE stream
and the per-turn trace line observe them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict
from typing import Any

from sori.acting.actions import ActionRegistry, Timers
from sori.acting.actions.timers import Timer
from sori.core.clock import Clock, MonotonicClock
from sori.core.events import (
    Event,
    IntentCommitted,
    IntentCorrected,
    IntentNotRecognized,
    SpeechStarted,
    UtteranceHeard,
    WakeDetected,
    WakeDismissed,
    WakeHeard,
    WakeYielded,
)
from sori.core.metrics import Metrics
from sori.serving.conversation.context import FollowUps
from sori.serving.conversation.listening import Conversation
from sori.serving.conversation.turns import Answering, Thinker, Turns, Understanding
from sori.speaking.playback import Player

log = logging.getLogger(__name__)

COMMANDS = (IntentCommitted, IntentCorrected, IntentNotRecognized)
"""The hearing events that make a turn: held while the speakers decide who answers."""
MAX_DECISIONS = 32
"""Decisions kept for utterances not yet heard to their end."""


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
        hold_after_ms: int = 0,
    ) -> None:
        self.understanding = understanding
        self.registry = registry
        self.player = player
        self.timers = timers
        self.replies = replies
        self.clock = clock or MonotonicClock()
        self.metrics = metrics or Metrics()
        self.barge_in = barge_in
        self.earcon = earcon
        self.conversation = conversation or Conversation(gated=False)
        """Wake, windows and mute (`sori.serving.conversation.listening`); ungated: every utterance
        is heard."""
        self.microphones: Callable[[], dict[str, Any]] | None = None
        """The array's microphones as heard (`ArrayFrontEnd.microphones`), once the
        hearing opens on an array; /health shows them."""
        self.turns = Turns(
            understanding=understanding, acting=registry, speaking=player, replies=replies,
            emit=self.emit, clock=self.clock, metrics=self.metrics,
            conversation=self.conversation, thinker=thinker, answerer=answerer,
            followups=followups, earcon=earcon, hold_after_ms=hold_after_ms,
        )  # fmt: skip
        """Runs each turn (`sori.serving.conversation.turns`)."""
        self.metrics.muted = self.conversation.muted
        self.player.emit = self.emit
        self.timers.on_ring = self._ring
        self._subscribers: set[asyncio.Queue] = set()
        self._tasks: set[asyncio.Task] = set()
        self._unheard: set[int] = set()
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
        self.arbitrate: Callable[[WakeDetected], Awaitable[bool]] | None = None
        """Whether this speaker answers a wake phrase other speakers may have heard too
        (`[wake] arbitrate`, `Arbiter.decide`); None: it always does."""
        self.arbitration: Callable[[], dict[str, Any]] | None = None
        """With `arbitrate`, whether the other speakers can be told; /health shows it."""
        self._decisions: dict[int, asyncio.Future[bool]] = {}
        """Utterance id → whether this speaker answers it: the woken utterance's, and that
        of each utterance begun while its decision was pending (the window it opened)."""

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
        return await self.turns.say(text)

    @property
    def thinker(self) -> Thinker | None:
        """The language-model router, None when thinking is off."""
        return self.turns.thinker

    @thinker.setter
    def thinker(self, thinker: Thinker | None) -> None:
        self.turns.thinker = thinker

    @property
    def hand_over(self) -> Callable[[IntentNotRecognized], bool] | None:
        """Takes a heard utterance nothing here matched (see `Turns.hand_over`)."""
        return self.turns.hand_over

    @hand_over.setter
    def hand_over(self, hand_over: Callable[[IntentNotRecognized], bool] | None) -> None:
        self.turns.hand_over = hand_over

    @property
    def turns_done(self) -> int:
        return self.turns.done

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
        the speaker's own voice (echo cancellation leaves some of it), so it is not acted
        on."""
        self.emit(event)
        if isinstance(event, COMMANDS) and not await self._answers(event.utterance_id):
            return  # another speaker answers it
        if isinstance(event, WakeDetected):
            self._woke(event)
        elif isinstance(event, WakeHeard):
            if self.player.duck():
                log.info("wake phrase %r over the reply: ducked while it is checked", event.phrase)
        elif isinstance(event, WakeDismissed):
            self.player.unduck()
        elif isinstance(event, SpeechStarted):
            self._in_pending_window(event.utterance_id)
            if self.conversation.gated:
                return  # with a wake phrase, only the phrase stops a reply (see _woke)
            if self.barge_in and self.player.interrupt():
                self.metrics.barge_ins += 1
                log.info("barge-in: reply stopped for utterance %d", event.utterance_id)
            elif not self.barge_in and self.player.playing:
                self._unheard.add(event.utterance_id)
                log.info("utterance %d began while speaking; ignored", event.utterance_id)
        elif isinstance(event, UtteranceHeard):
            self._decisions.pop(event.utterance_id, None)
            if event.text.strip():
                self.conversation.heard(event.speech_end_ns)
            self._unheard.discard(event.utterance_id)
            self.turns.heard(event)
        elif getattr(event, "utterance_id", None) in self._unheard:
            return
        elif isinstance(event, IntentCommitted):
            self.spawn(self.turns.command(event, event.t_ns))
        elif isinstance(event, IntentCorrected):
            log.warning(
                "utterance %d: early commit %s corrected to %s", event.utterance_id,
                event.previous.intent, event.replacement.intent if event.replacement else None,
            )  # fmt: skip
            if event.replacement is not None:
                self.spawn(self.turns.command(event.replacement, event.t_ns))
        elif isinstance(event, IntentNotRecognized) and event.text.strip():
            turn = self.turns.unrecognized(event.text, event.utterance_id, event.t_ns, heard=event)
            if turn is not None:
                self.spawn(turn)

    def _woke(self, event: WakeDetected) -> None:
        """The wake phrase: listen, stop a reply (barge-in), play the listening earcon.
        With other speakers to ask, the reply is ducked until they answer."""
        self.conversation.woke(event.end_ns)
        self._unheard.discard(event.utterance_id)
        if self.arbitrate is None:
            self._answer_wake(event)
            return
        decision = self.spawn(self._decide(event))
        self._keep_decision(event.utterance_id, decision)
        self.player.duck()
        self.spawn(self._decided(event, decision))

    async def _decide(self, event: WakeDetected) -> bool:
        assert self.arbitrate is not None
        try:
            return await self.arbitrate(event)
        except Exception as exc:  # a broken exchange never silences the speaker
            log.warning("wake arbitration failed; answering: %s", exc)
            return True

    async def _decided(self, event: WakeDetected, decision: asyncio.Future[bool]) -> None:
        answers = await decision
        self.player.unduck()
        if answers:
            self._answer_wake(event)
        else:
            self.conversation.close_window()
            self.emit(WakeYielded(self.clock.now_ns(), event.utterance_id, event.phrase))

    async def _answers(self, uid: int) -> bool:
        """Whether this speaker answers utterance `uid` (waiting for the decision of the
        wake phrase that opened it); a decision cancelled at shutdown answers nothing."""
        decision = self._decisions.get(uid)
        if decision is None:
            return True
        try:
            return await asyncio.shield(decision)
        except asyncio.CancelledError:
            if decision.cancelled():
                return False
            raise

    def _keep_decision(self, uid: int, decision: asyncio.Future[bool]) -> None:
        self._decisions[uid] = decision
        while len(self._decisions) > MAX_DECISIONS:  # utterances that were never heard
            self._decisions.pop(next(iter(self._decisions)))

    def _answer_wake(self, event: WakeDetected) -> None:
        if self.player.interrupt():
            self.metrics.barge_ins += 1
            log.info("barge-in: the wake phrase stopped the reply")
        if self.earcon:
            self.spawn(self.player.say("", event.utterance_id, "listen"))

    def _in_pending_window(self, uid: int) -> None:
        """An utterance began while a wake phrase's decision was pending: in the window
        that phrase opened, it is answered as the phrase is."""
        pending = [d for d in self._decisions.values() if not d.done()]
        if pending:
            self._keep_decision(uid, pending[-1])

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
        running config in service), the last reload's result (null before any), with a
        microphone array, which of its microphones are heard, and with `[wake] arbitrate`,
        whether the other speakers can be told (each null without)."""
        return {
            "status": "ok",
            "turns": self.turns_done,
            "reloads": self.reloads,
            "reload": self.last_reload,
            "playing": self.player.playing,
            "timers": len(self.timers.active()),
            "listening": self.conversation.state(self.clock.now_ns()),
            "microphones": None if self.microphones is None else self.microphones(),
            "arbitration": None if self.arbitration is None else self.arbitration(),
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
