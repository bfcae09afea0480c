"""Compile expanded templates into one trie over canonical characters.

Every template of every intent shares one trie, so matching an utterance walks only the
branches its characters allow. Besides character edges a node has:
- a boundary edge where the template had a word break: the utterance may put particles
  there that the template did not write (조명을, 거실에 있는);
- slot edges for `{list}` references;
- terminals: the blocks whose templates end here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from sori.understanding.intents.korean import (
    PARTICLES,
    canonical_word,
    ending_length,
    strip_template_particle,
)
from sori.understanding.intents.templates import Block, Path, SlotRef

_PARTICLE_WORDS = frozenset(PARTICLES)


@dataclass(frozen=True, slots=True)
class Terminal:
    """A template that ends at a trie node."""

    block: Block
    """The block (intent, fixed slots, context rules) the template belongs to."""
    template: str
    """The template text as written, for explanations."""
    literal_chars: int
    """How many literal characters the expanded template spells out."""


class Node:
    __slots__ = ("chars", "boundary", "slots", "ends", "longest", "predicate", "edges", "near")

    def __init__(self) -> None:
        self.chars: dict[str, Node] = {}
        self.boundary: Node | None = None
        self.slots: dict[SlotRef, Node] = {}
        self.ends: list[Terminal] = []
        self.longest = 0
        """Length of the longest template word through this node (characters; set by
        build_trie), so the fuzzy walk knows before trying an edit whether the word may
        take one."""
        self.predicate = False
        """True where a template may end on a word of verb form (켜, 닫아, 맞춰): the
        predicate, which a fuzzy edit may repair although it is short (see matcher)."""
        self.edges: tuple[tuple[str, Node, bool], ...] | None = None
        """`chars` as (character, child, is Hangul), in `chars`' order, made by the fuzzy
        walk on its first visit: it visits every edge and would otherwise ask each time."""
        self.near: dict[int, tuple[int, ...]] | None = None
        """`edges` by jamo.neighbour_keys, made by the fuzzy walk on its first visit."""


Unit = str | SlotRef


def path_units(path: Path) -> list[Unit]:
    """Canonical words and slot refs of one expanded template.

    Words are split at spaces; the request ending is cut from the end (켜 줘 → 켜);
    particles are cut from word ends except the last word (조명을 켜 → 조명 | 켜).
    """
    units: list[Unit] = []
    word: list[str] = []

    def flush() -> None:
        if word:
            text = canonical_word("".join(word))
            if text:
                units.append(text)
            word.clear()

    for part in path:
        if isinstance(part, SlotRef):
            flush()
            units.append(part)
            continue
        for char in part:
            if char.isspace():
                flush()
            else:
                word.append(char)
    flush()
    _cut_ending(units)
    last_word = max((i for i, u in enumerate(units) if isinstance(u, str)), default=-1)
    cleaned: list[Unit] = []
    for i, unit in enumerate(units):
        if isinstance(unit, str) and i != last_word:
            if unit in _PARTICLE_WORDS and cleaned:
                continue
            unit = strip_template_particle(unit)
        cleaned.append(unit)
    return cleaned


def _cut_ending(units: list[Unit]) -> None:
    tail = []
    for unit in reversed(units):
        if isinstance(unit, SlotRef):
            break
        tail.insert(0, unit)
    cut = ending_length("".join(tail))
    while cut and units and isinstance(units[-1], str):
        word = units.pop()
        if len(word) > cut:
            units.append(word[:-cut])
            break
        cut -= len(word)


def build_trie(blocks_with_paths) -> tuple[Node, int]:
    """The trie of all (block, template, path) triples, and how many paths went in."""
    root = Node()
    count = 0
    for block, template, path in blocks_with_paths:
        units = path_units(path)
        if not units:
            continue
        node = root
        literal = 0
        for i, unit in enumerate(units):
            if i:
                if node.boundary is None:
                    node.boundary = Node()
                node = node.boundary
            if isinstance(unit, SlotRef):
                node = node.slots.setdefault(unit, Node())
            else:
                literal += len(unit)
                # Every node on a word's path (its start included) lies on a word this long.
                size = len(unit)
                if node.longest < size:
                    node.longest = size
                for char in unit:
                    child = node.chars.get(char)
                    if child is None:
                        child = node.chars[char] = Node()
                    node = child
                    if node.longest < size:
                        node.longest = size
        terminal = Terminal(block, template, literal)
        if not any(t.block is block for t in node.ends):
            node.ends.append(terminal)
            count += 1
    return root, count


def walk_words(root: Node) -> Iterator[tuple[Node, str]]:
    """(node, the word spelled so far) for every node of every template word, each word
    start (the root, the targets of boundary and slot edges) visited once; a node comes
    after its parent."""
    starts, seen = [root], set()
    while starts:
        start = starts.pop()
        if id(start) in seen:
            continue
        seen.add(id(start))
        stack = [(start, "")]
        while stack:
            node, prefix = stack.pop()
            yield node, prefix
            stack.extend((child, prefix + char) for char, child in node.chars.items())
            if node.boundary is not None:
                starts.append(node.boundary)
            starts.extend(node.slots.values())


WordNodes = Iterable[tuple[Node, str]]
"""What walk_words yields; the passes below take it so one walk can serve them all."""


def template_words(words: WordNodes) -> set[str]:
    """Every literal word the templates spell (the text between word breaks)."""
    return {
        prefix
        for node, prefix in words
        if prefix and (node.boundary is not None or node.ends or node.slots)
    }


def final_words(words: WordNodes, list_words: Callable[[str], Iterable[str]]) -> Iterator[tuple]:
    """(word, terminals) for every word a template may end on: literal words and the
    values of a list in last place (`list_words` gives a list's values by name)."""
    for node, prefix in words:
        if prefix and node.ends:
            yield prefix, node.ends
        for ref, child in node.slots.items():
            if child.ends:
                yield from ((word, child.ends) for word in list_words(ref.list_name))


def mark_predicates(words: WordNodes, is_predicate: Callable[[str], bool]) -> None:
    """Set `predicate` on the node that ends each literal final word passing the test."""
    for node, prefix in words:
        node.predicate = bool(prefix and node.ends and is_predicate(prefix))
