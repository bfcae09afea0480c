"""Which speaker answers, when several heard the same wake phrase (`[wake] arbitrate`).

Two Sori speakers in one home both hear "소리야, 불 켜 줘" said between them: without a
word between them, both chirp, both answer, and a "볼륨 올려" or a timer happens twice.
So each speaker that hears the phrase tells the others what it heard (a `WakeClaim`,
over the home's MQTT broker: `sori.serving.wake_claims`), waits `window_ms` for theirs,
and answers only when its claim ranks first: the clearest hearing (`snr_db`, the
phrase's speech over the room that speaker heard before it), then the detector's score,
then the speaker's name, so that every speaker ranks the same claims alike.

Speakers' clocks are not compared: a claim counts by when it arrived here. A rival's
claim that arrived more than three quarters of a window before this speaker heard the
phrase was made by a speaker whose window may end before this one's claim reaches it: it
answers (it may have seen no rival), so this one yields to it, whatever the ranks, and
says so in its own claim (`yields_to`), so that the rival, if it does see the claim,
does not yield to this one in turn. Both answer only when a claim takes over an eighth
of the window to travel (a home's broker takes milliseconds, and 40 ms more where it
holds small messages back: mosquitto's `set_tcp_nodelay`).

Each speaker also says it is online (`present`), so a speaker knows its peers: once every
one of them has claimed the phrase, no claim is left to wait for, and it decides then
rather than at the window's end (the common case of two speakers that both heard it). A
peer that heard nothing, or not the phrase, passes (below).

These rules can leave every speaker yielding to another: three in a ring, each yielding to
a clearer one that yields to a first. So the speaker that heard the phrase first, about to
yield, waits on until each rival it knows of has decided, plays their decisions through
from the claims it holds, and answers if they all yield (`breaks_the_silence`).

A peer that hears nothing when a claim comes (no utterance open, none ended in the last
`QUIET_S`) says so at once (a `WakePass`), so the claimant need not wait out its window
for it: in a home whose speakers are in different rooms, that is every wake phrase. So
does a peer whose wake detector no longer listens in the utterance it hears
(`WakeListenEnded`: a phrase begins an utterance, and that one's start is over, as in a
long sentence on the TV). A speaker that passed on a phrase stays out of it
(`SAME_PHRASE_S` after the last claim of it came): it claims it no more, passes on every
claim of it (once a second at most), and yields a hearing of its own, so that no one who
counted its pass meets it as a rival later. A peer that still listens when a claim comes
(the talker too faint for the phrase, a TV in its room) may yet hear the phrase, so it
passes only once it has not for 3/4 of a window after the claim came: had it heard it
later, it would have yielded to that claim anyway (see above), so the pass changes
nothing it decides. The claimant is told a quarter of a window early, and no speaker
yields to a claim of it that would itself have yielded.

A speaker that cannot tell the others (no broker) answers: silence is the worse failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar

from sori.core.clock import Clock, MonotonicClock
from sori.core.events import Event, SpeechStarted, SpeechStopped, WakeDetected, WakeListenEnded

log = logging.getLogger(__name__)

MAX_CLAIM_BYTES = 1024
"""A claim Sori sends is under 200 bytes; a larger message on the topic is not one."""
MAX_YIELDS = 16
"""Rivals one claim may name in `yields_to`; a claim naming more is not one."""
MAX_KEPT_CLAIMS = 64
"""Rivals' claims kept at once; more within `SAME_PHRASE_S` is a flood, and the oldest go."""
QUIET_S = 1.0
"""A speaker passes on a claim (`WakePass`) only when no utterance of its own is open and
none ended this long before: a bare phrase ends its utterance (`vad.stop_ms`, 500 ms)
about when another speaker's claim of it comes (350-700 ms after the phrase), and its
own wake event may still be on its way."""
PASS_AGAIN_S = 1.0
"""A speaker out of a phrase sends its pass again on a claim this long after the last: a
claimant counts passes of the `SAME_PHRASE_S` before it heard the phrase."""
SAME_PHRASE_S = 2.0
"""A rival's claim of the phrase that arrived this long before this speaker heard it is of
the same utterance: speakers that hear one phrase report it up to 1.35 s apart
(`scripts/bench_wake.py --nearer`, a speaker 10 dB fainter than another in loud noise),
and one that forgot the earlier claim would answer too."""


