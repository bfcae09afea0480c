"""Build Presets: read the packs, build the slot lists, compile every template into the trie.

presets = load_presets("ko", home)
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from sori.core.errors import PackError
from sori.core.home import Home
from sori.understanding.intents.korean import (
    PARTICLES,
    canonical_word,
    is_verb_form,
    normalize_spoken,
)
from sori.understanding.intents.loader import home_assistant_pack, pack_files, read_pack
from sori.understanding.intents.presets import (
    DEFAULT_FUZZY_THRESHOLD,
    HOME_ASSISTANT_PRIORITY,
    OWN_PACK_PRIORITY,
    Presets,
)
from sori.understanding.intents.slots import (
    ListValue,
    RangeList,
    SlotList,
    TextList,
    WildcardList,
    build_list,
    parse_inline_range,
    rule_list,
)
from sori.understanding.intents.templates import (
    Pack,
    SlotRef,
    expand_block,
    merge_packs,
    parse_pack,
)
from sori.understanding.intents.trie import (
    Node,
    WordNodes,
    build_trie,
    final_words,
    mark_predicates,
    template_words,
    walk_words,
)


def home_lists(home: Home) -> dict[str, SlotList]:
    """The `area` and `name` lists from the home's areas and devices."""
    areas = [
        (canonical_word(name), ListValue(area.name, {"area": area.id}), name)
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
        devices.extend(
            (canonical_word(n), ListValue(device.name, context), n) for n in device.names
        )
    return {
        "area": TextList(areas, [n for area in home.areas for n in area.names]),
        "name": TextList(devices, [n for device in home.devices for n in device.names]),
        "floor": TextList([]),
    }


def compile_pack(pack: Pack, home: Home, fuzzy_threshold: float | None) -> Presets:
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
    anchor_wildcards(root, lists)
    words = list(walk_words(root))  # one walk for the three passes
    known = template_words(words)
    for slot_list in lists.values():
        if isinstance(slot_list, TextList):
            known.update(slot_list.words())
    mark_predicates(words, is_verb_form)
    verbs = _command_verbs(words, lists)
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
        known_words=frozenset(known),
        command_verbs=verbs,
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


_DIGITS = frozenset("0123456789")


def anchor_wildcards(root: Node, lists: dict[str, SlotList]) -> None:
    """Give each wildcard reference what the template can go on with ("{name} 타이머": 타
    or 알, {_timer}'s values; "{name} {minutes}분": a number, then 분), so that at match
    time it ends only where the rest can start instead of at every split of every
    utterance (a wildcard at the root is tried on every sentence). A reference followed
    by another wildcard, or by nothing known, stays unanchored. Each anchored reference
    gets its own list, `<name>@<n>`."""
    seen: set[int] = set()
    stack = [root]
    count = 0
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for ref, child in list(node.slots.items()):
            stack.append(child)
            if not isinstance(lists.get(ref.list_name), WildcardList):
                continue
            found = _first_chars(child, lists)
            if found is None:
                continue
            follow, particles, after_number = found
            count += 1
            name = f"{ref.list_name}@{count}"
            lists[name] = WildcardList(
                follow, bool(child.ends), PARTICLES if particles else (), after_number
            )
            anchored = SlotRef(name, ref.slot_name)  # in the same place: the same order
            node.slots = {anchored if r is ref else r: c for r, c in node.slots.items()}
        stack.extend(node.chars.values())
        if node.boundary is not None:
            stack.append(node.boundary)


_Start = tuple[frozenset[str], bool, frozenset[str]]


def _first_chars(node: Node, lists: dict[str, SlotList], depth: int = 0) -> _Start | None:
    """How text matched from `node` on can start: (its first characters, whether a
    particle may come first (at a word break, or before the end), the characters that
    may follow a number read first); None when a list there could start with anything."""
    chars: set[str] = set(node.chars)
    after_number: set[str] = set()
    for ref, child in node.slots.items():
        found = lists.get(ref.list_name)
        if isinstance(found, TextList):
            chars |= found.first_chars()
        elif isinstance(found, RangeList):
            after = _first_chars(child, lists, depth + 1) if depth < 4 else None
            if after is None or after[2] or child.ends:
                chars |= _DIGITS  # what follows the number is not known: any number
            else:  # its unit ("3분"); a particle between the two ("3을 분") is no Korean
                after_number |= after[0]
        else:
            return None
    particles = bool(node.ends)
    if node.boundary is not None:
        after = _first_chars(node.boundary, lists, depth + 1) if depth < 4 else None
        if after is None:
            return None
        chars |= after[0]
        after_number |= after[2]
        particles = True
    return frozenset(chars), particles, frozenset(after_number)


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


def _command_verbs(words: WordNodes, lists: dict[str, SlotList]) -> frozenset[str]:
    """Words of verb form that end a command's template (켜, 꺼, 열어, 닫아): a predicate
    heard as one of these is what the user said, never a mishearing of another. Query
    intents (Home Assistant names them Hass…Get…) end on nouns as often as verbs (켜진
    거), and a query never fires a device, so their last words do not count."""

    values: dict[str, tuple[str, ...]] = {}  # a list ends many templates: spell it once

    def list_words(name: str) -> tuple[str, ...]:
        if name not in values:
            slot_list = lists.get(name)
            values[name] = tuple(slot_list.words()) if isinstance(slot_list, TextList) else ()
        return values[name]

    verbs: set[str] = set()
    for word, terminals in final_words(words, list_words):
        if (
            word not in verbs
            and is_verb_form(word)
            and any("Get" not in t.block.intent for t in terminals)
        ):
            verbs.add(word)
    return frozenset(verbs)
