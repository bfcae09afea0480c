"""Match canonical text against the compiled trie: exact first, then jamo-level fuzzy.

Pure functions over parsed objects; no I/O. Both searches return every candidate they
find; choosing among them (context rules, ranking, ambiguity) is `presets`' job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sori.core.hangul import (
    is_hangul,
    near_positions,
    neighbour_index,
    neighbour_keys,
    sounds_alike,
    syllable_cost,
)
from sori.understanding.intents.korean import particle_lengths
from sori.understanding.intents.slots import (
    MAX_WORD_EDITS,
    MIN_EDITED_WORD,
    ListValue,
    SlotList,
    TextList,
)
from sori.understanding.intents.trie import Node, Terminal

# A search stops collecting after this many candidates (wildcards can make many).
MAX_CANDIDATES = 128
# Fuzzy paths within this many syllable edits of the best one are kept, so that a
# near-tie between two meanings can be seen and refused.
AMBIGUITY_MARGIN = 0.34
# A recognizer's near-miss differs from the spoken syllable in one jamo (안방 → 암방);
# syllables that differ more are different words, not errors.
MAX_SUBSTITUTION = 1 / 3 + 1e-9

Lookup = Callable[[str], SlotList | None]


@dataclass(frozen=True, slots=True)
class Capture:
    """A slot filled from part of the utterance."""

    slot: str
    value: ListValue
    start: int
    """First canonical character of the span."""
    end: int
    """One past the last canonical character of the span."""
    kind: str
    """The list kind: "text", "range" or "wildcard"."""

    @property
    def hidden(self) -> bool:
        """Hidden lists (`{_light}`) group words; they are matched but not reported."""
        return self.slot.startswith("_")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One way the utterance fits one template."""

    terminal: Terminal
    captures: tuple[Capture, ...]
    cost: float
    """Edit cost in syllables (jamo-weighted); 0 for an exact match."""
    skipped: int
    """Characters skipped as particles the template did not write."""


def match_exact(root: Node, text: str, lookup: Lookup) -> list[Candidate]:
    """Every way `text` fits a template exactly (modulo particles at word breaks)."""
    found: list[Candidate] = []
    dead: set[tuple[int, int]] = set()
    end_of_text = len(text)
    # A depth-first walk with its own stack (no recursion, however long the text or the
    # templates), visiting in the order written below. A (key, found before) entry closes
    # a state: when its subtree found nothing, the state is dead for the rest of the walk.
    stack: list[tuple] = [(root, 0, (), 0)]
    while stack:
        state = stack.pop()
        if len(state) == 2:
            key, before = state
            if len(found) == before:
                dead.add(key)
            continue
        node, pos, captures, skipped = state
        key = (id(node), pos)
        if key in dead or len(found) >= MAX_CANDIDATES:
            continue
        before = len(found)
        if pos == end_of_text:
            found.extend(Candidate(t, captures, 0.0, skipped) for t in node.ends)
        elif node.ends and (end_of_text - pos) in particle_lengths(text, pos):
            # A particle after the last word ("침실 50%로") changes nothing.
            found.extend(
                Candidate(t, captures, 0.0, skipped + end_of_text - pos) for t in node.ends
            )
        following: list[tuple] = []
        if pos < end_of_text:
            child = node.chars.get(text[pos])
            if child is not None:
                following.append((child, pos + 1, captures, skipped))
        if node.boundary is not None:
            following.append((node.boundary, pos, captures, skipped))
            for length in particle_lengths(text, pos):
                following.append((node.boundary, pos + length, captures, skipped + length))
        for ref, child in node.slots.items():
            slot_list = lookup(ref.list_name)
            if slot_list is None:
                continue
            for end, value in slot_list.matches(text, pos):
                capture = Capture(ref.slot_name, value, pos, end, slot_list.kind)
                following.append((child, end, (*captures, capture), skipped))
        stack.append((key, before))
        stack.extend(reversed(following))
    return found


