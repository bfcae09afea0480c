"""Public entry to preset understanding: load and compile the packs once, then match fast.

    presets = load_presets("ko", home)
    presets.match("거실 불 켜줘")  # IntentMatch(intent="HassTurnOn", slots={...}, ...)

Matching tries, in order: the exact trie walk, the same with a post-posed object moved
to the front (켜줘 거실 불 → 거실 불 켜줘), and a jamo-level fuzzy walk for speech
recognition errors. Prohibitions (켜지 마) never match; a fuzzy match must clear the
confidence threshold, must not be a question about a device, and must not be a near-tie
between two meanings. A wrongly fired device is worse than a fallback.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sori.errors import PackError
from sori.home import Home
from sori.intents.korean import (
    Canonical,
    asks_about,
    canonical,
    canonical_word,
    is_prohibition,
    normalize_spoken,
)
from sori.intents.korean import is_closed as _is_closed
from sori.intents.loader import home_assistant_pack, pack_files, read_pack
from sori.intents.matcher import AMBIGUITY_MARGIN, Candidate, match_exact, match_fuzzy
from sori.intents.responses import respond
from sori.intents.slots import (
    ListValue,
    SlotList,
    TextList,
    build_list,
    parse_inline_range,
    rule_list,
)
from sori.intents.templates import Block, Pack, expand_block, merge_packs, parse_pack
from sori.intents.trie import Node, build_trie

# Utterances longer than this (characters) are not commands; they skip matching.
MAX_TEXT_CHARS = 200
# Fuzzy matching is for short commands; long text would only find accidents.
MAX_FUZZY_CHARS = 30
# A recognizer's near-miss is a syllable or so; more edits than this is another sentence.
MAX_FUZZY_COST = 1.0
NEVERMIND = "HassNevermind"
# Calibrated with scripts/calibrate_fuzzy.py: recall levels off below this, and no
# simulated recognition error fired a wrong device at any threshold from 0.6 up.
DEFAULT_FUZZY_THRESHOLD = 0.8
# Our packs outrank Home Assistant's when two matches are otherwise equal.
OWN_PACK_PRIORITY = 1
HOME_ASSISTANT_PRIORITY = 0


@dataclass(frozen=True, slots=True)
class IntentMatch:
    """A preset intent understood from text."""

    intent: str
    """Home Assistant intent name."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Slot values; area and name as canonical names."""
    confidence: float = 1.0
    """How sure the matcher is, in [0, 1]; exact matches are 1.0."""
    response: str = ""
    """The spoken reply."""
    text: str = ""
    """The text that was matched."""
    template: str = ""
    """The template that matched, for explanations."""


