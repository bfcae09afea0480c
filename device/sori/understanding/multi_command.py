"""Several commands in one sentence ("거실 불 켜고 에어컨 꺼 줘"): each part matched on its
own, acted on in order, and one reply for all of them.

Turn logic (floor 3). A sentence no preset understands as a whole is cut at its
connectives (`sori.understanding.intents.splitting`). When every part matches, the parts are carried
out one after the other, each only after the one before has ended; the reply says what
each did, or what failed. When some part does not match on its own, nothing at all is
done and the reply says which words were not understood: half a request carried out is
worse than none. A part that cancels ("아 됐어") cancels the whole sentence.

Targets joined by 하고/이랑/랑 share the verb after them: "거실 불하고 안방 불 꺼줘" and
"거실이랑 안방 불 꺼줘" are "거실 불 꺼줘" then "안방 불 꺼줘". The joined target takes
the words of the next command that follow as many words as it has ("거실 불" + "안방 불
꺼줘" → "거실 불 꺼줘"), else fewer or more, and counts only when that matches the same
intent as the next command; otherwise it is a part that did not match.

One sentence never fans out to many commands: a command said again counts once (the
first time it was said), a sentence of more than MAX_PARTS different commands is refused
whole, and so is one that asks a device for opposite states (on and off): either is a
recognizer caught in a loop, a slip, or someone probing the device, never a wish to act
on dozens of devices or to flicker one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from sori.acting.actions.registry import resolve
from sori.core.events import ActionFinished, Event, IntentCommitted
from sori.core.home import Home
from sori.core.intent_kinds import NOTHING, kind_of
from sori.understanding.intents.korean import josa
from sori.understanding.intents.responses import target_en, target_ko
from sori.understanding.intents.splitting import Piece, split_commands

log = logging.getLogger(__name__)

MAX_PARTS = 5
"""Most different commands one sentence may carry. A household says a handful at most in
one breath ("거실 불 켜고 에어컨 끄고 커튼 닫아줘"); more is a recognizer repeating itself
or someone testing the device, and acting on it would fan one sentence out to dozens of
devices. A longer sentence is refused whole: nothing is done."""

OPPOSITES = frozenset(
    frozenset(pair)
    for pair in (
        ("HassTurnOn", "HassTurnOff"),
        ("HassMediaPause", "HassMediaUnpause"),
        ("HassMediaPlayerMute", "HassMediaPlayerUnmute"),
        ("HassVacuumStart", "HassVacuumReturnToBase"),
        ("HassLawnMowerStartMowing", "HassLawnMowerDock"),
    )
)
"""Intents that ask a device for opposite states: one sentence may not ask both of one
device."""

Outcome = Callable[[IntentCommitted], Awaitable[tuple[list[ActionFinished], str, str]]]
"""Acts on one committed intent and gives (actions, reply, tone): `Turns.outcome` in
`sori.serving.conversation.turns`."""


@dataclass(frozen=True, slots=True)
class Part:
    """One command of the sentence and what it matched (None: nothing)."""

    piece: Piece
    """Its words: as matched, and as said."""
    match: Any | None
    """The preset match (`sori.understanding.intents.IntentMatch`), or None."""


@dataclass(frozen=True, slots=True)
class Plan:
    """A sentence of several commands, matched part by part."""

    text: str
    """The whole sentence."""
    parts: tuple[Part, ...]
    """Its parts in the order said, each command once; empty when `too_many`."""
    language: str = "ko"
    """Language of the replies."""
    too_many: bool = False
    """It says more than MAX_PARTS different commands: refused whole, nothing matched."""
    opposed: Part | None = None
    """The part that asks a device for the opposite of what an earlier part asked (on,
    then off): the sentence is refused whole."""

    @property
    def unmatched(self) -> list[Part]:
        return [p for p in self.parts if p.match is None]

    @property
    def cancelled(self) -> bool:
        """Some part takes the request back ("아 됐어", HassNevermind)."""
        return any(p.match is not None and kind_of(p.match.intent) == NOTHING for p in self.parts)


@dataclass
class Done:
    """What carrying out a plan did."""

    actions: list[ActionFinished] = field(default_factory=list)
    """Every action of every part, in order."""
    reply: str = ""
    """The one reply for the whole sentence."""
    tone: str = ""
    """"error" when some part failed."""
    intents: list[str] = field(default_factory=list)
    """The intent of each part carried out."""


def plan(understanding: Any, text: str) -> Plan | None:
    """The sentence as several commands, or None when it is not (one part, or no part
    that matches: then it is no command list, and goes where unmatched text goes)."""
    pieces = split_commands(text)
    if len(pieces) < 2:
        return None
    language = getattr(understanding, "language", "ko")
    match = _Memo(understanding)
    different = dict.fromkeys((p.text, p.shared) for p in pieces)
    if len(different) > MAX_PARTS:
        # Too many to carry out; it is a command list (refused) when any part is a command.
        if any(match(words) is not None for words, shared in different if words != shared):
            log.info("%.80r: more than %d different commands; nothing is done", text, MAX_PARTS)
            return Plan(text, (), language, too_many=True)
        return None
    parts: list[Part] = []
    for piece in reversed(pieces):  # a joined target borrows from the command after it
        found = match(piece.text) if piece.text != piece.shared else None
        if found is None and piece.shared and parts and parts[-1].match is not None:
            piece, found = _borrow(match, piece, parts[-1])
        parts.append(Part(piece, found))
    if all(p.match is None for p in parts):
        return None
    once = _once_each(reversed(parts))
    return Plan(text, once, language, opposed=_opposed(once, getattr(understanding, "home", None)))


class _Memo:
    """`understanding.match` that matches each text once: a sentence may say one command
    hundreds of times."""

    def __init__(self, understanding: Any) -> None:
        self._match = understanding.match
        self._found: dict[str, Any] = {}

    def __call__(self, text: str) -> Any:
        if text not in self._found:
            self._found[text] = self._match(text)
        return self._found[text]


def _once_each(parts: Iterable[Part]) -> tuple[Part, ...]:
    """The parts without repeats: a command (intent and slots) or unmatched words said
    again count once, where first said."""
    kept: dict[tuple[str, str], Part] = {}
    for part in parts:
        m = part.match
        key = (m.intent, repr(sorted(m.slots.items()))) if m else ("", part.piece.said)
        kept.setdefault(key, part)
    return tuple(kept.values())


def _opposed(parts: tuple[Part, ...], home: Home | None) -> Part | None:
    """The first part that asks a device for the opposite of an earlier part, or None.

    A part after one that said all ("불 다 끄고 거실 불 켜줘": every light off, then this
    one on) narrows it, and is no contradiction unless it says all too."""
    asked: list[tuple[str, frozenset[str], bool]] = []
    for part in parts:
        if part.match is None:
            continue
        intent, slots = part.match.intent, part.match.slots
        targets, says_all = _targets(home, slots), slots.get("name") == "all"
        for before, before_targets, before_all in asked:
            opposite = frozenset((before, intent)) in OPPOSITES
            narrows = before_all and not says_all
            if opposite and targets & before_targets and not narrows:
                return part
        asked.append((intent, targets, says_all))
    return None


def _targets(home: Home | None, slots: dict[str, Any]) -> frozenset[str]:
    """The ids of the devices `slots` reach (as the action registry resolves them), else
    the slots that name a target (a command on the speaker itself names none)."""
    devices = resolve(home, slots) if home is not None else []
    if devices:
        return frozenset(d.id for d in devices)
    return frozenset({repr([slots.get(k) for k in ("name", "area", "domain", "device_class")])})


def shares_a_verb(understanding: Any, text: str) -> bool:
    """Whether `text` joins targets with 하고/이랑/랑 ("거실이랑 안방 불 꺼줘") and is a
    sentence of several commands: it must not be matched whole (as one command on 안방)."""
    pieces = split_commands(text)
    if not any(p.shared for p in pieces[:-1]):
        return False
    return plan(understanding, text) is not None


def _borrow(match: Callable[[str], Any], piece: Piece, after: Part) -> tuple[Piece, Any]:
    """`piece` (a target with no verb) completed with the words of the command after it,
    and its match; (piece, None) when no completion matches that command's intent."""
    mine, theirs = piece.shared.split(), after.piece.text.split()
    keep = sorted(range(1, len(theirs)), key=lambda k: (abs(k - len(mine)), k))
    for k in keep:  # drop the k first words of the next command, keep its verb
        text = " ".join([*mine, *theirs[k:]])
        found = match(text)
        if found is not None and found.intent == after.match.intent:
            return replace(piece, text=text), found
    return piece, None


