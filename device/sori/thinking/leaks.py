"""Answer sentences that copy what must never be said: the prompt, or earlier users' words.

A small model asked a question may answer by reciting its instructions ("(Answer in Korean
(한국어)…") or by repeating what an earlier user said, which the conversation memory put in
its prompt. Such a sentence is withheld, never spoken. Pure: strings in, a verdict out.
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import SequenceMatcher

from sori.thinking.prompts import EDGE_SYSTEM, SYSTEM, answer_instruction, judge_instruction

COPIED_CHARS = 12
"""A run of this many characters (spaces ignored) found verbatim in a source is a copy:
about three Korean words, longer than any phrase an answer shares with a prompt by chance."""

PROMPT_TEXTS = (SYSTEM, EDGE_SYSTEM, answer_instruction("", "ko"), answer_instruction("", "en"),
                judge_instruction(""))  # fmt: skip
"""What the tiers are told; none of it is ever an answer."""


def _bare(text: str) -> str:
    return "".join(text.split()).casefold()


def copies(sentence: str, sources: Iterable[str], min_chars: int = COPIED_CHARS) -> bool:
    """Whether `sentence` holds `min_chars` consecutive characters (spaces ignored) of any
    of `sources`."""
    said = _bare(sentence)
    if len(said) < min_chars:
        return False
    for source in sources:
        text = _bare(source)
        if len(text) < min_chars:
            continue
        match = SequenceMatcher(None, said, text, autojunk=False).find_longest_match()
        if match.size >= min_chars:
            return True
    return False


def leaks(sentence: str, earlier_users: Iterable[str], question: str) -> bool:
    """Whether an answer sentence recites the prompt or repeats an earlier user's words
    (words the current `question` also holds are the user's own, and may be echoed)."""
    if copies(sentence, PROMPT_TEXTS):
        return True
    others = [u for u in earlier_users if not copies(u, [question])]
    return copies(sentence, others)
