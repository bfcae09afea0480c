"""What a turn of text means, without acting or thinking: the intent and slots it
commits and the reply it gives without a model, as every text front door reports it
(`sori intent`, `sori ask`, Wyoming `recognize`); `Turns` (`turns.py`) runs the same
steps and then acts.

Turn logic (floor 3): the presets (several commands apart, as the daemon holds them),
then the sentence as several commands, then the screen (`sori.understanding.screening`).
"""

from __future__ import annotations

from typing import Any

from sori.understanding.answering import answers_from_state
from sori.understanding.multi_command import plan
from sori.understanding.screening import Screened, screen


def understood(understanding: Any, text: str) -> dict[str, Any]:
    """What a turn of `text` means, without acting or thinking, as every text front door
    reports it (`sori intent`, Wyoming `recognize`): the intent and slots a turn commits
    (several commands as "A+B" with their parts, and `replies`, one per part), and the
    reply it gives without acting: the preset's response, or the screen's ("세탁기는
    연결돼 있지 않아요", "잘 못 들었어요"). `intent` None: the language model would get
    it (`reply` empty)."""
    home = getattr(understanding, "home", None)
    language = getattr(understanding, "language", "ko") or "ko"
    found = understanding.match(text)
    screened = screen(home, text, language)
    if found is not None and missing(screened):  # the whole command is for nothing here
        return {"intent": None, "slots": {}, "confidence": 0.0, "response": screened.reply}
    if found is not None:
        return {"intent": found.intent, "slots": dict(found.slots),
                "confidence": float(found.confidence),
                "response": _said(home, text, found, language)}  # fmt: skip
    several = plan(understanding, text)
    if several is not None and not several.unmatched and several.parts:
        parts = [
            {"text": p.piece.said, "intent": p.match.intent, "slots": dict(p.match.slots)}
            for p in several.parts
        ]  # fmt: skip
        said = [_said(home, p.piece.said, p.match, language) for p in several.parts]
        return {"intent": "+".join(p["intent"] for p in parts), "slots": {"parts": parts},
                "confidence": min(float(p.match.confidence) for p in several.parts),
                "response": " ".join(s for s in said if s), "replies": said}  # fmt: skip
    reply = screened.reply if screened is not None else ""
    return {"intent": None, "slots": {}, "confidence": 0.0, "response": reply}


async def answered(found: dict[str, Any], answerer: Any) -> dict[str, Any]:
    """`found` (from `understood`) with its questions answered from the home's state as
    the daemon answers them (`sori.understanding.answering.Answerer`: "거실은 지금
    23.5도예요", or the honest "날씨를 알려 줄 곳이 설정돼 있지 않아요")."""
    parts = found["slots"].get("parts")
    if parts:
        replies = [
            await answerer.answer(p["intent"], p["slots"]) if answerer.answers(p["intent"])
            else said
            for p, said in zip(parts, found["replies"], strict=True)
        ]  # fmt: skip
        return {**found, "replies": replies, "response": " ".join(r for r in replies if r)}
    if found["intent"] is None or not answerer.answers(found["intent"]):
        return found
    return {**found, "response": await answerer.answer(found["intent"], found["slots"])}


def asks(found: dict[str, Any]) -> bool:
    """Whether `found` holds a question answered from the home's state."""
    intents = [p["intent"] for p in found["slots"].get("parts", ())] or [found["intent"]]
    return any(i is not None and answers_from_state(i) for i in intents)


def _said(home: Any, text: str, found: Any, language: str) -> str:
    """One command's reply without acting: the missing device named, else its response."""
    screened = screen(home, text, language)
    return screened.reply if missing(screened) else found.response or ""


def missing(screened: Screened | None) -> bool:
    """Whether the screen named a device the home lacks."""
    return screened is not None and screened.kind == "missing_device"
