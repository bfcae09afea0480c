"""Sample sentences of the packs, read aloud: vocabulary for speech recognition.

Every template path is filled by cycling through each slot's sample values, so every
value of every slot appears at least once per template; names only where the block's
context accepts the device; numbers spelled as spoken (23 → 이십삼).
"""

from __future__ import annotations

from typing import Any

from sori.home import Home
from sori.intents.slots import SlotList, as_list
from sori.intents.templates import Block, Path, expand_block


def sample_phrases(
    blocks: list[Block],
    rules: dict[str, Any],
    lists: dict[str, SlotList],
    home: Home,
    limit: int = 5000,
) -> list[str]:
    """The home's names, then filled template paths of `blocks`, at most `limit`."""
    phrases: dict[str, None] = {}
    for name in (*lists["name"].samples, *lists["area"].samples):
        phrases[" ".join(name.split())] = None
    for block in blocks:
        for _, path in expand_block(block, rules):
            for sentence in _fill(path, block, lists, home):
                phrases[sentence] = None
            if len(phrases) >= limit:
                return list(phrases)[:limit]
    return list(phrases)


def _fill(path: Path, block: Block, lists: dict[str, SlotList], home: Home) -> list[str]:
    choices = []
    for part in path:
        if isinstance(part, str):
            choices.append([part])
            continue
        if part.list_name == "name":
            samples = names_for(block, home)
        else:
            samples = getattr(lists.get(part.list_name), "samples", None)
        if not samples:
            return []  # wildcards and empty lists have nothing to say
        choices.append(samples)
    rounds = max((len(c) for c in choices), default=0)
    return [" ".join("".join(c[i % len(c)] for c in choices).split()) for i in range(rounds)]


def names_for(block: Block, home: Home) -> list[str]:
    """Names of the devices a block's context rules accept."""
    wanted = {k: as_list(v) for k, v in block.requires_context.items() if k != "area"}
    return [
        name
        for device in home.devices
        if device.domain in wanted.get("domain", [device.domain])
        and device.device_class in wanted.get("device_class", [device.device_class])
        for name in device.names
    ]