async def carry_out(
    plan: Plan,
    utterance_id: int,
    now_ns: Callable[[], int],
    outcome: Outcome,
    emit: Callable[[Event], None],
    failed_tone: str = "error",
) -> Done:
    """Act on every part in order (each after the one before has ended), or on none when a
    part did not match or cancels; one reply for all."""
    en = plan.language == "en"
    if plan.too_many:
        if en:
            return Done(reply=f"I can do at most {MAX_PARTS} things at once, so I did nothing. "
                        "Please say them separately.")  # fmt: skip
        return Done(reply=f"한 번에 {MAX_PARTS}가지까지만 할 수 있어서 아무것도 하지 않았어요. "
                    "나눠서 말씀해 주세요.")  # fmt: skip
    if plan.unmatched:
        words = ", ".join(f"'{p.piece.said}'" for p in plan.unmatched)
        log.info("%r: %s matched nothing; nothing is done", plan.text, words)
        if en:
            return Done(reply=f"I did not understand {words}, so I did nothing.")
        return Done(reply=f"{words} 부분을 이해하지 못해서 아무것도 하지 않았어요.")
    if plan.cancelled:
        return Done(reply="Okay." if en else "네, 아무것도 하지 않을게요.")
    if plan.opposed is not None:
        slots = plan.opposed.match.slots
        log.info("%.80r asks %s for opposite states; nothing is done", plan.text, target_en(slots))
        if en:
            return Done(reply=f"You asked {target_en(slots)} for opposite things, so I did "
                        "nothing. Please say just one.")  # fmt: skip
        return Done(reply=f"{target_ko(slots)}에 서로 반대되는 명령이 함께 있어서 아무것도 "
                    "하지 않았어요. 하나만 말씀해 주세요.")  # fmt: skip
    done = Done()
    replies = []
    for part in plan.parts:
        m = part.match
        committed = IntentCommitted(
            now_ns(), utterance_id, part.piece.text, m.intent, dict(m.slots),
            float(m.confidence), m.response, False,
        )  # fmt: skip
        emit(committed)
        actions, reply, _ = await outcome(committed)
        done.actions += actions
        done.intents.append(m.intent)
        failed = [a for a in actions if not a.ok]
        if failed:
            done.tone = failed_tone
            reply = _failed(plan.language, m.slots, all(a.unconfirmed for a in failed))
        replies.append(reply.strip().rstrip("."))
    done.reply = ". ".join(replies) + "."
    return done


def _failed(language: str, slots: dict[str, Any], unconfirmed: bool) -> str:
    """What failed, named: "죄송해요, 에어컨은 제어하지 못했어요"."""
    if language == "en":
        what = target_en(slots)
        if unconfirmed:
            return f"I sent the command to {what} but it was not confirmed"
        return f"Sorry, I could not control {what}"
    what = target_ko(slots)
    if unconfirmed:
        return f"{josa(what, '은/는')} 명령을 보냈지만 확인받지 못했어요"
    return f"죄송해요, {josa(what, '은/는')} 제어하지 못했어요"