def match_fuzzy(
    root: Node,
    text: str,
    lookup: Lookup,
    budget: float,
    known: frozenset[str] = frozenset(),
    heard: tuple[int, ...] | None = None,
    verbs: frozenset[str] | None = None,
) -> list[Candidate]:
    """Templates within `budget` edits of `text`, under the licence rules of `word_ok`.

    The walk keeps, for the known word (template word or list value) being matched, how
    many edits it took and where it began in `text`; a word that took an edit must be
    long enough, took only one, and must not have been heard as another known word
    (`known`); and the heard word the edit falls in (`heard`, lengths per character of
    `text`, see korean.heard_word_lengths) must be as long. Wildcards take no part: a
    fuzzy wildcard would fit anything.

    The predicate has a licence of its own (on when `verbs` is given): the word a
    template ends on, when it has a verb's form (켜, 닫아, 맞춰; trie.Node.predicate), may
    take one edit however short it and its heard word are, provided that edit is the only
    one in the utterance (every noun was heard exactly) and the heard predicate is not a
    command verb itself (`verbs`: 켜 is never edited into 꺼). 거줘 → 꺼줘, 켜져 → 켜줘.
    """
    found: list[Candidate] = []
    if heard is None:
        heard = (len(text),) * len(text)
    # Where an edit may fall: a character of a long enough heard word.
    editable = tuple(n >= MIN_EDITED_WORD for n in heard) + (False,)
    # Per character of `text` (and one past its end), computed once: the hot loops below
    # ask for each trie edge whether a substitution, an insertion or a drop may happen.
    hangul = tuple(is_hangul(c) for c in text) + (False,)
    keys = [neighbour_keys(c) if h else None for c, h in zip(text, hangul, strict=False)]
    # A slot list's fuzzy values at a position depend only on (list, position, budget
    # left, predicate licence); many trie nodes ask the same question.
    list_hits: dict[tuple[int, int, float, bool], list[tuple[int, ListValue, float]]] = {}
    particles: dict[int, list[int]] = {}
    best: dict[tuple[int, int, int, bool], float] = {}
    end_of_text = len(text)
    predicates = verbs is not None

    def word_ok(length: int, edits: int, start: int, pos: int) -> bool:
        return not edits or (
            edits <= MAX_WORD_EDITS and length >= MIN_EDITED_WORD and text[start:pos] not in known
        )

    def predicate_ok(node: Node, start: int, pos: int) -> bool:
        return pos == end_of_text and node.predicate and text[start:pos] not in verbs

    # A depth-first walk with its own stack (no recursion, however long the text or the
    # templates): each state's next states are pushed in reverse, so they are visited in
    # the order written below. A state: the node, the position in `text`, the captures,
    # the cost so far; depth: characters of the current template word matched so far;
    # edits: edits inside it; start: where in `text` it began; loose: its edit stands on
    # the predicate licence alone (the only edit so far, in a short word).
    stack: list[tuple] = [(root, 0, (), 0.0, 0, 0, 0, False)]
    while stack:
        node, pos, captures, cost, depth, edits, start, loose = stack.pop()
        key = (id(node), pos, edits, loose)
        seen = best.get(key)
        if (seen is not None and cost >= seen + AMBIGUITY_MARGIN) or len(found) >= MAX_CANDIDATES:
            continue
        if seen is None or cost < seen:
            best[key] = cost
        if loose:
            if predicate_ok(node, start, pos):
                found.extend(Candidate(t, captures, cost, 0) for t in node.ends)
            closes = False  # nothing may follow the predicate
        else:
            closes = word_ok(depth, edits, start, pos)
            if pos == end_of_text and closes:
                found.extend(Candidate(t, captures, cost, 0) for t in node.ends)
        following: list[tuple] = []
        spoken = text[pos] if pos < end_of_text else None
        may_edit = edits < MAX_WORD_EDITS
        # An edit outside the general licence may still be the predicate's only edit.
        may_loose = predicates and not cost
        # A dropped syllable is charged to the heard word it was dropped from (the one
        # before the gap).
        may_drop = pos > 0 and editable[pos - 1] and cost + 1.0 <= budget
        may_substitute = hangul[pos] and (editable[pos] or may_loose)
        if not (may_edit and (may_substitute or may_drop)):
            # No edit can happen here: follow the heard character alone (the same walk
            # the loop below would make, without visiting every edge).
            child = node.chars.get(spoken) if spoken is not None else None
            if child is not None:
                following.append((child, pos + 1, captures, cost, depth + 1, edits, start, loose))
        else:
            edges = node.edges
            if edges is None:
                edges = node.edges = tuple(
                    (char, child, is_hangul(char)) for char, child in node.chars.items()
                )
            if not may_drop:
                # Only a substitution: the edges within one jamo of the heard syllable
                # are the only ones that can take it (in the same order).
                if node.near is None:
                    node.near = neighbour_index([edge[0] for edge in edges])
                edges = [edges[i] for i in near_positions(node.near, keys[pos])]
            for char, child, char_is_hangul in edges:
                if char == spoken:
                    following.append(
                        (child, pos + 1, captures, cost, depth + 1, edits, start, loose)
                    )
                    continue
                if not char_is_hangul:
                    continue
                long_word = child.longest >= MIN_EDITED_WORD
                if not (long_word or may_loose):
                    continue
                if may_substitute:
                    licensed = long_word and editable[pos]
                    near = syllable_cost(char, spoken)
                    # on the predicate licence alone, only a jamo that sounds alike (거/꺼)
                    allowed = licensed or (may_loose and sounds_alike(char, spoken))
                    if allowed and near <= MAX_SUBSTITUTION and cost + near <= budget:
                        following.append(
                            (
                                child,
                                pos + 1,
                                captures,
                                cost + near,
                                depth + 1,
                                1,
                                start,
                                not licensed,
                            )
                        )
                if long_word and may_drop:
                    # the recognizer dropped a syllable (never on the predicate licence alone)
                    following.append((child, pos, captures, cost + 1.0, depth + 1, 1, start, False))
        if (
            may_edit
            and depth  # inside a word: a whole extra word is never skipped
            and hangul[pos]
            and editable[pos]
            and node.longest >= MIN_EDITED_WORD
            and cost + 1.0 <= budget
        ):  # the recognizer added a syllable inside the word (멈춰 서 is not 멈춰)
            following.append((node, pos + 1, captures, cost + 1.0, depth, 1, start, False))
        if closes:  # a word ends here: a break, particles or a slot may follow
            if node.boundary is not None:
                following.append((node.boundary, pos, captures, cost, 0, 0, pos, False))
                lengths = particles.get(pos)
                if lengths is None:
                    lengths = particles[pos] = particle_lengths(text, pos)
                for length in lengths:
                    following.append(
                        (node.boundary, pos + length, captures, cost, 0, 0, pos + length, False)
                    )
            for ref, child in node.slots.items():
                slot_list = lookup(ref.list_name)
                if isinstance(slot_list, TextList):
                    last = predicates and not cost and bool(child.ends)
                    hit_key = (id(slot_list), pos, budget - cost, last)
                    hits = list_hits.get(hit_key)
                    if hits is None:
                        hits = list_hits[hit_key] = list(
                            slot_list.fuzzy_matches(
                                text, pos, budget - cost, known, editable, verbs if last else None
                            )
                        )
                    for end, value, extra in hits:
                        capture = Capture(ref.slot_name, value, pos, end, "text")
                        following.append(
                            (child, end, (*captures, capture), cost + extra, 0, 0, end, False)
                        )
                elif slot_list is not None and slot_list.kind == "range":
                    for end, value in slot_list.matches(text, pos):
                        capture = Capture(ref.slot_name, value, pos, end, "range")
                        following.append((child, end, (*captures, capture), cost, 0, 0, end, False))
        stack.extend(reversed(following))
    return found
