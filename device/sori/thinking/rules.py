"""Explicit escalation rules: which questions go to the edge without asking the local model.

A turn escalates when it asks for planning or multi-step reasoning (deep: the edge may
think), holds several questions, asks for knowledge or length, or is simply long. Korean
words match as substrings; English words at a word start ("plan" is not in "airplane").
Pure; standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

ESCALATE_WORDS = (
    # Korean: explanations, knowledge, long or written output.
    "설명해",
    "자세히",
    "요약",
    "번역",
    "비교",
    "차이",
    "역사",
    "이유가",
    "원리",
    "추천해",
    "작성해",
    "써 줘",
    "써줘",
    # English.
    "explain",
    "in detail",
    "summarize",
    "summary",
    "translate",
    "compare",
    "difference between",
    "history of",
    "recommend",
    "write ",
    "essay",
)
"""Words that ask for knowledge or length beyond a small model."""

DEEP_WORDS = (
    "계획",
    "단계별",
    "차근차근",
    "일정 짜",
    "짜 줘",
    "짜줘",
    "증명",
    "계산해",
    "전략",
    "장단점",
    "step by step",
    "plan ",
    "planning",
    "itinerary",
    "prove",
    "solve",
    "calculate",
    "strategy",
    "pros and cons",
    "reason through",
)
"""Words that ask for planning or multi-step reasoning (thinking may be enabled)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """Why the explicit rules escalate a turn."""

    reason: str
    """E.g. "asks for planning ('계획')"."""
    deep: bool
    """Planning or multi-step reasoning: the edge may think."""


def escalation_rule(
    text: str,
    escalate_words: Sequence[str] = (),
    deep_words: Sequence[str] = (),
    min_chars: int = 90,
) -> Rule | None:
    """The first explicit rule that sends `text` to the edge, or None.

    `escalate_words` and `deep_words` add to the built-in lists; `min_chars` is the length
    from which a question counts as long.
    """
    lowered = f" {text.lower()} "
    for word in (*DEEP_WORDS, *deep_words):
        if _contains(lowered, word):
            return Rule(f"asks for planning or multi-step reasoning ({word.strip()!r})", True)
    if text.count("?") + text.count("？") >= 2:
        return Rule("several questions in one turn", True)
    for word in (*ESCALATE_WORDS, *escalate_words):
        if _contains(lowered, word):
            return Rule(f"asks for knowledge or length ({word.strip()!r})", False)
    if len(text.strip()) >= min_chars:
        return Rule(f"long question ({len(text.strip())} ≥ {min_chars} chars)", False)
    return None


def _contains(lowered: str, word: str) -> bool:
    word = word.lower()
    if word.isascii() and word.strip():
        # English words start at a word boundary ("plan" is not in "airplane").
        return re.search(r"(?<![a-z])" + re.escape(word), lowered) is not None
    return word in lowered
