"""The tables the fuzzy search uses to skip work must describe the trie exactly: an edge
left out of a neighbour lookup, or a word length too short, would silently lose a match."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sori.core.hangul import (
    is_hangul,
    near_positions,
    neighbour_index,
    neighbour_keys,
    syllable_cost,
)
from sori.understanding.intents.trie import walk_words

ONE_JAMO = 1 / 3 + 1e-9
syllables = st.integers(0xAC00, 0xD7A3).map(chr)
# Mostly near neighbours of a few syllables, so that lookups find something.
characters = st.one_of(syllables, st.sampled_from("켜꺼거커켬안암앙방밤1a%"))


@settings(max_examples=300, deadline=None)
@given(a=syllables, b=syllables)
def test_two_syllables_share_a_neighbour_key_exactly_when_one_jamo_apart(a, b):
    shared = bool(set(neighbour_keys(a)) & set(neighbour_keys(b)))
    assert shared == (syllable_cost(a, b) <= ONE_JAMO)


@settings(max_examples=300, deadline=None)
@given(chars=st.lists(characters, max_size=40), heard=characters.filter(is_hangul))
def test_a_neighbour_lookup_finds_every_near_character_in_order(chars, heard):
    expected = [
        i for i, c in enumerate(chars) if is_hangul(c) and syllable_cost(c, heard) <= ONE_JAMO
    ]
    assert near_positions(neighbour_index(chars), neighbour_keys(heard)) == expected


def test_every_trie_node_knows_the_longest_word_through_it(presets):
    """Node.longest (set while inserting) equals its definition: the node's depth in its
    word plus the longest run of characters below it."""
    order = list(walk_words(presets.root))
    tails: dict[int, int] = {}
    wrong = []
    for node, prefix in reversed(order):  # children come after their parent
        tails[id(node)] = max((1 + tails[id(c)] for c in node.chars.values()), default=0)
        if node.longest != len(prefix) + tails[id(node)]:
            wrong.append((prefix, node.longest, len(prefix) + tails[id(node)]))
    assert len(order) > 1000
    assert wrong == []
