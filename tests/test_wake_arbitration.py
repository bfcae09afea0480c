"""Several speakers that hear one wake phrase (`[wake] arbitrate`): the one that heard it
clearest answers, exactly one answers whatever the order the claims travel in, a speaker
that cannot reach the others answers alone, and nothing on the claims topic that is not
a claim counts. The daemons run on a real mosquitto."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import replace
from socket import IPPROTO_TCP, TCP_NODELAY

import pytest

from broker import Subscriber, clear_retained
from daemon_kit import build, write_config
from sori.core.clock import FakeClock
from sori.core.events import (
    IntentCommitted,
    SpeechStarted,
    SpeechStopped,
    WakeDetected,
    WakeListenEnded,
)
from sori.serving.conversation.arbitration import (
    MAX_CLAIM_BYTES,
    MAX_KEPT_CLAIMS,
    SAME_PHRASE_S,
    Arbiter,
    WakeClaim,
    WakePass,
    breaks_the_silence,
    claim_json,
    read_claim,
)
from sori.serving.wake_claims import PRESENCE, TOPIC, MqttWakeClaims

WINDOW_MS = 80
MS = 1_000_000


def woke(snr_db: float, score: float = 5.0, phrase: str = "소리야", uid: int = 2) -> WakeDetected:
    return WakeDetected(0, uid, phrase, 0, 0, score, snr_db)


def rival(speaker: str, snr_db: float, score: float = 5.0, phrase: str = "소리야") -> WakeClaim:
    return WakeClaim(speaker, f"run-{speaker}", phrase, snr_db, score)


def in_speech(judge: Arbiter) -> Arbiter:
    """`judge` as a speaker is when it hears a wake phrase: an utterance of its own open
    (one that hears nothing passes on the others' claims)."""
    judge.hearing(SpeechStarted(0, 1, 0))
    return judge


def arbiter(name: str = "living", clock: FakeClock | None = None, sent: list | None = None):
    def publish(claim: WakeClaim | WakePass) -> bool:
        if sent is not None:
            sent.append(claim)
        return True

    return in_speech(Arbiter(name, f"run-{name}", WINDOW_MS, publish, clock or FakeClock(10**12)))


async def decide_with(judge: Arbiter, event: WakeDetected, during=()) -> bool:
    """`judge.decide(event)`, with the claims in `during` arriving within its window."""
    deciding = asyncio.create_task(judge.decide(event))
    await asyncio.sleep(0.01)
    for claim in during:
        judge.heard(claim)
    return await deciding


@pytest.mark.parametrize(
    ("theirs", "answers"),
    [(None, True), (12.0, False), (6.0, True)],
    ids=["alone", "a clearer rival", "a fainter rival"],
)
def test_the_speaker_that_heard_the_phrase_clearest_answers(theirs, answers):
    sent = []
    judge = arbiter(sent=sent)
    during = [] if theirs is None else [rival("kitchen", theirs)]
    assert asyncio.run(decide_with(judge, woke(9.0), during)) is answers
    assert sent == [WakeClaim("living", "run-living", "소리야", 9.0, 5.0)]  # told the others


def test_two_speakers_wired_together_answer_exactly_once_in_any_order():
    """Each publishes straight to the other: for every pair of hearings, ties included,
    one answers. A tie in level goes to the detector's score, then to the name."""

    async def pair(mine: tuple[float, float], theirs: tuple[float, float], gap_s: float):
        a = in_speech(Arbiter("living", "r1", WINDOW_MS, lambda c: b.heard(c) or True))
        b = in_speech(Arbiter("kitchen", "r2", WINDOW_MS, lambda c: a.heard(c) or True))
        first = asyncio.create_task(a.decide(woke(*mine)))
        await asyncio.sleep(gap_s)
        second = asyncio.create_task(b.decide(woke(*theirs)))
        return await first, await second

    for mine, theirs in [((9, 5), (12, 5)), ((12, 5), (9, 5)), ((9, 5), (9, 6)), ((9, 5), (9, 5))]:
        for gap_s in (0.0, 0.03, 0.072):  # the last: the second yields to the first, and says so
            answered = asyncio.run(pair(mine, theirs, gap_s))
            assert sorted(answered) == [False, True], (mine, theirs, gap_s)
    assert asyncio.run(pair((9, 5), (12, 5), 0.0)) == (False, True)  # the clearer one
    assert asyncio.run(pair((9, 5), (9, 5), 0.0)) == (True, False)  # "living" > "kitchen"


@pytest.mark.parametrize(
    ("online", "left", "theirs", "answers", "waits"),
    [
        (["kitchen"], [], 6.0, True, False),
        (["kitchen"], [], 12.0, False, False),
        (["kitchen", "bedroom"], [], 6.0, True, True),  # the bedroom did not hear it
        (["kitchen", "bedroom"], ["bedroom"], 6.0, True, False),
        ([], [], 6.0, True, True),  # nobody known online: any speaker may claim
    ],
    ids=["fainter", "clearer", "a peer silent", "a peer that left", "no peer known"],
)
def test_once_every_peer_online_has_claimed_there_is_nothing_left_to_wait_for(
    online, left, theirs, answers, waits
):
    """Each speaker says it is online: once every peer has claimed the phrase, the
    speaker decides (as it would at the window's end). A peer that has not claimed it, or
    none known, is waited for to the window's end; one that left is not."""
    window_ms = 1500
    judge = in_speech(Arbiter("living", "run-living", window_ms, lambda claim: True))
    for name in online:
        judge.present(f"run-{name}", True)
    for name in left:
        judge.present(f"run-{name}", False)
    judge.present("run-living", True)  # its own presence, echoed: no peer
    started = time.monotonic()
    assert asyncio.run(decide_with(judge, woke(9.0), [rival("kitchen", theirs)])) is answers
    took_s = time.monotonic() - started
    assert took_s >= window_ms / 1000 - 0.01 if waits else took_s < window_ms / 2000


@pytest.mark.parametrize(
    ("before_ms", "snr_db", "answers"),
    [
        (3 * WINDOW_MS // 10, 6.0, True),  # came first but within reach: ranked
        (9 * WINDOW_MS // 10, 6.0, False),  # it decided before this claim could reach it
        (9 * WINDOW_MS // 10, 12.0, False),
        (3 * WINDOW_MS, 12.0, False),  # reported late, as a fainter speaker may
        (int(SAME_PHRASE_S * 1000) + 100, 12.0, True),  # an earlier phrase: not this one
    ],
)
def test_a_rival_that_decided_before_this_speaker_could_tell_it_answers(before_ms, snr_db, answers):
    clock = FakeClock(10**12)
    judge = arbiter(clock=clock)
    judge.heard(rival("kitchen", snr_db))
    clock.advance_ns(before_ms * MS)
    assert asyncio.run(judge.decide(woke(9.0))) is answers


def test_three_speakers_in_a_ring_answer_once_not_never():
    """The bedroom hears the phrase first, faintest; the kitchen 260 ms later, clearer; the
    living room 470 ms after the bedroom, clearest. By the ranks alone each yields: the
    bedroom to the kitchen (the living room's claim comes after its window), the kitchen
    to the living room, and the living room to the bedroom, which came over 3/4 of a
    window before it. The bedroom, first, plays their decisions through and answers."""
    window_ms = 400

    async def ring() -> list[bool]:
        judges = [
            in_speech(Arbiter(name, f"run-{name}", window_ms, lambda c, name=name: tell(name, c)))
            for name in ("bedroom", "kitchen", "living")
        ]

        def tell(sender: str, claim: WakeClaim) -> bool:
            for judge in judges:
                if judge.speaker != sender:
                    judge.heard(claim)
            return True

        bedroom = asyncio.create_task(judges[0].decide(woke(6.0)))
        await asyncio.sleep(0.26)
        kitchen = asyncio.create_task(judges[1].decide(woke(9.0)))
        await asyncio.sleep(0.21)
        living = asyncio.create_task(judges[2].decide(woke(12.0)))
        return [await bedroom, await kitchen, await living]

    started = time.monotonic()
    assert asyncio.run(ring()) == [True, False, False]
    # the bedroom waits for the living room's window: a window after its claim came
    assert 0.47 + window_ms / 1000 - 0.02 < time.monotonic() - started < 2.0


def claims_at(*arrived: tuple[int, WakeClaim]) -> list[tuple[int, WakeClaim]]:
    return [(ms * MS, claim) for ms, claim in arrived]


RING_MS = 400  # the ring's window: the bedroom heard it at 0, as in the test above
KITCHEN = rival("kitchen", 9.0)
LIVING = replace(rival("living", 12.0), yields_to=("run-bedroom",))


@pytest.mark.parametrize(
    ("claims", "breaks"),
    [
        (claims_at((260, KITCHEN), (470, LIVING)), True),
        # the living room's claim may have missed the kitchen's window (it ends at 660)
        (claims_at((260, KITCHEN), (620, LIVING)), False),
        # the kitchen heard it within an eighth of a window: either may think itself first
        (claims_at((40, KITCHEN), (470, LIVING)), False),
        # the living room yields to nobody: it answers
        (claims_at((260, KITCHEN), (470, replace(LIVING, yields_to=()))), False),
        # the kitchen is alone and clearer: it answers
        (claims_at((260, KITCHEN)), False),
        # the kitchen heard another phrase: the bedroom yields to nobody
        (claims_at((260, replace(KITCHEN, phrase="지니야"))), False),
    ],
    ids=["a ring", "maybe missed", "not first", "one answers", "two", "no rival"],
)
def test_only_the_first_breaks_a_silence_it_is_sure_of(claims, breaks):
    bedroom = WakeClaim("bedroom", "run-bedroom", "소리야", 6.0, 5.0)
    assert breaks_the_silence(bedroom, 0, claims, RING_MS * MS) is breaks


@pytest.mark.parametrize(
    ("heard_before", "passes"),
    [
        (None, True),  # nothing heard since it started
        ("speaking", False),  # an utterance open: the phrase may be in it
        (500, False),  # an utterance ended 500 ms ago: its wake event may be on its way
        (1500, True),
        ("claimed", False),  # it heard the phrase itself: it decides as a rival
        ("speaking, no longer listened to", True),  # its start is over: no phrase in it
        ("no longer listened to, ended 100 ms ago", True),  # no wake event on its way
        ("no longer listened to, then a new utterance", False),
    ],
)
def test_a_speaker_that_hears_nothing_passes_on_a_claim(heard_before, passes):
    clock = FakeClock(10**12)
    sent = []
    judge = Arbiter("kitchen", "run-kitchen", WINDOW_MS, lambda c: sent.append(c) or True, clock)
    if heard_before == "speaking":
        judge.hearing(SpeechStarted(0, 1, 0))
    elif isinstance(heard_before, str) and "no longer listened to" in heard_before:
        judge.hearing(SpeechStarted(0, 1, 0))
        judge.hearing(WakeListenEnded(0, 1))
        if "ended" in heard_before:
            judge.hearing(SpeechStopped(0, 1, 0))
            clock.advance_ns(100 * MS)
        if "new utterance" in heard_before:
            judge.hearing(SpeechStopped(0, 1, 0))
            judge.hearing(SpeechStarted(0, 2, 0))
    elif heard_before == "claimed":
        asyncio.run(judge.decide(woke(9.0)))
        sent.clear()
        clock.advance_ns(500 * MS)
    elif heard_before is not None:
        judge.hearing(SpeechStarted(0, 1, 0))
        judge.hearing(SpeechStopped(0, 1, 0))
        clock.advance_ns(heard_before * MS)
    judge.heard(rival("living", 12.0))
    assert sent == ([WakePass("kitchen", "run-kitchen", "소리야")] if passes else [])


def test_a_speaker_that_passed_stays_out_of_the_phrase():
    """Having passed, it passes on every claim of the phrase, and yields a hearing of its
    own without claiming it: whoever counted its pass never meets it as a rival. Two
    seconds after the last claim of the phrase it is back in."""
    clock = FakeClock(10**12)
    sent = []
    judge = Arbiter("kitchen", "run-kitchen", WINDOW_MS, lambda c: sent.append(c) or True, clock)
    judge.heard(rival("living", 12.0))
    judge.hearing(SpeechStarted(0, 1, 0))  # now it hears something, maybe the phrase
    clock.advance_ns(1500 * MS)
    judge.heard(rival("bedroom", 6.0))  # out still: passed on again, and out for longer
    clock.advance_ns(1500 * MS)
    assert asyncio.run(judge.decide(woke(30.0))) is False  # yielded, though the clearest
    passed = WakePass("kitchen", "run-kitchen", "소리야")
    assert sent == [passed, passed]
    judge.heard(rival("living", 12.0, phrase="지니야"))  # another phrase: in speech, no pass
    clock.advance_ns(int(SAME_PHRASE_S * 1e9))
    assert asyncio.run(judge.decide(woke(30.0))) is True
    assert [type(c) for c in sent[2:]] == [WakeClaim]


@pytest.mark.parametrize("heard_after_ms", [None, 10, 59], ids=["never", "soon", "just within"])
def test_a_speaker_that_hears_speech_passes_once_it_would_yield_anyway(heard_after_ms):
    """A claim comes while the kitchen hears speech: the phrase may be in it, so no pass
    at once. Once 3/4 of a window (60 ms) has gone without the phrase, a hearing of it
    would yield to that claim: the kitchen passes then, and yields that hearing with no
    claim. Had it heard the phrase before, it claims it, and passes on nothing."""
    clock, sent = FakeClock(10**12), []
    judge = arbiter("kitchen", clock, sent)
    came_ns = clock.now_ns()
    judge.heard(rival("living", 12.0))
    assert sent == []

    def at(ms: int) -> None:  # `ms` after the claim came
        clock.advance_ns(came_ns + ms * MS - clock.now_ns())

    if heard_after_ms is not None:
        at(heard_after_ms)
        asyncio.run(judge.decide(woke(30.0)))
    at(59)
    judge.pass_unheard()
    if heard_after_ms is None:
        assert sent == []  # too soon: the phrase may yet come
    at(61)
    judge.pass_unheard()
    passed = WakePass("kitchen", "run-kitchen", "소리야")
    if heard_after_ms is None:
        assert sent == [passed]
        assert asyncio.run(judge.decide(woke(30.0))) is False  # though the clearest
        judge.pass_unheard()
        assert sent == [passed]  # not claimed, and passed once
    else:
        assert [type(c) for c in sent] == [WakeClaim]


def test_a_claim_that_found_the_speaker_listening_is_passed_on_once_it_cannot_hear():
    """The kitchen's utterance began just before the living room's claim came, so the
    phrase may be in it: no pass. Its wake detector then hears the utterance's start
    with no phrase in it (`WakeListenEnded`): the kitchen passes at once, not 3/4 of a
    window after the claim."""
    clock, sent = FakeClock(10**12), []
    judge = arbiter("kitchen", clock, sent)
    judge.heard(rival("living", 12.0))
    clock.advance_ns(10 * MS)
    assert sent == []
    judge.hearing(WakeListenEnded(0, 1))
    assert sent == [WakePass("kitchen", "run-kitchen", "소리야")]
    clock.advance_ns(WINDOW_MS * MS)
    judge.pass_unheard()
    assert len(sent) == 1  # and once


def test_a_late_pass_keeps_the_speaker_out_only_as_long_as_the_claim_counts():
    """Out of the phrase until 2 s after the claim came, as a hearing would have yielded
    to it; then a hearing of the phrase is the kitchen's own."""
    clock, sent = FakeClock(10**12), []
    judge = arbiter("kitchen", clock, sent)
    judge.heard(rival("living", 12.0))
    clock.advance_ns(500 * MS)
    judge.pass_unheard()
    assert len(sent) == 1
    clock.advance_ns(int(SAME_PHRASE_S * 1e9) - 500 * MS - MS)
    assert asyncio.run(judge.decide(woke(30.0))) is False
    clock.advance_ns(2 * MS)
    assert asyncio.run(judge.decide(woke(30.0))) is True
    assert [type(c) for c in sent] == [WakePass, WakeClaim]


def test_a_flood_of_phrases_leaves_late_passes_bounded():
    clock, sent = FakeClock(10**12), []
    judge = arbiter("kitchen", clock, sent)
    for i in range(500):
        judge.heard(rival("living", 12.0, phrase=f"phrase {i}"))
    assert len(judge._unheard) <= MAX_KEPT_CLAIMS
    clock.advance_ns(WINDOW_MS * MS)
    judge.pass_unheard()
    assert len(sent) == MAX_KEPT_CLAIMS and judge._unheard == {}
    assert len(judge._out) <= MAX_KEPT_CLAIMS


def test_a_flood_of_claims_gets_one_pass_a_second():
    clock = FakeClock(10**12)
    sent = []
    judge = Arbiter("kitchen", "run-kitchen", WINDOW_MS, lambda c: sent.append(c) or True, clock)
    for i in range(50):  # 50 claims in half a second: one pass, which counts for 2 s
        judge.heard(rival(f"speaker{i}", 12.0))
        clock.advance_ns(10 * MS)
    assert len(sent) == 1
    clock.advance_ns(500 * MS)
    judge.heard(rival("living", 12.0))  # a second after the pass: sent again
    assert len(sent) == 2


@pytest.mark.parametrize(
    ("passed", "waits"),
    [
        (WakePass("kitchen", "run-kitchen", "소리야"), False),
        (WakePass("kitchen", "run-kitchen", "지니야"), True),  # another phrase
        (WakePass("bedroom", "run-bedroom", "소리야"), True),  # not the peer waited for
    ],
)
def test_a_peers_pass_ends_the_wait_for_its_claim(passed, waits):
    window_ms = 800
    judge = in_speech(Arbiter("living", "run-living", window_ms, lambda claim: True))
    judge.present("run-kitchen", True)
    started = time.monotonic()
    assert asyncio.run(decide_with(judge, woke(9.0), [passed])) is True
    took_s = time.monotonic() - started
    assert took_s >= window_ms / 1000 - 0.01 if waits else took_s < window_ms / 2000


def test_other_phrases_and_the_speakers_own_echo_are_no_rivals(caplog):
    judge = arbiter()
    echo = WakeClaim("living", "run-living", "소리야", 30.0, 9.0)  # the broker sends it back
    other = rival("kitchen", 30.0, phrase="지니야")
    assert asyncio.run(decide_with(judge, woke(9.0), [echo, other])) is True
    assert "also named" not in caplog.text
    twin = WakeClaim("living", "run-of-a-second-board", "소리야", 30.0, 9.0)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert asyncio.run(decide_with(judge, woke(9.0), [twin])) is False
    assert caplog.text.count("also named 'living'") == 1  # one name on two boards, said once


def test_a_speaker_that_cannot_tell_the_others_answers_at_once_and_says_so_once(caplog):
    judge = Arbiter("living", "r1", 5000, lambda claim: False)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        answered = [asyncio.run(judge.decide(woke(9.0))) for _ in range(3)]
    assert answered == [True] * 3
    assert time.monotonic() - started < 2.5  # no window of 5 s waited
    assert caplog.text.count("answering alone") == 1


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"on",
        b"[1, 2]",
        b'"claim"',
        b"\xff\xfe",
        b"{}",
        b'{"speaker": "k", "run": "r", "phrase": "p", "snr_db": NaN, "score": 1}',
        b'{"speaker": "k", "run": "r", "phrase": "p", "snr_db": Infinity, "score": 1}',
        b'{"speaker": "k", "run": "r", "phrase": "p", "snr_db": true, "score": 1}',
        b'{"speaker": "k", "run": "r", "phrase": "p", "snr_db": "9", "score": 1}',
        b'{"speaker": "", "run": "r", "phrase": "p", "snr_db": 9, "score": 1}',
        b'{"speaker": ["k"], "run": "r", "phrase": "p", "snr_db": 9, "score": 1}',
        b'{"run": "r", "phrase": "p", "snr_db": 9, "score": 1}',
        b'{"speaker": "k", "run": "r", "phrase": "p", "snr_db": 9, "score": 1, "yields_to": "r2"}',
        b'{"speaker": "k", "run": "r", "phrase": "p", "snr_db": 9, "score": 1, "yields_to": [7]}',
        b'{"speaker": "k", "run": "r", "phrase": "p", "snr_db": 9, "score": 1, "yields_to": '
        + json.dumps([f"r{i}" for i in range(17)]).encode()
        + b"}",
        b'{"speaker": "k", "run": "r", "passes": true}',
        b'{"speaker": "k", "run": "r", "phrase": 7, "passes": true}',
        b'{"speaker": "k", "run": "r", "phrase": "p", "passes": "yes"}',
        b'{"speaker": "k", "run": "r", "phrase": "p", "snr_db": 9, "score": 1, "x": "'
        + b"a" * MAX_CLAIM_BYTES
        + b'"}',
    ],
)
def test_what_is_not_a_claim_is_never_a_rival(payload):
    assert read_claim(payload) is None


def test_a_claim_reads_back_as_it_was_sent():
    claim = WakeClaim("sori_kitchen", "3f2a", "소리야", 14.25, 3.5, ("9c01",))
    assert read_claim(claim_json(claim)) == claim
    passed = WakePass("sori_kitchen", "3f2a", "소리야")
    assert read_claim(claim_json(passed)) == passed


HOME_EXTRA = 'node_id = "{node}"\n'
LIGHT_ON = IntentCommitted(0, 2, "거실 불 켜줘", "HassTurnOn", {"name": "거실 조명"})
WAKE = "\n[wake]\narbitrate = true\narbitrate_window_ms = 150\n"


def speaker(
    tmp_path, mosquitto, node: str, wake: str = WAKE, input_name: str = "mic", extra: str = ""
):
    folder = tmp_path / node
    folder.mkdir()
    config = write_config(folder, mosquitto, HOME_EXTRA.format(node=node) + extra, wake)
    return build(config, folder / "reply.wav", input_name=input_name)


def sent_so_far(events: asyncio.Queue) -> list[dict]:
    """The events a daemon published so far, from its subscription `events`."""
    return [events.get_nowait() for _ in range(events.qsize())]


def of_type(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]


async def until(condition, timeout_s: float = 10.0) -> None:
    end = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < end, "timed out"
        await asyncio.sleep(0.02)


def run_speakers(main, living, kitchen, sub: Subscriber, broker: str):
    """`main()` (40 s at most), then both speakers stopped: what it returned, and every
    message `sub` saw on the `broker` until it fell quiet (retained ones cleared after)."""
    try:
        result = asyncio.run(asyncio.wait_for(main(), 40))
    finally:
        asyncio.run(living.close())
        asyncio.run(kitchen.close())
    try:
        return result, sub.until_quiet()
    finally:
        sub.close()
        clear_retained(broker)


def test_two_speakers_that_hear_one_command_act_on_it_once(tmp_path, mosquitto):
    """ "소리야, 거실 불 켜줘" between the living room's speaker and the kitchen's: the
    living room heard it 9 dB clearer. Only the living room plays its tone, turns the
    light on and answers. The kitchen plays nothing, says it yielded, closes its listening
    window, and shows Home Assistant it is not listening. Each knows the other is online,
    so once both have claimed the phrase they decide, long before their 2 s window ends;
    when they stop, they say they left."""
    discovery, wake = "discovery = true\n", WAKE.replace("150", "2000")
    living = speaker(tmp_path, mosquitto, "living", wake, extra=discovery)
    kitchen = speaker(tmp_path, mosquitto, "kitchen", wake, extra=discovery)
    sub = Subscriber(mosquitto)

    async def main():
        events = {}
        for daemon in (living, kitchen):
            daemon.start()
            events[daemon] = daemon.subscribe()
        await until(lambda: all(d.health()["arbitration"]["peers"] for d in (living, kitchen)))
        now = living.clock.now_ns()
        heard = [(living, 18.0), (kitchen, 9.0)]
        for daemon, _ in heard:  # both hear someone speak: neither passes
            await daemon.on_heard(SpeechStarted(now, 2, now - 500 * MS))
        started = time.monotonic()
        await asyncio.gather(*(
            d.on_heard(WakeDetected(now, 2, "소리야", now - 400 * MS, now, 5.0, snr))
            for d, snr in heard
        ))  # fmt: skip
        await asyncio.gather(*(d.on_heard(LIGHT_ON) for d, _ in heard))
        decided_s = time.monotonic() - started
        windows = [d.health()["listening"]["listening_s"] for d in (living, kitchen)]
        await asyncio.gather(living.drain(), kitchen.drain())
        published = [sent_so_far(events[d]) for d in (living, kitchen)]
        return windows, published, living.health(), decided_s

    (windows, published, health, decided_s), sent = run_speakers(
        main, living, kitchen, sub, mosquitto
    )
    claims = [read_claim(payload.encode()) for topic, payload in sent if topic == TOPIC]
    assert sorted((type(c).__name__, c.speaker) for c in claims) == [
        ("WakeClaim", "kitchen"),
        ("WakeClaim", "living"),
    ]
    assert [m for m in sent if m[0] == "sori/light/living_room/set"] == [
        ("sori/light/living_room/set", "ON")
    ]
    assert (living.turns_done, kitchen.turns_done) == (1, 0)
    assert windows[0] > 0 and windows[1] == 0
    living_played, kitchen_played = (of_type(by, "PlaybackStarted") for by in published)
    assert sorted(e["text"] for e in living_played) == ["", "알겠어요."]  # the tone, the reply
    assert kitchen_played == []
    assert of_type(published[0], "WakeYielded") == []
    assert [(e["utterance_id"], e["phrase"]) for e in of_type(published[1], "WakeYielded")] == [
        (2, "소리야")
    ]
    yields = [d.metrics.render() for d in (living, kitchen)]
    assert "sori_wakes_yielded_total 0" in yields[0] and "sori_wakes_yielded_total 1" in yields[1]
    kitchen_listening = [p for t, p in sent if t == "sori/kitchen/listening"]
    assert kitchen_listening == ["OFF", "ON", "OFF"]
    assert health["arbitration"] == {
        "speaker": "living",
        "window_ms": 2000,
        "connected": True,
        "peers": 1,
    }
    assert decided_s < 1.0  # both claimed: no window waited out
    presence = {}
    for topic, payload in sent:
        if topic.startswith(f"{PRESENCE}/"):
            presence.setdefault(topic, []).append(payload)
    assert sorted(seen[0] for seen in presence.values()) == ["kitchen", "living"]
    assert all(seen[-1] == "" for seen in presence.values())  # each left: cleared


@pytest.mark.parametrize("kitchen_hears", ["nothing", "speech", "a long sentence"])
def test_a_speaker_that_hears_no_phrase_lets_the_other_answer_before_its_window_ends(
    tmp_path, mosquitto, kitchen_hears
):
    """ "소리야, 거실 불 켜줘" in the living room; the kitchen's speaker, in another room,
    hears nothing and says so when the living room's claim comes: the living room acts
    without waiting out its 2 s window. So it does when the kitchen hears a long sentence
    on the TV whose start is over (its wake detector listens no more). A kitchen that
    hears someone start to speak says nothing at once (the phrase may be in what it
    hears), but passes once 3/4 of the window has gone by without it: the living room
    waits 1.5 s, not 2."""
    wake = WAKE.replace("150", "2000")
    living = speaker(tmp_path, mosquitto, "living", wake)
    kitchen = speaker(tmp_path, mosquitto, "kitchen", wake)
    sub = Subscriber(mosquitto)

    async def main() -> float:
        for daemon in (living, kitchen):
            daemon.start()
        await until(lambda: all(d.health()["arbitration"]["peers"] for d in (living, kitchen)))
        now = living.clock.now_ns()
        if kitchen_hears != "nothing":
            await kitchen.on_heard(SpeechStarted(now, 1, now))
        if kitchen_hears == "a long sentence":
            await kitchen.on_heard(WakeListenEnded(now, 1))
        started = time.monotonic()
        await living.on_heard(WakeDetected(now, 2, "소리야", now - 400 * MS, now, 5.0, 18.0))
        await living.on_heard(LIGHT_ON)  # held until the living room has decided
        decided_s = time.monotonic() - started
        await asyncio.gather(living.drain(), kitchen.drain())
        return decided_s

    decided_s, sent = run_speakers(main, living, kitchen, sub, mosquitto)
    said = [read_claim(payload.encode()) for topic, payload in sent if topic == TOPIC]
    assert [m for m in sent if m[0] == "sori/light/living_room/set"] == [
        ("sori/light/living_room/set", "ON")
    ]
    assert (living.turns_done, kitchen.turns_done) == (1, 0)
    assert [type(c) for c in said] == [WakeClaim, WakePass]
    assert said[1].speaker == "kitchen"
    if kitchen_hears == "speech":
        assert 1.5 - 0.05 <= decided_s < 2.0 - 0.1
    else:
        assert decided_s < 1.0


def test_claims_leave_at_once(mosquitto):
    """A claim is not held back until the broker acknowledges the last packet (Nagle's
    algorithm; 40 ms on loopback)."""
    claims = MqttWakeClaims(mosquitto, "kitchen", "run-kitchen", print, print)
    claims.start()
    try:
        assert claims.connected.wait(10)
        assert claims._client.socket().getsockopt(IPPROTO_TCP, TCP_NODELAY)
    finally:
        claims.close()
        clear_retained(mosquitto)


def test_a_speaker_whose_broker_is_down_answers_alone(tmp_path):
    """No broker on the port: the speaker answers the wake phrase and acts on the command
    as it would alone, after no wait."""
    from broker import free_port

    slow = WAKE.replace("150", "2000")
    daemon = speaker(tmp_path, f"mqtt://127.0.0.1:{free_port()}", "living", slow)

    async def main():
        daemon.start()
        now = daemon.clock.now_ns()
        started = time.monotonic()
        await daemon.on_heard(WakeDetected(now, 2, "소리야", now - 400 * MS, now, 5.0, 12.0))
        await daemon.on_heard(LIGHT_ON)
        waited = time.monotonic() - started
        await daemon.drain()
        return waited, daemon.health()

    try:
        waited, health = asyncio.run(asyncio.wait_for(main(), 40))
    finally:
        asyncio.run(daemon.close())
    assert waited < 1.0  # no window of 2 s waited for: nobody to hear from
    assert health["arbitration"]["connected"] is False
    assert daemon.turns_done == 1


def test_a_replayed_file_is_never_arbitrated(tmp_path, mosquitto):
    """No other speaker hears a file: `sori replay` and `--input FILE` answer every wake
    phrase themselves, with arbitration configured."""
    daemon = speaker(tmp_path, mosquitto, "living", input_name=str(tmp_path / "heard.wav"))
    try:
        assert daemon.conversation.gated and daemon.arbitrate is None
        assert daemon.health()["arbitration"] is None
    finally:
        asyncio.run(daemon.close())


@pytest.mark.parametrize("outranked", [True, False], ids=["another answers", "alone"])
def test_a_command_after_the_phrase_alone_is_answered_as_the_phrase_is(
    tmp_path, mosquitto, outranked
):
    """ "소리야" alone, then "거실 불 켜줘" as an utterance of its own, begun while the
    speakers still decide: a speaker another outranks (its claim read off the broker)
    drops the command with the phrase; alone, it acts on it."""
    daemon = speaker(tmp_path, mosquitto, "kitchen")
    sub = Subscriber(mosquitto)

    async def main():
        daemon.start()
        await until(lambda: daemon.health()["arbitration"]["connected"])
        now = daemon.clock.now_ns()
        await daemon.on_heard(WakeDetected(now, 2, "소리야", now - 400 * MS, now, 5.0, 9.0))
        if outranked:
            sub._client.publish(TOPIC, claim_json(rival("living", 20.0)))
        await daemon.on_heard(SpeechStarted(now, 3, now + 100 * MS))
        await daemon.on_heard(replace(LIGHT_ON, utterance_id=3))
        await daemon.drain()

    try:
        asyncio.run(asyncio.wait_for(main(), 40))
    finally:
        asyncio.run(daemon.close())
        sub.close()
    assert daemon.turns_done == (0 if outranked else 1)