@dataclass(frozen=True, slots=True)
class WakeClaim:
    """One speaker's hearing of a wake phrase, as the others read it."""

    speaker: str
    """The speaker's name (`[mqtt] node_id`)."""
    run: str
    """This run's id: a speaker's own claims, echoed back by the broker, are not rivals."""
    phrase: str
    snr_db: float
    score: float
    yields_to: tuple[str, ...] = ()
    """The runs of the rivals whose claims of the phrase came over 3/4 of a window before
    this speaker heard it (`yielding_to`): this speaker yields to them."""

    def rank(self) -> tuple[float, float, str]:
        return (self.snr_db, self.score, self.speaker)


@dataclass(frozen=True, slots=True)
class WakePass:
    """A speaker that heard nothing when another's claim of `phrase` came: it will not
    answer the phrase, so no one need wait for its claim. Never a rival."""

    speaker: str
    run: str
    phrase: str


Said = TypeVar("Said", WakeClaim, WakePass)
"""What a speaker tells the others of a phrase: a claim, or a pass."""


def claim_json(claim: WakeClaim | WakePass) -> bytes:
    if isinstance(claim, WakePass):
        fields = {
            "speaker": claim.speaker,
            "run": claim.run,
            "phrase": claim.phrase,
            "passes": True,
        }
        return json.dumps(fields, ensure_ascii=False).encode()
    return json.dumps(
        {"speaker": claim.speaker, "run": claim.run, "phrase": claim.phrase,
         "snr_db": round(claim.snr_db, 2), "score": round(claim.score, 3),
         "yields_to": list(claim.yields_to)},
        ensure_ascii=False,
    ).encode()  # fmt: skip


def read_claim(payload: bytes) -> WakeClaim | WakePass | None:
    """A claim or a pass from the topic, or None for anything that is neither (another
    program's message, a damaged or hostile one): it is never a rival."""
    if len(payload) > MAX_CLAIM_BYTES:
        return None
    try:
        data = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    texts = [data.get(k) for k in ("speaker", "run", "phrase")]
    numbers = [data.get(k) for k in ("snr_db", "score")]
    if not all(isinstance(t, str) and t for t in texts):
        return None
    if data.get("passes") is True:
        return WakePass(*texts)  # type: ignore[arg-type]
    if not all(type(n) in (int, float) and math.isfinite(n) for n in numbers):
        return None
    yields_to = data.get("yields_to", [])
    if not isinstance(yields_to, list) or len(yields_to) > MAX_YIELDS:
        return None
    if not all(isinstance(run, str) and run for run in yields_to):
        return None
    return WakeClaim(*texts, *(float(n) for n in numbers), tuple(yields_to))  # type: ignore[arg-type]


def of_phrase(
    phrase: str, heard_ns: int, claims: Iterable[tuple[int, Said]]
) -> list[tuple[int, Said]]:
    """The `claims` or passes (each with when it arrived) of `phrase` heard here at
    `heard_ns`: those that arrived after `SAME_PHRASE_S` before it. Pure."""
    since = heard_ns - int(SAME_PHRASE_S * 1e9)
    return [(at, c) for at, c in claims if c.phrase == phrase and at >= since]


def yields_after_ns(window_ns: int) -> int:
    """How long after a rival's claim came a hearing of the phrase here yields to it (3/4
    of a window, `yielding_to`), and so how long a speaker that has not heard the phrase
    waits before it passes (`Arbiter.pass_unheard`): the two must be the same."""
    return window_ns * 3 // 4


def yielding_to(
    phrase: str, heard_ns: int, claims: list[tuple[int, WakeClaim]], window_ns: int
) -> tuple[str, ...]:
    """The runs of the rivals whose claims of `phrase` (with when each arrived) came over
    3/4 of a window before this speaker heard it at `heard_ns`: they decide before this
    speaker's claim can reach them, so this one yields to them. Pure."""
    decided_without_me = heard_ns - yields_after_ns(window_ns)
    return tuple(c.run for at, c in of_phrase(phrase, heard_ns, claims) if at < decided_without_me)


