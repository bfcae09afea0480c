"""Sentence packs in Home Assistant's format: parse with hassil, expand into word paths.

A pack is the dict Home Assistant's intents YAML holds (`intents`, `lists`,
`expansion_rules`, `skip_words`). Templates are parsed with hassil's own parser, so
Home Assistant's packs load unchanged; expansion into concrete word sequences (with
slot references left in place) is ours.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hassil.expression import (
    Alternative,
    Expression,
    ListReference,
    Permutation,
    RuleReference,
    Sentence,
    Sequence,
    TextChunk,
)
from hassil.parse_expression import parse_sentence

from sori.core.errors import PackError

# Expansions per template beyond which a pack is refused as runaway.
MAX_EXPANSIONS = 20_000
_MAX_RULE_DEPTH = 16
MAX_NESTING = 10
"""Deepest nesting of ( ) [ ] { } < > in one template (Home Assistant's packs need 6).
Parsing and expanding recurse once per level, through up to _MAX_RULE_DEPTH rules; at
this depth that stays far inside Python's recursion limit, so a deeper template is
refused before either runs."""
_OPENING, _CLOSING = frozenset("([{<"), frozenset(")]}>")


@dataclass(frozen=True, slots=True)
class SlotRef:
    """A `{list:slot}` reference inside an expanded template."""

    list_name: str
    slot_name: str


# One expanded template: literal text pieces (spaces are word boundaries) and slot refs.
Path = tuple[str | SlotRef, ...]


@dataclass(frozen=True)
class Block:
    """One `data:` entry of an intent: templates sharing fixed slots and context rules."""

    intent: str
    """Home Assistant intent name."""
    templates: tuple[str, ...]
    """Template texts as written."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Slot values fixed by the block."""
    requires_context: dict[str, Any] = field(default_factory=dict)
    """Context items that must be present (`slot: true` copies them into slots)."""
    excludes_context: dict[str, Any] = field(default_factory=dict)
    """Context items that must be absent."""
    rules: dict[str, Sentence] = field(default_factory=dict)
    """Expansion rules local to this block."""
    lists: dict[str, Any] = field(default_factory=dict)
    """Slot lists local to this block (raw dicts)."""
    pack: str = ""
    """Which pack the block came from (file or package name)."""
    priority: int = 0
    """Higher wins ties; our own packs outrank Home Assistant's."""


@dataclass
class Pack:
    """A parsed sentence pack (or several merged)."""

    language: str
    blocks: list[Block] = field(default_factory=list)
    lists: dict[str, Any] = field(default_factory=dict)
    rules: dict[str, Sentence] = field(default_factory=dict)
    skip_words: list[str] = field(default_factory=list)


def parse_template(text: str, where: str) -> Sentence:
    """A hassil Sentence, or a PackError that says where and what."""
    if not isinstance(text, str) or not text.strip():
        raise PackError(f"{where}: a sentence template must be non-empty text, got {text!r}")
    if _nesting(text) > MAX_NESTING:
        raise PackError(
            f"{where}: a template is nested more than {MAX_NESTING} brackets deep "
            f"({text[:40]!r}...); packs need a few levels"
        )
    try:
        return parse_sentence(text, keep_text=True)
    except Exception as exc:  # hassil raises several unrelated types
        raise PackError(f"{where}: cannot parse template {text!r}: {exc}") from None


def _nesting(text: str) -> int:
    """How deep the brackets of `text` nest (counted, not parsed)."""
    depth = deepest = 0
    for char in text:
        if char in _OPENING:
            depth += 1
            deepest = max(deepest, depth)
        elif char in _CLOSING:
            depth -= 1
    return deepest


def parse_pack(data: dict[str, Any], source: str, priority: int = 0, locate=None) -> Pack:
    """Validate and parse one pack dict. `locate(text)` returns 'file:line' for messages."""
    locate = locate or (lambda _text: source)
    language = data.get("language")
    if not isinstance(language, str):
        raise PackError(f"{source}: missing top-level 'language: <code>'")
    pack = Pack(language)
    intents = data.get("intents") or {}
    if not isinstance(intents, dict):
        raise PackError(f"{source}: 'intents' must be a mapping of intent names")
    for name, rule_text in (data.get("expansion_rules") or {}).items():
        pack.rules[name] = parse_template(rule_text, locate(str(rule_text)))
    lists = data.get("lists") or {}
    if not isinstance(lists, dict):
        raise PackError(f"{source}: 'lists' must be a mapping of list names")
    for name, spec in lists.items():
        _check_list(name, spec, locate(str(name) + ":"))
    pack.lists.update(lists)
    pack.skip_words.extend(data.get("skip_words") or [])
    for intent_name, intent in intents.items():
        entries = intent.get("data") if isinstance(intent, dict) else None
        if not isinstance(entries, list):
            raise PackError(f"{locate(str(intent_name) + ':')}: intent needs a 'data' list")
        for entry in entries:
            pack.blocks.append(_parse_block(intent_name, entry, source, priority, locate))
    return pack


def _parse_block(intent: str, entry: Any, source: str, priority: int, locate) -> Block:
    if not isinstance(entry, dict) or not isinstance(entry.get("sentences"), list):
        raise PackError(f"{locate(intent + ':')}: each data entry of {intent} needs 'sentences'")
    for text in entry["sentences"]:
        parse_template(text, locate(str(text)))
    rules = {
        name: parse_template(body, locate(str(body)))
        for name, body in (entry.get("expansion_rules") or {}).items()
    }
    for name, spec in (entry.get("lists") or {}).items():
        _check_list(name, spec, locate(str(name) + ":"))
    return Block(
        intent=intent,
        templates=tuple(entry["sentences"]),
        slots=dict(entry.get("slots") or {}),
        requires_context=dict(entry.get("requires_context") or {}),
        excludes_context=dict(entry.get("excludes_context") or {}),
        rules=rules,
        lists=dict(entry.get("lists") or {}),
        pack=source,
        priority=priority,
    )


def _check_list(name: str, spec: Any, where: str) -> None:
    if not isinstance(spec, dict) or not ({"values", "range", "wildcard"} & spec.keys()):
        raise PackError(f"{where} list '{name}' needs 'values', 'range' or 'wildcard: true'")
    if "range" in spec:
        bounds = spec["range"]
        if not isinstance(bounds, dict) or not {"from", "to"} <= bounds.keys():
            raise PackError(f"{where} range list '{name}' needs 'from' and 'to'")


def merge_packs(packs: list[Pack]) -> Pack:
    """Later packs add blocks and override lists and rules of the same name."""
    merged = Pack(packs[0].language if packs else "")
    for pack in packs:
        merged.blocks.extend(pack.blocks)
        merged.lists.update(pack.lists)
        merged.rules.update(pack.rules)
        merged.skip_words.extend(pack.skip_words)
    return merged


@dataclass
class Expansion:
    """What expanding templates needs: the rules in scope, and where rule lists go.

    With `rule_lists` set, a rule whose body holds only text (no `{lists}`) is not
    inlined: it becomes one hidden slot (`{_<rule>}`) whose values are the rule's texts,
    so "(켜|키|틀어) ..." costs one trie edge instead of multiplying every template.
    """

    rules: dict[str, Sentence]
    rule_lists: dict[str, list[str]] | None = None
    scope: str = ""
    """Prefix for rule-list names, so a block's local rule never shadows a pack rule."""


def expand(expression: Expression, how: Expansion, depth: int = 0) -> Iterator[Path]:
    """Every concrete path through a template expression."""
    if isinstance(expression, Sentence):
        yield from expand(expression.expression, how, depth)
    elif isinstance(expression, TextChunk):
        yield (expression.text,) if expression.text else ()
    elif isinstance(expression, ListReference):
        if expression.is_inline_range:
            low, high, step = expression.get_inline_range()
            yield (SlotRef(f"{low}..{high},{step}", expression.slot_name),)
        else:
            yield (SlotRef(expression.list_name, expression.slot_name),)
    elif isinstance(expression, RuleReference):
        yield from _expand_rule(expression.rule_name, how, depth)
    elif isinstance(expression, Permutation):
        for order in itertools.permutations(expression.items):
            yield from _expand_sequence([*_with_spaces(order)], how, depth)
    elif isinstance(expression, Alternative):
        for item in expression.items:
            yield from expand(item, how, depth)
    elif isinstance(expression, Sequence):
        yield from _expand_sequence(expression.items, how, depth)
    else:
        raise PackError(f"unsupported template element {type(expression).__name__}")


def _expand_rule(name: str, how: Expansion, depth: int) -> Iterator[Path]:
    if depth > _MAX_RULE_DEPTH:
        raise PackError(f"expansion rule <{name}> refers to itself")
    rule = how.rules.get(name)
    if rule is None:
        raise PackError(f"unknown expansion rule <{name}>")
    if how.rule_lists is None or not _text_only(rule, how.rules):
        yield from expand(rule, how, depth + 1)
        return
    list_name = f"_<{how.scope}{name}>"
    texts = how.rule_lists.get(list_name)
    if texts is None:
        inline = Expansion(how.rules)
        texts = ["".join(path) for path in expand(rule, inline, depth + 1)]  # type: ignore[arg-type]
        how.rule_lists[list_name] = texts
    if any(not text.strip() for text in texts):
        yield ()
    yield (SlotRef(list_name, list_name),)


def _text_only(expression: Expression, rules: dict[str, Sentence], depth: int = 0) -> bool:
    """True when an expression holds no list references, through its rules too."""
    if isinstance(expression, Sentence):
        return _text_only(expression.expression, rules, depth)
    if isinstance(expression, ListReference):
        return False
    if isinstance(expression, RuleReference):
        rule = rules.get(expression.rule_name)
        return rule is not None and depth < _MAX_RULE_DEPTH and _text_only(rule, rules, depth + 1)
    if isinstance(expression, Sequence | Alternative | Permutation):
        return all(_text_only(item, rules, depth) for item in expression.items)
    return True


def _with_spaces(items: tuple[Expression, ...]) -> Iterator[Expression]:
    for i, item in enumerate(items):
        if i:
            yield TextChunk(" ")
        yield item


def _expand_sequence(items: list[Expression], how: Expansion, depth: int):
    paths: list[Path] = [()]
    for item in items:
        paths = [head + tail for head in paths for tail in expand(item, how, depth)]
        if len(paths) > MAX_EXPANSIONS:
            raise PackError(f"template expands to more than {MAX_EXPANSIONS} sentences")
    yield from paths


def expand_block(
    block: Block, pack_rules: dict[str, Sentence], rule_lists: dict[str, list[str]] | None = None
) -> Iterator[tuple[str, Path]]:
    """(template text, path) for every expansion of every template in a block."""
    how = Expansion(
        {**pack_rules, **block.rules}, rule_lists, f"{id(block)}:" if block.rules else ""
    )
    for text in block.templates:
        sentence = parse_sentence(text, keep_text=True)
        try:
            for path in expand(sentence, how):
                yield text, path
        except PackError as exc:
            raise PackError(f"{block.pack}: {block.intent}: {text!r}: {exc}") from None
