"""Prompt text shared by the tiers. Pure strings; the system part stays the same across turns
so llama.cpp can keep its evaluation cached (only the new turn is evaluated)."""

from __future__ import annotations

_LANGUAGE_NAMES = {"ko": "Korean (한국어)", "en": "English"}

SYSTEM = (
    "You are Sori (소리), a voice assistant on a smart speaker at home. "
    "Everything you write is read aloud: plain sentences, no lists, no markdown, no emoji."
)

EDGE_SYSTEM = (
    SYSTEM + " Answer in the user's language. Keep answers short enough to listen to: "
    "a few sentences unless the user asks for more."
)


NOT_SURE = {"ko": "잘 모르겠어요.", "en": "I'm not sure."}
"""Said instead of an answer that only recited the instructions."""


def language_name(language: str) -> str:
    return _LANGUAGE_NAMES.get(language, language)


def answer_instruction(text: str, language: str) -> str:
    """The user turn for a short spoken answer from the local model."""
    return f"{text}\n\n(Answer in {language_name(language)}, in one or two short spoken sentences.)"


def judge_instruction(text: str) -> str:
    """The user turn asking the local model to map text onto an intent (constrained JSON)."""
    return (
        "Map the request below onto one of the intents, with its slots, as JSON. If no intent "
        'fits, answer {"intent": "none", "needs": "answer"} when you can reply in a sentence '
        'or two, or {"intent": "none", "needs": "reasoning"} when it needs several steps, '
        "planning, knowledge you lack or a long answer.\n"
        f"Request: {text}"
    )
