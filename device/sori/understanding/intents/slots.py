"""Slot lists: what a `{list}` reference in a template can match in canonical text.

Three kinds, as in Home Assistant: text values (a character trie of canonical forms),
number ranges (digits, after spoken numbers became digits), and wildcards.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hassil.expression import Sentence

from sori.core.errors import PackError
from sori.core.hangul import (
    is_hangul,
    near_positions,
    neighbour_index,
    neighbour_keys,
    sounds_alike,
    syllable_cost,
)
from sori.understanding.intents.korean import (
    canonical_word,
    ending_length,
    is_verb_form,
    normalize_spoken,
)
from sori.understanding.intents.numbers import sino_words
from sori.understanding.intents.templates import Expansion, SlotRef, expand, parse_template

_END = ""  # trie key under which a node keeps the values that end there
_LONGEST = "\x00"  # trie key of the longest value through a node (characters)
_WORDS = "\x01"  # trie key of a value's word lengths, per character (see word_lengths)
# Fuzzy matching substitutes only syllables that differ in one jamo (see matcher).
MAX_SUBSTITUTION = 1 / 3 + 1e-9
# What a fuzzy edit may touch. A known word (template word or list value) takes at most
# one edit, and only when it has at least three syllables: one jamo away from a one- or
# two-syllable word is usually another word the user meant (창고 is not 차고, 가방 is not
# 다 창, 추천 is not 충전), while a longer word rarely has a real neighbour
# (공기청정이 → 공기청정기). Digits, signs and other non-Hangul are never edited.
MIN_EDITED_WORD = 3
MAX_WORD_EDITS = 1


@dataclass(frozen=True, slots=True)
class ListValue:
    """One value a list reference produced."""

    value: Any
    """The slot value (a canonical name, a number, or the spoken text of a wildcard)."""
    context: dict[str, Any] = field(default_factory=dict)
    """Context the value brings (domain, device_class, area of a device; area of an area)."""


class TextList:
    """Text values in a character trie, so a match costs one walk along the input."""

    kind = "text"

    def __init__(self, entries: list[tuple], samples: list[str] = ()) -> None:
        """`entries`: (canonical text, value) or (canonical text, value, spoken text); the
        spoken text's spaces say where the value's words break (거실 불: 2 + 1)."""
        self.root: dict = {}
        self.samples = list(dict.fromkeys(samples))
        """Spoken forms of the values, for speech-recognition vocabularies."""
        for text, value, *spoken in entries:
            if not text:
                continue
            node = self.root
            for char in text:
                node = node.setdefault(char, {})
            values = node.setdefault(_END, [])
            node[_VERB] = is_verb_form(text)
            if value not in values:
                values.append(value)
            lengths = word_lengths(spoken[0] if spoken else text, len(text))
            before = node.get(_WORDS, lengths)
            node[_WORDS] = tuple(min(a, b) for a, b in zip(before, lengths, strict=True))
        _mark_longest(self.root)

    def matches(self, text: str, pos: int) -> Iterator[tuple[int, ListValue]]:
        node = self.root
        for end in range(pos, len(text)):
            node = node.get(text[end])
            if node is None:
                return
            for value in node.get(_END, ()):
                yield end + 1, value

    def fuzzy_matches(
        self,
        text: str,
        pos: int,
        budget: float,
        known: frozenset[str] = frozenset(),
        editable: tuple[bool, ...] | None = None,
        verbs: frozenset[str] | None = None,
    ) -> Iterator[tuple[int, ListValue, float]]:
        """Values within `budget` syllable edits (jamo-weighted) of text starting at `pos`.

        An edited value must be at least MIN_EDITED_WORD long, take at most MAX_WORD_EDITS
        edits, touch only Hangul, must not have been heard as a known word (`known`), and
        may fall only where `editable[i]` (a long enough heard word) holds. With `verbs`
        (the caller's predicate licence: no edit before, a template may end here), a value
        of verb form ending the text may take one edit however short, unless it was heard
        as one of `verbs` (see matcher.match_fuzzy).
        """
        if editable is None:
            editable = (True,) * len(text) + (False,)
        may_loose = verbs is not None
        end_of_text = len(text)
        stack = [(self.root, pos, 0.0, 0, -1, False)]
        seen: dict[tuple[int, int, int, bool], float] = {}
        while stack:
            # edited: index in the value of the one character an edit touched, or -1;
            # loose: that edit stands on the predicate licence alone.
            node, at, cost, depth, edited, loose = stack.pop()
            edits = edited >= 0
            key = (id(node), at, edited, loose)
            if seen.get(key, budget + 1) <= cost:
                continue
            seen[key] = cost
            if _END in node:
                if loose:
                    ok = at == end_of_text and node[_VERB] and text[pos:at] not in verbs
                else:
                    ok = not edits or (
                        node[_WORDS][edited] >= MIN_EDITED_WORD and text[pos:at] not in known
                    )
                if ok:
                    for value in node[_END]:
                        yield at, value, cost
            spoken = text[at] if at < end_of_text else None
            may_edit = edits < MAX_WORD_EDITS
            # After an edit the rest of the value must be heard exactly: a state pushed
            # with the edit is worth visiting only if it ends a value or the next heard
            # character continues it (the others would pop, yield nothing, push nothing).
            after = text[at + 1] if at + 1 < end_of_text else None
            spoken_hangul = spoken is not None and _HANGUL_FIRST <= spoken <= _HANGUL_LAST
            may_substitute = spoken_hangul and (editable[at] or may_loose)
            may_drop = at and editable[at - 1] and cost + 1 <= budget
            if not (may_edit and (may_substitute or may_drop)):
                # No edit can happen here: follow the heard character alone (the one push
                # the loop below would make).
                child = node.get(spoken) if spoken is not None else None
                if child is not None:
                    stack.append((child, at + 1, cost, depth + 1, edited, loose))
            else:
                edges = node.get(_EDGES)
                if edges is None:
                    edges = _edges(node)
                if not may_drop:
                    # Only a substitution: the edges within one jamo of the heard syllable
                    # are the only ones that can take it (in the same order).
                    edges = [edges[i] for i in near_positions(node[_NEAR], neighbour_keys(spoken))]
                for char, child, char_is_hangul, long_word in edges:
                    if char == spoken:
                        stack.append((child, at + 1, cost, depth + 1, edited, loose))
                        continue
                    if not char_is_hangul or not (long_word or may_loose):
                        continue
                    if may_substitute:
                        licensed = long_word and editable[at]
                        near = syllable_cost(char, spoken)
                        if (
                            (licensed or (may_loose and sounds_alike(char, spoken)))
                            and near <= MAX_SUBSTITUTION
                            and cost + near <= budget
                            and (_END in child or after in child)
                        ):
                            stack.append(
                                (child, at + 1, cost + near, depth + 1, depth, not licensed)
                            )
                    if long_word and may_drop and (_END in child or spoken in child):
                        # the speaker dropped one (never on the predicate licence alone)
                        stack.append((child, at, cost + 1, depth + 1, depth, False))
            if (
                spoken_hangul
                and may_edit
                and depth
                and node[_LONGEST] >= MIN_EDITED_WORD
                and editable[at]
                and cost + 1 <= budget
                and (_END in node or after in node)
            ):
                # the recognizer added a syllable after the value's character depth - 1
                stack.append((node, at + 1, cost + 1, depth, depth - 1, False))

    def first_chars(self) -> frozenset[str]:
        """The characters a value can start with."""
        return frozenset(char for char in self.root if char not in _KEYS)

    def words(self) -> Iterator[str]:
        """Every canonical value text in the list."""
        stack = [(self.root, "")]
        while stack:
            node, prefix = stack.pop()
            if node.get(_END):
                yield prefix
            stack.extend(
                (child, prefix + char) for char, child in node.items() if char not in _KEYS
            )


_EDGES = "\x02"  # trie key of a node's edges: (character, child, is Hangul, long word)
_VERB = "\x03"  # trie key: whether the value ending at this node has a verb's form
_NEAR = "\x04"  # trie key of the node's edges by jamo.neighbour_keys
_KEYS = (_END, _LONGEST, _WORDS, _EDGES, _VERB, _NEAR)
_HANGUL_FIRST, _HANGUL_LAST = "\uac00", "\ud7a3"  # is_hangul, without a call per character


def word_lengths(spoken: str, length: int) -> tuple[int, ...]:
    """For each of the first `length` canonical characters of `spoken`, the length of the
    spoken word it belongs to ("거실 불" → 2, 2, 1): an edit is licensed by its word."""
    lengths: list[int] = []
    for word in normalize_spoken(spoken).split():
        size = len(canonical_word(word))
        lengths.extend([size] * size)
    if len(lengths) < length:  # a respelling joined words: count the rest as one word
        lengths.extend([length - len(lengths)] * (length - len(lengths)))
    return tuple(lengths[:length])


def _edges(node: dict) -> tuple:
    """A node's edges with what the fuzzy search asks of them, in the node's order, and
    the same by jamo.neighbour_keys; made on the search's first visit (after
    _mark_longest: an edge says whether its child is on a long enough value)."""
    edges = tuple(
        (char, child, is_hangul(char), child[_LONGEST] >= MIN_EDITED_WORD)
        for char, child in node.items()
        if char not in _KEYS
    )
    node[_NEAR] = neighbour_index([edge[0] for edge in edges])
    node[_EDGES] = edges
    return edges


def _mark_longest(root: dict) -> None:
    """Store under _LONGEST the length of the longest value through each node (walked
    with a stack, children before their parent: a value may be any length)."""
    order, stack = [], [(root, 0)]
    while stack:
        node, depth = stack.pop()
        order.append((node, depth))
        stack.extend((child, depth + 1) for char, child in node.items() if char not in _KEYS)
    for node, depth in reversed(order):
        children = (child[_LONGEST] for char, child in node.items() if char not in _KEYS)
        node[_LONGEST] = max(children, default=depth)


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class RangeList:
    """Numbers from `low` to `high` in steps of `step`; halves when `fractions`."""

    low: int
    high: int
    step: int = 1
    fractions: bool = False
    multiplier: float | None = None
    kind = "range"

    @property
    def samples(self) -> list[str]:
        """A few values across the range, read aloud."""
        span = self.high - self.low
        picks = sorted({self.low, self.low + span // 4, self.low + span // 2, self.high})
        return [sino_words(int(v)) for v in picks]

    def matches(self, text: str, pos: int) -> Iterator[tuple[int, ListValue]]:
        found = _NUMBER.match(text, pos)
        if not found:
            return
        number = float(found.group(0))
        whole = number.is_integer()
        if not whole and not (self.fractions and (number * 2).is_integer()):
            return
        if not (self.low <= number <= self.high) or (whole and (number - self.low) % self.step):
            return
        value: float | int = int(number) if whole else number
        if self.multiplier is not None:
            value = value * self.multiplier
        yield found.end(), ListValue(value)


class WildcardList:
    """Any non-empty text; the value is the spoken text behind it.

    Anchored (by compile.anchor_wildcards, where the template goes on after the wildcard:
    "{timer_name:name} 타이머 ...", "{timer_name:name} {minutes}분 타이머"), it ends only
    where the rest can start: before a character of `follow`; before a number followed by
    a character of `after_number` (its unit: 3분); before one of `particles` followed by
    either; or at the end of the text when `may_end`. The same matches, without trying
    every split of every utterance (a wildcard at the root is tried on every sentence)."""

    kind = "wildcard"

    def __init__(
        self,
        follow: frozenset[str] | None = None,
        may_end: bool = True,
        particles: tuple[str, ...] = (),
        after_number: frozenset[str] = frozenset(),
    ) -> None:
        self.follow = follow
        self.may_end = may_end
        self.particles = particles
        self.after_number = after_number
        self._by_start: dict[str, tuple[str, ...]] = {}
        for particle in particles:
            self._by_start[particle[0]] = (*self._by_start.get(particle[0], ()), particle)

    def matches(self, text: str, pos: int) -> Iterator[tuple[int, ListValue]]:
        if self.follow is None:
            for end in range(len(text), pos, -1):
                yield end, ListValue(None)
            return
        if self.may_end and len(text) > pos:
            yield len(text), ListValue(None)
        for end in range(len(text) - 1, pos, -1):
            if self._goes_on(text, end):
                yield end, ListValue(None)

    def _goes_on(self, text: str, at: int, particle: bool = True) -> bool:
        """Whether the rest of the template can start at `at` (after a particle there,
        when `particle`)."""
        char = text[at]
        if char in self.follow:
            return True
        if "0" <= char <= "9":
            run = at
            while run < len(text) and ("0" <= text[run] <= "9" or text[run] == "."):
                run += 1
            return run < len(text) and text[run] in self.after_number
        if not particle:
            return False
        for word in self._by_start.get(char, ()):
            after = at + len(word)
            if text.startswith(word, at) and (
                (after == len(text) and self.may_end)
                or (after < len(text) and self._goes_on(text, after, particle=False))
            ):
                return True
        return False


SlotList = TextList | RangeList | WildcardList


def build_list(name: str, spec: dict[str, Any], rules: dict[str, Sentence]) -> SlotList:
    """A slot list from its pack definition."""
    if spec.get("wildcard"):
        return WildcardList()
    if "range" in spec:
        bounds = spec["range"]
        try:
            return RangeList(
                low=int(bounds["from"]),
                high=int(bounds["to"]),
                step=int(bounds.get("step", 1)),
                fractions=bounds.get("fractions") is not None,
                multiplier=bounds.get("multiplier"),
            )
        except (TypeError, ValueError):
            raise PackError(
                f"range list '{name}': 'from', 'to' and 'step' must be numbers"
            ) from None
    entries, samples = [], []
    for item in spec.get("values") or []:
        if isinstance(item, dict):
            spoken, out, context = item.get("in"), item.get("out"), item.get("context") or {}
        else:
            spoken, out, context = item, None, {}
        if not isinstance(spoken, str | int | float):
            raise PackError(f"list '{name}': each value needs text ('in'), got {item!r}")
        for text in template_texts(str(spoken), rules, f"list '{name}'"):
            value = out if out is not None else normalize_spoken(text)
            entries.append((canonical_word(text), ListValue(value, dict(context)), text))
            samples.append(text)
    return TextList(entries, samples)


def template_texts(template: str, rules: dict[str, Sentence], where: str) -> list[str]:
    """Every text a value template like "(배터리 부족|충전 중)" stands for."""
    if not any(c in template for c in "([{<"):
        return [template]
    texts = []
    for path in expand(parse_template(template, where), Expansion(rules)):
        if any(isinstance(part, SlotRef) for part in path):
            raise PackError(f"{where}: list values cannot refer to other lists: {template!r}")
        texts.append("".join(path))
    return texts


def parse_inline_range(list_name: str) -> RangeList | None:
    """ "1..10,1" (an inline `{1..10}` reference) as a RangeList."""
    found = re.fullmatch(r"(\d+)\.\.(\d+),(\d+)", list_name)
    if not found:
        return None
    low, high, step = (int(g) for g in found.groups())
    return RangeList(low, high, step)


def rule_list(texts: list[str]) -> TextList:
    """A hidden list from a text-only rule's expansions.

    Each text also stands without its request ending (맞춰줘 → 맞춰): utterances lose
    theirs before matching, and a rule may close the sentence.
    """
    entries = []
    for text in texts:
        word = canonical_word(text)
        entries.append((word, ListValue(None), text))
        cut = ending_length(word)
        if cut:
            entries.append((word[:-cut], ListValue(None), text))
    return TextList(entries, texts)


def as_list(value: Any) -> list[Any]:
    """A context rule's value as a list ("light" or ["light", "switch"])."""
    return list(value) if isinstance(value, list | tuple | set) else [value]
