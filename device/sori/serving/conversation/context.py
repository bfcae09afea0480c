"""Follow-ups: the last command's intent and targets are context for the next few seconds.

    거실 불 켜줘 → 안방도           (same action, another area: 안방 lights on)
                → 다시 꺼줘 / 그거 꺼줘   (the same target, the action given)
                → 더 밝게 / 좀 더 어둡게 (a brightness step on the same lights)

Only a command that acted on a device leaves context; any other understood turn (a
question, a timer, the time) clears it, so a question never turns into a command by
context. Context lasts `context_s` seconds from the action. The follow-up forms are a
small closed grammar over the canonical text (`parse`), never fuzzy guesses: "안방" alone,
or "다시" alone, is not a follow-up, and without live context nothing is resolved.

`resolve` is pure: (context, text, now, home) → a full `IntentMatch`, which then takes the
same action path as any command. `FollowUps` holds the last context for the daemon.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sori.core.events import ActionFinished, IntentCommitted
from sori.core.home import Home
from sori.core.intent_kinds import is_command
from sori.understanding.intents import IntentMatch
from sori.understanding.intents.korean import canonical, canonical_word
from sori.understanding.intents.responses import respond

log = logging.getLogger(__name__)

TARGET_KEYS = ("area", "name", "domain", "device_class", "floor")
"""Slots that pick the devices (the rest say what to do with them)."""

FORMS = ("also", "again", "that", "brighter", "darker")
"""The follow-up forms: "안방도", "다시 켜줘", "그거 꺼줘", "더 밝게", "더 어둡게"."""

# Verbs a follow-up may give (canonical, request ending removed) and the intent of each.
_VERBS = {"켜": "HassTurnOn", "키": "HassTurnOn", "틀어": "HassTurnOn", "꺼": "HassTurnOff"}
_VERB = "(?P<verb>" + "|".join(_VERBS) + ")"
# 다시 켜줘, 다시 한번 꺼 줘
_AGAIN = re.compile(rf"다시(?:한번|한번만)?{_VERB}")
# 그거 꺼줘, 그것도 꺼 줘, 그걸 켜, 저것 좀 꺼줘
_THAT = re.compile(rf"(?:그|저|이)(?:거|것|걸)(?:을|도|는|만)?(?:좀)?{_VERB}")
# 더 밝게, 좀 더 어둡게 해줘 (canonical drops the request ending and the light verb 해)
_STEP = re.compile(r"(?P<soft>좀|조금|조금만|좀만|살짝|약간)?더(?:좀)?(?P<way>밝게|환하게|어둡게)")
# 안방도, 안방 것도, 안방에 있는 것도, 에어컨도 (the place or device is checked against the home)
_ALSO = re.compile(r"(?P<what>.+?)(?:에있는|에서|에)?(?:것|거|꺼|게)?도")
_BRIGHTER = frozenset({"밝게", "환하게"})
_A_LITTLE = frozenset({"조금만", "좀만", "살짝", "약간"})
"""Softeners that make a brightness step half the configured one ("좀 더" is a full step)."""


@dataclass(frozen=True, slots=True)
class Context:
    """What the last command left for a follow-up."""

    utterance_id: int
    """The turn that set it."""
    text: str
    """What was said in that turn."""
    intent: str
    """The intent it acted on."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Its slots (targets and settings)."""
    targets: tuple[str, ...] = ()
    """Entity ids it acted on."""
    t_ns: int = 0
    """When it acted, in clock nanoseconds; the context lasts `context_s` from here."""
    brightness: int | None = None
    """Brightness the targets were last set to, in percent; None when not known."""


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A follow-up resolved against a context."""

    match: IntentMatch
    """The full intent it means, as if it had been said in full."""
    form: str
    """Which form it was (one of FORMS)."""
    context: Context
    """The earlier turn it used."""


def remember(
    committed: IntentCommitted, actions: Iterable[ActionFinished], now_ns: int,
    previous: Context | None = None,
) -> Context | None:  # fmt: skip
    """The context a finished action leaves: set by a command that acted on a device
    (at least one target acted on without failure); None for anything else."""
    targets = tuple(a.target for a in actions if a.ok and a.target)
    if not targets or not is_command(committed.intent):
        return None
    slots = dict(committed.slots)
    brightness = None
    if committed.intent == "HassLightSet" and isinstance(slots.get("brightness"), int | float):
        brightness = int(slots["brightness"])
    elif "color" in slots and previous is not None and previous.targets == targets:
        brightness = previous.brightness  # a colour change keeps the level
    return Context(
        committed.utterance_id, committed.text, committed.intent, slots, targets, now_ns,
        brightness,
    )  # fmt: skip


def parse(text: str) -> tuple[str, dict[str, str]] | None:
    """(form, its parts) when `text` is one of the follow-up forms; None otherwise."""
    spoken = canonical(text).text
    if not spoken:
        return None
    for form, pattern in (("again", _AGAIN), ("that", _THAT)):
        found = pattern.fullmatch(spoken)
        if found:
            return form, {"verb": found["verb"]}
    found = _STEP.fullmatch(spoken)
    if found:
        form = "brighter" if found["way"] in _BRIGHTER else "darker"
        return form, {"soft": found["soft"] or ""}
    found = _ALSO.fullmatch(spoken)
    if found:
        return "also", {"what": found["what"]}
    return None


def resolve(
    context: Context | None, text: str, now_ns: int, home: Home, *, language: str = "ko",
    context_s: float = 8.0, brightness_step: int = 20,
) -> FollowUp | None:  # fmt: skip
    """The full intent `text` means as a follow-up of `context`; None when it is not a
    follow-up form, when the context is missing or older than `context_s`, or when the
    form does not fit it (a brightness step after a fan, a place the home lacks)."""
    if context is None or context_s <= 0 or now_ns - context.t_ns > context_s * 1e9:
        return None
    parsed = parse(text)
    if parsed is None:
        return None
    form, parts = parsed
    targets = {k: v for k, v in context.slots.items() if k in TARGET_KEYS}
    if form in ("again", "that"):
        intent, slots = _VERBS[parts["verb"]], targets
    elif form == "also":
        found = _also(context, parts["what"], home)
        if found is None:
            return None
        intent, slots = found
    else:
        if not _all_lights(context, home):
            return None
        step = brightness_step // 2 if parts["soft"] in _A_LITTLE else brightness_step
        step = max(1, step) * (1 if form == "brighter" else -1)
        intent, slots = "HassLightSet", {**targets, "domain": "light"}
        if context.brightness is None:
            slots["brightness_step"] = step
        else:
            slots["brightness"] = min(100, max(1, context.brightness + step))
    match = IntentMatch(
        intent=intent, slots=slots, confidence=1.0, response=respond(language, intent, slots),
        text=text, template=f"follow-up:{form}",
    )  # fmt: skip
    return FollowUp(match, form, context)


def _also(context: Context, what: str, home: Home) -> tuple[str, dict[str, Any]] | None:
    """Same intent and settings, another place ("안방도") or another device ("에어컨도")."""
    settings = {k: v for k, v in context.slots.items() if k not in TARGET_KEYS}
    area = next((a for a in home.areas if what in _names(a.names)), None)
    if area is not None:
        domain = context.slots.get("domain") or _one_domain(context, home)
        if not domain:
            return None
        slots = {**settings, "domain": domain, "name": "all", "area": area.name}
        if context.slots.get("device_class"):
            slots["device_class"] = context.slots["device_class"]
        return context.intent, slots
    device = next((d for d in home.devices if what in _names(d.names)), None)
    if device is None:
        return None
    if context.intent not in ("HassTurnOn", "HassTurnOff") and device.domain != _one_domain(
        context, home
    ):
        return None  # "50%로" or "24도로" means nothing for another kind of device
    return context.intent, {**settings, "name": device.name, "domain": device.domain}


def _names(names: Iterable[str]) -> set[str]:
    return {canonical_word(n) for n in names}


def _domains(context: Context, home: Home) -> set[str]:
    known = {d.id: d.domain for d in home.devices}
    return {known.get(t, t.split(".", 1)[0]) for t in context.targets}


def _one_domain(context: Context, home: Home) -> str:
    domains = _domains(context, home)
    return domains.pop() if len(domains) == 1 else ""


def _all_lights(context: Context, home: Home) -> bool:
    return _domains(context, home) == {"light"}


class FollowUps:
    """The daemon's last context, and follow-ups resolved against it.

    `understanding` is the running preset matcher (its `home` and `language` are read at
    each resolve, so a reload is seen)."""

    def __init__(self, understanding: Any, context_s: float, brightness_step: int) -> None:
        self.understanding = understanding
        self.context_s = context_s
        self.brightness_step = brightness_step
        self.context: Context | None = None

    def remember(
        self, committed: IntentCommitted, actions: Iterable[ActionFinished], now_ns: int
    ) -> None:
        """Every understood turn replaces the context: a command that acted sets it,
        anything else (a question, a timer) clears it."""
        self.context = remember(committed, actions, now_ns, self.context)

    def resolve(self, text: str, now_ns: int) -> FollowUp | None:
        if self.context_s <= 0:
            return None
        found = resolve(
            self.context, text, now_ns, self.understanding.home,
            language=getattr(self.understanding, "language", "ko"),
            context_s=self.context_s, brightness_step=self.brightness_step,
        )  # fmt: skip
        if found is not None:
            log.info(
                "follow-up %r (%s) resolved against turn %d: %s %s", text, found.form,
                found.context.utterance_id, found.match.intent, found.match.slots,
            )  # fmt: skip
        return found