def rival_that_answers(
    mine: WakeClaim, heard_ns: int, claims: list[tuple[int, WakeClaim]]
) -> WakeClaim | None:
    """The rival that answers the phrase of `mine`, heard here at `heard_ns`, instead of
    this speaker, given the rivals' `claims` (each with when it arrived) that are in when
    this speaker decides; None: this speaker answers. A rival that yields to this
    speaker (`yields_to`) does not count; one this speaker yields to answers. Pure:
    `scripts/bench_wake.py --nearer` plays speakers' timings through it."""
    near = [c for _, c in of_phrase(mine.phrase, heard_ns, claims) if mine.run not in c.yields_to]
    first = [c for c in near if c.run in mine.yields_to]
    if first:
        return max(first, key=WakeClaim.rank)
    best = max(near, key=WakeClaim.rank, default=None)
    return best if best is not None and best.rank() > mine.rank() else None


def heard_first(
    mine: WakeClaim, heard_ns: int, claims: list[tuple[int, WakeClaim]], window_ns: int
) -> bool:
    """Whether this speaker heard the phrase of `mine` (at `heard_ns`) before every rival
    whose claim (with when it arrived) is in, by an eighth of a window: so that no two
    speakers can each take themselves for the first. Pure."""
    rivals = of_phrase(mine.phrase, heard_ns, claims)
    return bool(rivals) and all(at >= heard_ns + window_ns // 8 for at, _ in rivals)


def rivals_decided_ns(
    mine: WakeClaim, heard_ns: int, claims: list[tuple[int, WakeClaim]], window_ns: int
) -> int:
    """When the windows of all the rivals whose `claims` of the phrase are in have ended,
    so that no claim left to come can change what they decided: a window after the last
    one arrived, and no later than `SAME_PHRASE_S` after this speaker heard it. Pure."""
    last_ns = max((at for at, _ in of_phrase(mine.phrase, heard_ns, claims)), default=heard_ns)
    return min(last_ns + window_ns, heard_ns + int(SAME_PHRASE_S * 1e9))


def breaks_the_silence(
    mine: WakeClaim, heard_ns: int, claims: list[tuple[int, WakeClaim]], window_ns: int
) -> bool:
    """Whether this speaker answers the phrase of `mine`, heard here at `heard_ns`, though
    `rival_that_answers` has it yield, because every rival yields too: three speakers in
    a ring, the first yielding to a clearer second, the second to a clearer third, and the
    third to the first, which came first by over 3/4 of a window.

    Only the speaker that `heard_first` may break the silence, so that two never do. It
    plays each rival's own decision through from the claims (with when each arrived)
    that certainly reached that rival before its window ended, an eighth of a window
    early: a claim the rival may have missed is left out, and since more claims only give
    more reasons to yield, a rival that yields on these yields on the claims it had. A
    rival whose claim is not in yet heard the phrase over 3/4 of a window after this
    speaker, so it yields to it (`yielding_to`). Pure."""
    if not heard_first(mine, heard_ns, claims, window_ns):
        return False
    rivals = of_phrase(mine.phrase, heard_ns, claims)
    certain_ns = window_ns - window_ns // 8
    for at, rival in rivals:
        seen = [(a, c) for a, c in rivals if c.run != rival.run and a <= at + certain_ns]
        if heard_ns + window_ns // 8 <= at + certain_ns:  # this speaker's claim reached it
            seen.append((heard_ns, mine))
        if rival_that_answers(rival, at, seen) is None:
            return False  # it may answer
    return True


class Arbiter:
    """Decides, for each wake phrase this speaker hears, whether it answers (`decide`).

    `publish` sends a claim or a pass to the other speakers and says whether it could;
    `heard` is given theirs, from any thread; `hearing` is given this speaker's own hearing
    events, so that it knows when it hears nothing (and passes). `start`, on the loop
    `decide` runs on, lets it pass late (`pass_unheard`) on claims that found it hearing
    speech."""

    def __init__(
        self,
        speaker: str,
        run: str,
        window_ms: int,
        publish: Callable[[WakeClaim | WakePass], bool],
        clock: Clock | None = None,
    ) -> None:
        self.speaker, self.run = speaker, run
        self.window_ns = window_ms * 1_000_000
        self.publish = publish
        self.clock = clock or MonotonicClock()
        self._claims: deque[tuple[int, WakeClaim]] = deque(maxlen=MAX_KEPT_CLAIMS)
        """Rivals' claims with the clock time each arrived, oldest first."""
        self._lock = threading.Lock()
        self._alone = False
        """The last claim could not be sent: said once, until one can."""
        self._twins: set[str] = set()
        """Runs of other speakers heard with this one's name: each said once."""
        self._peers: set[str] = set()
        """The runs of the other speakers online (`present`)."""
        self._waiting: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        """Decisions waiting for claims, woken when one arrives."""
        self._passes: deque[tuple[int, WakePass]] = deque(maxlen=MAX_KEPT_CLAIMS)
        """Other speakers' passes with the clock time each arrived, oldest first."""
        self._out: dict[str, tuple[int, int]] = {}
        """The phrases this speaker passed on, each with when it may claim it again and
        when it last sent a pass."""
        self._claimed: dict[str, int] = {}
        """The phrases this speaker claimed, each with when it heard the latest."""
        self._speaking = False
        """An utterance of this speaker's own is open (`hearing`)."""
        self._deaf = False
        """Its wake detector stopped listening in its latest utterance with no phrase heard
        (`WakeListenEnded`): no wake event of that utterance is on its way."""
        self._quiet_since_ns: int | None = None
        """When its last utterance ended; None: none yet."""
        self._unheard: dict[str, int] = {}
        """The phrases others claimed while this speaker heard speech, each with when the
        first claim came: it passes late on those it does not hear (`pass_unheard`)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop `pass_unheard` is called on (`start`); None: only when called."""

    def start(self) -> None:
        """Pass late, from now on, on the running loop (`pass_unheard`)."""
        self._loop = asyncio.get_running_loop()

    @property
    def peers(self) -> int:
        """How many other speakers' runs are online."""
        with self._lock:
            return len(self._peers)

    def present(self, run: str, online: bool) -> None:
        """Another speaker's run came online or left (paho's thread)."""
        if run == self.run:
            return
        with self._lock:
            if online:
                self._peers.add(run)
            else:
                self._peers.discard(run)
        self._wake_up()

    def hearing(self, event: Event) -> None:
        """One of this speaker's own hearing events (a daemon listener): whether an
        utterance is open, when the last one ended, and whether its wake detector still
        listens in it."""
        if not isinstance(event, SpeechStarted | SpeechStopped | WakeListenEnded):
            return  # every other event, partial transcripts too: no lock to take
        with self._lock:
            if isinstance(event, SpeechStarted):
                self._speaking, self._deaf = True, False
            elif isinstance(event, SpeechStopped):
                self._speaking = False
                self._quiet_since_ns = self.clock.now_ns()
            elif isinstance(event, WakeListenEnded):
                self._deaf = True
        if isinstance(event, WakeListenEnded):
            self.pass_unheard()  # the claims that found it listening: now it cannot hear

    def heard(self, claim: WakeClaim | WakePass) -> None:
        """Another speaker's claim or pass arrived (paho's thread). A claim that finds this
        speaker hearing nothing, or out of the phrase, is passed on; one that finds it
        hearing speech, late, unless it hears the phrase (`pass_unheard`)."""
        if claim.run == self.run:
            return
        if isinstance(claim, WakePass):
            with self._lock:
                self._passes.append((self.clock.now_ns(), claim))
            self._wake_up()
            return
        if claim.speaker == self.speaker and claim.run not in self._twins:
            self._twins.add(claim.run)
            log.warning(
                "another speaker is also named %r ([mqtt] node_id): give each its own, "
                "or their wake phrases are told apart only by chance", claim.speaker,
            )  # fmt: skip
        with self._lock:
            self._claims.append((self.clock.now_ns(), claim))
        passing = self._passes_on(claim.phrase)
        if passing == "now":
            self.publish(WakePass(self.speaker, self.run, claim.phrase))
        elif passing == "late" and self._loop is not None:
            late_s = yields_after_ns(self.window_ns) / 1e9
            with contextlib.suppress(RuntimeError):  # the loop closed: the daemon stopped
                self._loop.call_soon_threadsafe(self._loop.call_later, late_s, self.pass_unheard)
        self._wake_up()

    def _passes_on(self, phrase: str) -> Literal["now", "late"] | None:
        """How this speaker passes on a claim of `phrase` that arrived now: "now" when it
        is out of the phrase already, or hears no phrase and has not claimed it; it stays
        out until `SAME_PHRASE_S` after now. A pass counts for `SAME_PHRASE_S`, so one is
        sent again only `PASS_AGAIN_S` after the last, however many claims come. "late"
        when what it hears may yet hold the phrase (`pass_unheard`): only the first claim
        of a phrase counts, the one it would yield to. None: no pass."""
        now_ns = self.clock.now_ns()
        same_ns = SAME_PHRASE_S * 1e9
        with self._lock:
            if self._out_of(phrase, now_ns):
                passed_ns = self._out[phrase][1]
                again = now_ns - passed_ns >= PASS_AGAIN_S * 1e9
                self._out[phrase] = (now_ns + int(same_ns), now_ns if again else passed_ns)
                return "now" if again else None
            if now_ns - self._claimed.get(phrase, now_ns - same_ns) < same_ns:
                return None  # it heard the phrase too: it is deciding, or decided
            if self._hears_no_phrase(now_ns) and self._room_to_stay_out(now_ns):
                self._out[phrase] = (now_ns + int(same_ns), now_ns)
                return "now"
            if now_ns - self._unheard.get(phrase, now_ns - same_ns) < same_ns:
                return None  # an earlier claim of it counts
            if len(self._unheard) >= MAX_KEPT_CLAIMS:  # a flood of phrases
                return None
            self._unheard[phrase] = now_ns
            return "late"

    def pass_unheard(self) -> None:
        """Pass on each phrase whose first claim came 3/4 of a window ago or more, and that
        this speaker has not heard since: any hearing of it from now on yields to that
        claim (`yielding_to`), so the pass changes no decision, and the claimant need not
        wait out its window for this speaker. Once its wake detector no longer listens
        (`WakeListenEnded`), on every such phrase at once: it cannot hear them. It stays
        out of a phrase until `SAME_PHRASE_S` after the claim came, when it would no
        longer have yielded."""
        now_ns = self.clock.now_ns()
        late_ns = yields_after_ns(self.window_ns)
        passing = []
        with self._lock:
            for phrase, came_ns in list(self._unheard.items()):
                if now_ns - came_ns < late_ns and not self._deaf:
                    continue  # it may yet hear the phrase
                del self._unheard[phrase]
                out_until_ns = came_ns + int(SAME_PHRASE_S * 1e9)
                heard_it = self._claimed.get(phrase, came_ns - 1) >= came_ns
                if heard_it or out_until_ns <= now_ns or self._out_of(phrase, now_ns):
                    continue  # it claimed the phrase, the claim is old, or it passed already
                if not self._room_to_stay_out(now_ns):
                    continue
                self._out[phrase] = (out_until_ns, now_ns)
                passing.append(phrase)
        for phrase in passing:
            self.publish(WakePass(self.speaker, self.run, phrase))

    def _room_to_stay_out(self, now_ns: int) -> bool:
        """Whether this speaker may stay out of one more phrase (under the lock): in a
        flood of phrases, only those it is out of now are kept."""
        if len(self._out) >= MAX_KEPT_CLAIMS:
            self._out = {p: out for p, out in self._out.items() if out[0] > now_ns}
        return len(self._out) < MAX_KEPT_CLAIMS

    def _out_of(self, phrase: str, now_ns: int) -> bool:
        """This speaker passed on `phrase` and stays out of it now (under the lock)."""
        return phrase in self._out and self._out[phrase][0] > now_ns

    def _hears_no_phrase(self, now_ns: int) -> bool:
        """Its wake detector stopped listening in its latest utterance, or no utterance of
        this speaker's is open and none ended within `QUIET_S` (under the lock)."""
        since_ns = self._quiet_since_ns
        quiet = not self._speaking and (since_ns is None or now_ns - since_ns >= QUIET_S * 1e9)
        return self._deaf or quiet

    def _wake_up(self) -> None:
        for loop, arrived in list(self._waiting):
            loop.call_soon_threadsafe(arrived.set)

    async def decide(self, event: WakeDetected) -> bool:
        """Whether this speaker answers the wake phrase `event`: True unless a rival's
        claim outranks it or came first by over 3/4 of a window. Decided after `window_ms`,
        or once every peer online has claimed it; at once True when the others cannot be
        told. The first to hear it, about to yield, waits on until its rivals have
        decided, to answer if they all yield (`breaks_the_silence`). False at once, with
        no claim, while this speaker stays out of a phrase it passed on."""
        heard_ns = self.clock.now_ns()
        with self._lock:
            out = self._out_of(event.phrase, heard_ns)
            if not out:
                self._claimed[event.phrase] = heard_ns
        if out:
            log.info(
                "wake phrase %r: this speaker had not heard it when another claimed it, "
                "and left it to that one", event.phrase,
            )  # fmt: skip
            return False
        first = yielding_to(event.phrase, heard_ns, self._claims_now(), self.window_ns)
        mine = WakeClaim(self.speaker, self.run, event.phrase, event.snr_db, event.score, first)
        if not self.publish(mine):
            if not self._alone:
                log.warning("cannot tell the other speakers of the wake phrase: answering alone")
            self._alone = True
            return True
        self._alone = False
        await self._claims_in(mine, heard_ns, heard_ns + self.window_ns)
        claims = self._claims_now()
        rival = rival_that_answers(mine, heard_ns, claims)
        if rival is None:
            return True
        if heard_first(mine, heard_ns, claims, self.window_ns):
            await self._until_rivals_decided(mine, heard_ns)
            claims = self._claims_now()
            if breaks_the_silence(mine, heard_ns, claims, self.window_ns):
                log.info(
                    "wake phrase %r: every speaker that heard it yields to another: this "
                    "one heard it first, and answers", event.phrase,
                )  # fmt: skip
                return True
            rival = rival_that_answers(mine, heard_ns, claims) or rival
        log.info(
            "wake phrase %r: %s heard it %s (%.1f dB over its room, here %.1f): it answers",
            event.phrase, rival.speaker, "first" if rival.run in mine.yields_to else "clearer",
            rival.snr_db, mine.snr_db,
        )  # fmt: skip
        return False

    async def _claims_in(self, mine: WakeClaim, heard_ns: int, until_ns: int) -> None:
        """Wait until the clock reads `until_ns` or every peer online has claimed `mine`'s
        phrase, heard at `heard_ns`."""
        waiting = (asyncio.get_running_loop(), asyncio.Event())
        self._waiting.add(waiting)
        try:
            while not self._every_peer_claimed(mine, heard_ns):
                waiting[1].clear()
                left_ns = until_ns - self.clock.now_ns()
                try:
                    await asyncio.wait_for(waiting[1].wait(), max(0, left_ns) / 1e9)
                except TimeoutError:
                    return
        finally:
            self._waiting.discard(waiting)

    async def _until_rivals_decided(self, mine: WakeClaim, heard_ns: int) -> None:
        """Wait until every rival whose claim is in has decided (`rivals_decided_ns`; a
        claim that comes meanwhile may make it later) or every peer online has claimed."""
        while not self._every_peer_claimed(mine, heard_ns):
            until_ns = rivals_decided_ns(mine, heard_ns, self._claims_now(), self.window_ns)
            if self.clock.now_ns() >= until_ns:
                return
            await self._claims_in(mine, heard_ns, until_ns)

    def _every_peer_claimed(self, mine: WakeClaim, heard_ns: int) -> bool:
        with self._lock:
            if not self._peers:
                return False  # none known: one may not have said it is online yet
            claimed = {c.run for _, c in of_phrase(mine.phrase, heard_ns, self._claims)}
            passed = {p.run for _, p in of_phrase(mine.phrase, heard_ns, self._passes)}
            return self._peers <= claimed | passed

    def _claims_now(self) -> list[tuple[int, WakeClaim]]:
        """The rivals' claims kept, each with when it arrived (a copy: paho's thread adds)."""
        with self._lock:
            return list(self._claims)
