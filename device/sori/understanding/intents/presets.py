"""Preset understanding at run time: `Presets` holds the compiled packs and matches text.

    presets = load_presets("ko", home)  # sori.understanding.intents.compile, once
    presets.match("거실 불 켜줘")  # IntentMatch(intent="HassTurnOn", slots={...}, ...)

Matching tries, in order: the exact trie walk, the same with a post-posed object moved
to the front (켜줘 거실 불 → 거실 불 켜줘); on a miss, the same on the utterance made
plain (fillers, adverbs and self-corrections read by `sori.understanding.intents.normalizer`: "음
공기청정기 이제 꺼 줘" → "공기청정기 꺼 줘"); and a jamo-level fuzzy walk for speech
recognition errors. Prohibitions (켜지 마) and clauses left hanging on a connective
ending (켜도, 켜면: korean.leaves_hanging) never match; a fuzzy match must clear the
confidence threshold, must not be a question about a device, and must not be a near-tie
between two meanings. A wrongly fired device is worse than a fallback.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sori.core.home import Home
from sori.core.intent_kinds import COMMAND, kind_of
from sori.understanding.intents.korean import (
    Canonical,
    asks_about,
    canonical,
    canonical_word,
    ending_length,
    heard_word_lengths,
    is_prohibition,
    leaves_hanging,
    particle_lengths,
)
from sori.understanding.intents.korean import is_closed as _is_closed
from sori.understanding.intents.matcher import AMBIGUITY_MARGIN, Candidate, match_exact, match_fuzzy
from sori.understanding.intents.normalizer import (
    AREA,
    NUMBER,
    OTHER,
    TARGET,
    TARGET_LISTS,
    VERB,
    Reading,
)
from sori.understanding.intents.normalizer import reading as plain_reading
from sori.understanding.intents.phrases import DEFAULT_MAX_PHRASES, PhraseSet, spoken_phrases
from sori.understanding.intents.ranking import conflict, rank
from sori.understanding.intents.responses import CLARIFY, respond, which_room
from sori.understanding.intents.slots import SlotList, TextList, as_list
from sori.understanding.intents.templates import Block
from sori.understanding.intents.trie import Node

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
    known_words: frozenset[str] = frozenset()
    """Every template word and list value (canonical): a word heard exactly as one of
    these is what the user said, and a fuzzy edit may not turn it into another."""
    command_verbs: frozenset[str] = frozenset()
    """Words of verb form that end a command (켜, 꺼, 열어): a predicate heard as one of
    these is never edited into another (see matcher.match_fuzzy)."""
    compile_seconds: float = 0.0
    """Time spent loading and compiling."""
    spontaneous: bool = True
    """On a miss, match the utterance made plain too (fillers, adverbs, self-corrections:
    `sori.understanding.intents.normalizer`); False matches only what was heard (a baseline)."""
    _phrase_sets: dict[int, PhraseSet] = field(default_factory=dict, init=False, repr=False)

    def match(self, text: str) -> IntentMatch | None:
        """The best preset intent for `text`, or None when nothing matches confidently."""
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS:
            return None
        spoken = canonical(text)
        if not spoken.text or leaves_hanging(spoken.text):
            return None  # "거실 불 켜도" ("even if ...") waits for a request that never came
        # "켜지 마" is never a command; only "신경 쓰지 마" (never mind) may match.
        prohibited = is_prohibition(spoken.text)
        for variant in self._readings(spoken):
            found = self._best(variant, match_exact(self.root, variant.text, self.lists.get))
            if found and (not prohibited or found[1] == NEVERMIND):
                return self._result(text, *found, confidence=1.0)
        if prohibited:
            return None
        # The miss path: the utterance made plain, matched exactly (a correction never
        # fuzzily); then fuzzy, on the plain reading when there is one (a filler is a
        # whole word, which fuzzy matching never skips), else on what was heard.
        plain = self._plain(spoken) if self.spontaneous else None
        if plain is None:
            return self._fuzzy(text, spoken)
        found = self._exact(text, plain)
        if found is not None or plain.corrected or asks_about(spoken.text):
            return found
        return self._fuzzy(text, canonical(plain.text))

    def _plain(self, spoken: Canonical) -> Reading | None:
        """The utterance without fillers and adverbs, its corrections applied; None when
        nothing changes or it is negated."""
        return plain_reading(spoken.spoken, self._kind, self.command_verbs)

    def _exact(self, text: str, plain: Reading) -> IntentMatch | None:
        heard = canonical(plain.text)
        if not heard.text or leaves_hanging(heard.text) or is_prohibition(heard.text):
            return None
        for variant in self._readings(heard):
            found = self._best(variant, match_exact(self.root, variant.text, self.lists.get))
            if found:
                return self._result(text, *found, confidence=1.0)
        return None

    def _kind(self, word: str) -> str:
        """What `word` is, for a self-correction: a verb, a number, a room, a device, or
        a word of another list (a colour) by that list's name; OTHER when unknown."""
        text = canonical_word(word)
        if not text:
            return OTHER
        if text[0].isdigit() or text[0] == "-":
            return NUMBER
        if ending_length("켜" + text) == len(text) or canonical(word).text in self.command_verbs:
            return VERB
        order = ["area", *TARGET_LISTS, *sorted(self.lists)]
        for name in order:
            slot_list = self.lists.get(name)
            if not isinstance(slot_list, TextList):
                continue  # numbers are NUMBER; a wildcard would take any word
            for end, _ in slot_list.matches(text, 0):
                if end == len(text) or len(text) - end in particle_lengths(text, end):
                    return AREA if name == "area" else TARGET if name in TARGET_LISTS else name
        return OTHER

    def _readings(self, spoken: Canonical) -> Iterator[Canonical]:
        """The utterance as heard; then without the packs' skip words ("please"); then
        with a post-posed object moved to the front (켜줘 거실 불 → 거실 불 켜줘: Korean
        allows the object after the verb), one reading per split after a closed verb form
        within the first three words. Lazy: most utterances match as heard.
        """
        yield spoken
        words = spoken.spoken.split()
        kept = [w for w in words if w not in self.skip_words]
        if kept and len(kept) < len(words):
            yield canonical(" ".join(kept))
        for i in range(1, min(len(words), 4)):
            if _is_closed(words[i - 1]):
                yield canonical(" ".join(words[i:] + words[:i]))

    def _fuzzy(self, text: str, spoken: Canonical) -> IntentMatch | None:
        length = len(spoken.text)
        if self.fuzzy_threshold is None or length > MAX_FUZZY_CHARS or asks_about(spoken.text):
            return None
        budget = min((1.0 - self.fuzzy_threshold) * length, MAX_FUZZY_COST)
        candidates = match_fuzzy(
            self.root,
            spoken.text,
            self.lists.get,
            budget,
            self.known_words,
            heard_word_lengths(spoken),
            self.command_verbs,
        )
        resolved = [(c, r) for c in candidates if (r := self._resolve(c, spoken)) is not None]
        if not resolved:
            return None
        resolved.sort(key=lambda pair: rank(pair[0]), reverse=True)
        resolved.sort(key=lambda pair: pair[0].cost)  # stable: best rank first per cost
        best, (intent, slots) = resolved[0]
        for other, (other_intent, other_slots) in resolved[1:]:
            if other.cost - best.cost >= AMBIGUITY_MARGIN:
                break
            if conflict(intent, slots, other_intent, other_slots):
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
            key = rank(candidate)
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
        unscoped = False
        for key, wanted in block.requires_context.items():
            if isinstance(wanted, dict) and wanted.get("slot"):
                # "불 켜줘" means the speaker's room (home.area). With none configured it
                # is NOT every light (only 다/모든/전부 says that): the speaker asks which.
                have = context.get(key)
                if have is None and key == "area" and len(self.home.areas) == 1:
                    have = self.home.areas[0].id  # a one-room home has no doubt
                if have is not None:
                    slots.setdefault(key, self._display(key, have))
                elif key == "area" and "area" not in slots:
                    unscoped = True
            elif context.get(key) not in as_list(wanted):
                return None
        for key, unwanted in block.excludes_context.items():
            if key in context and context[key] in as_list(unwanted):
                return None
        merged = {**block.slots, **slots}
        if "name" in slots and "domain" in context and "domain" not in merged:
            merged["domain"] = context["domain"]
        if unscoped and kind_of(block.intent) == COMMAND and self._several(merged):
            rooms = [area.name for area in self.home.areas]
            question = which_room(self.language, block.intent, merged, rooms)
            return CLARIFY, {"response": question}
        return block.intent, merged

    def _several(self, slots: dict[str, Any]) -> bool:
        """Whether an unscoped command would reach more than one device: the one garage
        door needs no room, the lights of three rooms do."""
        domain, device_class = slots.get("domain"), slots.get("device_class")
        if not domain:
            return False  # "온도 30도로": the intent picks its device (the action layer)
        reached = [
            d
            for d in self.home.devices
            if d.domain == domain and (not device_class or d.device_class == device_class)
        ]
        return len(reached) > 1

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

    def phrases(self, limit: int = DEFAULT_MAX_PHRASES) -> list[str]:
        """Commands of our packs as people say them, for this home, at most `limit`.

        Vocabulary for speech recognition: grammar phrases for vosk, hotwords for
        sherpa-onnx (see sori.understanding.intents.phrases)."""
        return self.phrase_set(limit).phrases

    def phrase_set(self, limit: int = DEFAULT_MAX_PHRASES) -> PhraseSet:
        """The phrases of `phrases` with their coverage of the home. Made once per budget:
        the recognizer and the reply cache both ask for them at start-up."""
        if limit in self._phrase_sets:
            return self._phrase_sets[limit]
        own = [block for block in self.blocks if block.priority == OWN_PACK_PRIORITY]
        self._phrase_sets[limit] = spoken_phrases(
            own,
            self.rules,
            self.lists,
            self.home,
            self.match,
            budget=limit,
            korean=self.language == "ko",
        )
        return self._phrase_sets[limit]

    def is_closed(self, text: str) -> bool:
        """True when `text` ends in a closed sentence-final form (켜줘, 꺼, 맞춰 ...).

        Early commit acts on a partial hypothesis only when this holds.
        """
        return _is_closed(text)

    def intent_names(self) -> list[str]:
        """Every intent some pack can produce."""
        return sorted({block.intent for block in self.blocks})