@dataclass
class Presets:
    """Compiled packs for one language plus the home they act on."""

    language: str
    home: Home
    root: Node
    lists: dict[str, SlotList]
    blocks: list[Block]
    rules: dict[str, Any] = field(default_factory=dict)
    """Expansion rules of all packs, by name."""
    skip_words: frozenset[str] = frozenset()
    """Words the packs say to ignore wherever they stand (normalized)."""
    fuzzy_threshold: float | None = DEFAULT_FUZZY_THRESHOLD
    """Minimum confidence of a fuzzy match; None turns fuzzy matching off."""
    template_count: int = 0
    """How many expanded templates the trie holds."""
    compile_seconds: float = 0.0
    """Time spent loading and compiling."""

    def match(self, text: str) -> IntentMatch | None:
        """The best preset intent for `text`, or None when nothing matches confidently."""
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS:
            return None
        spoken = canonical(text)
        if not spoken.text:
            return None
        # "켜지 마" is never a command; only "신경 쓰지 마" (never mind) may match.
        prohibited = is_prohibition(spoken.text)
        for variant in (spoken, *self._without_skip_words(text), *_post_posed(text)):
            found = self._best(variant, match_exact(self.root, variant.text, self.lists.get))
            if found and (not prohibited or found[1] == NEVERMIND):
                return self._result(text, *found, confidence=1.0)
        return None if prohibited else self._fuzzy(text, spoken)

    def _without_skip_words(self, text: str) -> list[Canonical]:
        """The utterance without the packs' skip words ("please"), if it had any."""
        words = normalize_spoken(text).split()
        kept = [w for w in words if w not in self.skip_words]
        return [canonical(" ".join(kept))] if kept and len(kept) < len(words) else []

    def _fuzzy(self, text: str, spoken: Canonical) -> IntentMatch | None:
        length = len(spoken.text)
        if self.fuzzy_threshold is None or length > MAX_FUZZY_CHARS or asks_about(spoken.text):
            return None
        budget = min((1.0 - self.fuzzy_threshold) * length, MAX_FUZZY_COST)
        candidates = match_fuzzy(self.root, spoken.text, self.lists.get, budget)
        resolved = [(c, r) for c in candidates if (r := self._resolve(c, spoken)) is not None]
        if not resolved:
            return None
        resolved.sort(key=lambda pair: _rank(pair[0]), reverse=True)
        resolved.sort(key=lambda pair: pair[0].cost)  # stable: best rank first per cost
        best, (intent, slots) = resolved[0]
        for other, (other_intent, other_slots) in resolved[1:]:
            if other.cost - best.cost >= AMBIGUITY_MARGIN:
                break
            if _conflict(intent, slots, other_intent, other_slots):
                return None  # two meanings fit about equally well: do not guess
        confidence = max(0.0, 1.0 - best.cost / max(length, 1))
        if confidence < self.fuzzy_threshold:
            return None
        return self._result(text, best, intent, slots, confidence=confidence)

    def _best(self, spoken: Canonical, candidates: list[Candidate]):
        best = None
        for candidate in candidates:
            resolved = self._resolve(candidate, spoken)
            if resolved is None:
                continue
            key = _rank(candidate)
            if best is None or key > best[0]:
                best = (key, candidate, resolved)
        return None if best is None else (best[1], *best[2])

    def _resolve(self, candidate: Candidate, spoken: Canonical):
        """(intent, slots) when the block's context rules accept the candidate."""
        block = candidate.terminal.block
        slots: dict[str, Any] = {}
        # The speaker's room is the base context; what the utterance names overrides it.
        context: dict[str, Any] = {"area": self.home.speaker_area} if self.home.speaker_area else {}
        for capture in candidate.captures:
            if capture.hidden:
                continue
            if capture.kind == "wildcard":
                slots[capture.slot] = spoken.spoken_span(capture.start, capture.end)
            else:
                slots[capture.slot] = capture.value.value
            context.update(capture.value.context)
        for key, wanted in block.requires_context.items():
            if isinstance(wanted, dict) and wanted.get("slot"):
                # "불 켜줘" means the speaker's room; with no room configured the
                # command stays unscoped and the action layer decides.
                have = context.get(key)
                if have is not None:
                    slots.setdefault(key, self._display(key, have))
            elif context.get(key) not in _as_list(wanted):
                return None
        for key, unwanted in block.excludes_context.items():
            if key in context and context[key] in _as_list(unwanted):
                return None
        merged = {**block.slots, **slots}
        if "name" in slots and "domain" in context and "domain" not in merged:
            merged["domain"] = context["domain"]
        return block.intent, merged

    def _display(self, key: str, value: Any) -> Any:
        if key == "area":
            area = self.home.area(value)
            return area.name if area else value
        return value

    def _result(self, text, candidate, intent, slots, confidence) -> IntentMatch:
        return IntentMatch(
            intent=intent,
            slots=slots,
            confidence=round(confidence, 3),
            response=respond(self.language, intent, slots),
            text=text,
            template=candidate.terminal.template,
        )

    def phrases(self, limit: int = 5000) -> list[str]:
        """Command sentences of our packs with the home's names filled in, read aloud.

        Vocabulary for speech recognition: grammar words for vosk, hotwords for
        sherpa-onnx. Every value of every slot appears at least once per template;
        numbers are spelled as spoken (23 → 이십삼).
        """
        phrases: dict[str, None] = {}
        for name in (*self.lists["name"].samples, *self.lists["area"].samples):
            phrases[" ".join(name.split())] = None
        for block in self.blocks:
            if block.priority != OWN_PACK_PRIORITY:
                continue
            for _, path in expand_block(block, self.rules):
                for sentence in self._fill(path, block):
                    phrases[sentence] = None
                if len(phrases) >= limit:
                    return list(phrases)[:limit]
        return list(phrases)

    def _fill(self, path, block: Block) -> list[str]:
        """Sentences for one template path, cycling through each slot's sample values."""
        choices = []
        for part in path:
            if isinstance(part, str):
                choices.append([part])
                continue
            if part.list_name == "name":
                samples = self._names_for(block)
            else:
                samples = getattr(self.lists.get(part.list_name), "samples", None)
            if not samples:
                return []  # wildcards and empty lists have nothing to say
            choices.append(samples)
        rounds = max((len(c) for c in choices), default=0)
        return [" ".join("".join(c[i % len(c)] for c in choices).split()) for i in range(rounds)]

    def _names_for(self, block: Block) -> list[str]:
        """Names of the devices a block's context rules accept."""
        wanted = {k: _as_list(v) for k, v in block.requires_context.items() if k != "area"}
        return [
            name
            for device in self.home.devices
            if device.domain in wanted.get("domain", [device.domain])
            and device.device_class in wanted.get("device_class", [device.device_class])
            for name in device.names
        ]

    def is_closed(self, text: str) -> bool:
        """True when `text` ends in a closed sentence-final form (켜줘, 꺼, 맞춰 ...).

        Early commit acts on a partial hypothesis only when this holds.
        """
        return _is_closed(text)

    def intent_names(self) -> list[str]:
        """Every intent some pack can produce."""
        return sorted({block.intent for block in self.blocks})


