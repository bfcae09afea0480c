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

from sori.errors import PackError
from sori.intents.jamo import syllable_cost
from sori.intents.korean import canonical_word, ending_length, normalize_spoken
from sori.intents.numbers import sino_words
from sori.intents.templates import Expansion, SlotRef, expand, parse_template

_END = ""  # trie key under which a node keeps the values that end there
# Fuzzy matching substitutes only syllables that differ in one jamo (see matcher).
MAX_SUBSTITUTION = 1 / 3 + 1e-9


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

    def __init__(self, entries: list[tuple[str, ListValue]], samples: list[str] = ()) -> None:
        self.root: dict = {}
        self.samples = list(dict.fromkeys(samples))
        """Spoken forms of the values, for speech-recognition vocabularies."""
        for text, value in entries:
            if not text:
                continue
            node = self.root
            for char in text:
                node = node.setdefault(char, {})
            values = node.setdefault(_END, [])
            if value not in values:
                values.append(value)

    def matches(self, text: str, pos: int) -> Iterator[tuple[int, ListValue]]:
        node = self.root
        for end in range(pos, len(text)):
            node = node.get(text[end])
            if node is None:
                return
            for value in node.get(_END, ()):
                yield end + 1, value

    def fuzzy_matches(
        self, text: str, pos: int, budget: float
    ) -> Iterator[tuple[int, ListValue, float]]:
        """Values within `budget` syllable edits (jamo-weighted) of text starting at `pos`."""
        stack = [(self.root, pos, 0.0)]
        seen: dict[tuple[int, int], float] = {}
        while stack:
            node, at, cost = stack.pop()
            key = (id(node), at)
            if seen.get(key, budget + 1) <= cost:
                continue
            seen[key] = cost
            for value in node.get(_END, ()):
                yield at, value, cost
            for char, child in node.items():
                if char == _END:
                    continue
                if at < len(text):
                    near = syllable_cost(char, text[at])
                    if near <= MAX_SUBSTITUTION and cost + near <= budget:
                        stack.append((child, at + 1, cost + near))
                if cost + 1 <= budget:
                    stack.append((child, at, cost + 1))  # the speaker dropped a syllable
            if at < len(text) and cost + 1 <= budget and node is not self.root:
                stack.append((node, at + 1, cost + 1))  # the recognizer added one


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
    """Any non-empty text; the value is the spoken text behind it."""

    kind = "wildcard"

    def matches(self, text: str, pos: int) -> Iterator[tuple[int, ListValue]]:
        for end in range(len(text), pos, -1):
            yield end, ListValue(None)


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
            entries.append((canonical_word(text), ListValue(value, dict(context))))
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
        entries.append((word, ListValue(None)))
        cut = ending_length(word)
        if cut:
            entries.append((word[:-cut], ListValue(None)))
    return TextList(entries, texts)


def as_list(value: Any) -> list[Any]:
    """A context rule's value as a list ("light" or ["light", "switch"])."""
    return list(value) if isinstance(value, list | tuple | set) else [value]
