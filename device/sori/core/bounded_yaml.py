"""YAML read by PyYAML's safe rules, within limits, every failure a yaml.YAMLError that
carries its line.

    data = read_bounded(text, max_depth=16, max_values=50_000)

What the limits stop:
- aliases (`*name`): refused. A few hundred bytes of nested ones expand to billions of
  values (billion laughs), and nothing Sori reads as YAML needs one;
- nesting: PyYAML composes it by recursion, so thousands of levels overflow the stack;
- size: PyYAML reads some 30,000 values a second and keeps a few hundred bytes for each,
  so `max_values` bounds the wait and the memory however densely the text is written;
- values its constructors cannot read: with an explicit tag (`!!int hello`,
  `!!timestamp 2024-13-45`), or a number of over 4,300 digits, which Python's int()
  refuses, they raise ValueError and kin instead of a YAMLError.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.reader import ReaderError
from yaml.scanner import ScannerError


def read_bounded(text: str, max_depth: int, max_values: int) -> Any:
    """`text` as Python values, as `yaml.safe_load` reads it, or a yaml.YAMLError when it
    holds an alias, nests mappings and lists deeper than `max_depth` or holds more than
    `max_values` values (keys, scalars, lists, mappings)."""
    loader = _BoundedLoader(text, max_depth, max_values)  # a control character: ReaderError
    try:
        return loader.get_single_data()
    except ValueError:  # the scanner gives chr() what "\U11111111" asks, unchecked
        raise ScannerError(
            None, None, "an escape names no character (past \\U0010FFFF)", loader.get_mark()
        ) from None
    finally:
        loader.dispose()


def one_line(exc: yaml.YAMLError, text: str) -> str:
    """A YAML error of `text` in one line: where, then what ("line 3, column 7: ...")."""
    if isinstance(exc, ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        return f"line {line}: character U+{exc.character:04X} is not allowed in YAML; remove it"
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "not valid YAML"
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return " ".join(f"{where}{problem}".split())


class _BoundedLoader(yaml.SafeLoader):
    """A SafeLoader that checks the limits while it composes, before anything is built."""

    def __init__(self, stream: str, max_depth: int, max_values: int) -> None:
        super().__init__(stream)
        self.max_depth = max_depth
        self.max_values = max_values
        self.depth = 0
        """Mappings and lists open around the node being composed."""
        self.values = 0
        """Nodes composed so far."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise ComposerError(
                None,
                None,
                f"aliases (*{event.anchor}) are not allowed; write the value out",
                event.start_mark,
            )
        opens = int(isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent))
        if opens and self.depth == self.max_depth:
            message = f"nested more than {self.max_depth} deep"
            raise ComposerError(None, None, message, event.start_mark)
        self.values += 1
        if self.values > self.max_values:
            message = f"more than {self.max_values} values; split the file in several"
            raise ComposerError(None, None, message, event.start_mark)
        self.depth += opens
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= opens

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, LookupError, AttributeError):  # see the module's docstring
            if not isinstance(node, yaml.ScalarNode):
                raise
            kind = node.tag.rsplit(":", 1)[-1]
            article = "an" if kind[:1] in ("a", "e", "i", "o", "u") else "a"
            long = len(node.value) > 20
            text = f"{node.value[:10]}…" if long else node.value
            size = f" of {len(node.value)} characters" if long else ""
            raise ConstructorError(
                None,
                None,
                f"{article} {kind}{size} ({text!r}) cannot be read; write a plain number or text",
                node.start_mark,
            ) from None