def _rank(candidate: Candidate) -> tuple:
    """Higher is better: more of the utterance explained by literal text and known values."""
    # Hidden lists ({_light}) are our way of writing alternatives: they count as literal text.
    literal = candidate.terminal.literal_chars
    known = wild = reported = 0
    for capture in candidate.captures:
        span = capture.end - capture.start
        if capture.hidden:
            literal += span
        elif capture.kind == "wildcard":
            wild += span
        else:
            known += span
        reported += not capture.hidden
    named = any(c.slot == "name" for c in candidate.captures)
    return (
        literal + known - candidate.cost * 3,
        named,  # a device called by its own name is the most specific reading
        literal,
        -reported,
        -wild,
        candidate.terminal.block.priority,
        -candidate.skipped,
    )


def _conflict(intent: str, slots: dict, other_intent: str, other_slots: dict) -> bool:
    """Whether two readings mean different things.

    "안방 조명" by name and "안방" lights by area (name: all) are one meaning; another
    intent, another area, another number are not.
    """
    if intent != other_intent:
        return True
    scopes = _scope(slots), _scope(other_slots)
    if None not in scopes and scopes[0] != scopes[1]:
        return True  # the living room's lights are not every light
    shared = slots.keys() & other_slots.keys()
    return any(
        slots[k] != other_slots[k] and "all" not in (slots[k], other_slots[k]) for k in shared
    )


def _scope(slots: dict) -> str | None:
    """Where a reading acts: its area, or everywhere; None for one named device."""
    if slots.get("name") not in (None, "all"):
        return None
    return slots.get("area", "everywhere")


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple | set) else [value]


def _post_posed(text: str) -> list[Canonical]:
    """ "켜줘 거실 불" → "거실 불 켜줘": Korean allows the object after the verb.

    Each split after a closed verb form within the first three words is one reading.
    """
    words = normalize_spoken(text).split()
    return [
        canonical(" ".join(words[i:] + words[:i]))
        for i in range(1, min(len(words), 4))
        if _is_closed(words[i - 1])
    ]


def home_lists(home: Home) -> dict[str, SlotList]:
    """The `area` and `name` lists from the home's areas and devices."""
    areas = [
        (canonical_word(name), ListValue(area.name, {"area": area.id}))
        for area in home.areas
        for name in area.names
    ]
    devices = []
    for device in home.devices:
        context = {"domain": device.domain, "entity_id": device.id}
        if device.device_class:
            context["device_class"] = device.device_class
        if device.area:
            context["device_area"] = device.area
        devices.extend((canonical_word(n), ListValue(device.name, context)) for n in device.names)
    return {
        "area": TextList(areas, [n for area in home.areas for n in area.names]),
        "name": TextList(devices, [n for device in home.devices for n in device.names]),
        "floor": TextList([]),
    }


def compile_pack(pack: Pack, home: Home, fuzzy_threshold: float | None) -> Presets:
    started = time.perf_counter()
    lists: dict[str, SlotList] = {}
    for name, spec in pack.lists.items():
        try:
            lists[name] = build_list(name, spec, pack.rules)
        except PackError as exc:
            raise PackError(f"{pack.language} packs: {exc}") from None
    for block in pack.blocks:
        for name, spec in block.lists.items():
            lists[name] = build_list(name, spec, pack.rules)
    lists.update(home_lists(home))
    rule_texts: dict[str, list[str]] = {}
    root, count = build_trie(
        (block, text, path)
        for block in pack.blocks
        for text, path in expand_block(block, pack.rules, rule_texts)
    )
    lists.update((name, rule_list(texts)) for name, texts in rule_texts.items())
    _add_inline_ranges(root, lists)
    return Presets(
        language=pack.language,
        home=home,
        root=root,
        lists=lists,
        blocks=pack.blocks,
        rules=pack.rules,
        skip_words=frozenset(normalize_spoken(w) for w in pack.skip_words),
        fuzzy_threshold=fuzzy_threshold,
        template_count=count,
        compile_seconds=time.perf_counter() - started,
    )


def _add_inline_ranges(root: Node, lists: dict[str, SlotList]) -> None:
    stack = [root]
    while stack:
        node = stack.pop()
        for ref, child in node.slots.items():
            if ref.list_name not in lists and (inline := parse_inline_range(ref.list_name)):
                lists[ref.list_name] = inline
            stack.append(child)
        stack.extend(node.chars.values())
        if node.boundary is not None:
            stack.append(node.boundary)


def load_presets(
    language: str = "ko",
    home: Home | None = None,
    extra_packs: Sequence[str] = (),
    include_home_assistant: bool = True,
    fuzzy_threshold: float | None = DEFAULT_FUZZY_THRESHOLD,
) -> Presets:
    """Load and compile our packs (plus Home Assistant's) for `language`."""
    started = time.perf_counter()
    packs = []
    if include_home_assistant:
        data = home_assistant_pack(language)
        if data:
            packs.append(parse_pack(data, "home-assistant-intents", HOME_ASSISTANT_PRIORITY))
    for path in pack_files(language, extra_packs):
        data, locate = read_pack(path)
        packs.append(parse_pack(data, str(path), OWN_PACK_PRIORITY, locate))
    if not packs:
        raise PackError(f"no sentence packs for language {language!r}; see intents/README.md")
    presets = compile_pack(merge_packs(packs), home or Home(), fuzzy_threshold)
    presets.compile_seconds = time.perf_counter() - started
    return presets
