"""A sentence of several commands cut into commands that stand on their own:
"거실 불 켜고 에어컨 꺼 줘" → "거실 불 켜", "에어컨 꺼 줘".

Korean joins commands with the connective ending -고 (켜고, 끄고, 닫고, 정지하고) or the
word 그리고. A part that ended in -고 is given the request form its verb takes at the end
of a sentence (끄고 → 꺼, 닫고 → 닫아, 올리고 → 올려, 하고 → 해), so each part can be
matched exactly as if it had been said alone. Whether a part is a command is the
matcher's call, not this module's: splitting only proposes.

English joins them with "and" or "then" before a verb ("turn on the light and close the
curtains"); an "and" between nouns ("the kitchen and living room lights") is no cut.

Not a connective: a first word (창고, 냉장고 are nouns), a -고 followed by an auxiliary
(켜고 싶어, 켜고 있어: one wish or state, not two commands), a self-correction (안방
말고 거실 불, 안방 불 아니고 주방 불: one command on the last-named target, read by
`sori.understanding.intents.normalizer`).

Targets joined by 하고, 이랑 or 랑 share the verb after them ("거실 불하고 안방 불 꺼줘",
"거실이랑 안방 불 꺼줘"): such a piece carries its words in `Piece.shared`, and the
caller (`sori.understanding.multi_command`) lends it the verb of the command after it.
X하고 may also be a verb (정지하고): the piece proposes both readings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sori.core.hangul import is_hangul
from sori.understanding.intents.korean import request_form
from sori.understanding.intents.normalizer import CORRECTIONS

CONNECTIVE_WORDS = frozenset({"그리고", "그다음", "그다음에", "그리고나서"})
"""Words that only join two commands; dropped."""

AUXILIARY_STARTS = ("싶", "있", "계", "말", "나면", "보니", "해도", "싶어", "갈게", "올게")
"""A -고 followed by a word starting so is one predicate (켜고 싶어, 켜고 있어), not two."""

NOT_JOINS = frozenset({"노랑", "파랑", "사랑", "자랑"})
"""Words ending in 랑 that are no joining particle (colours are light settings)."""

CORRECTING = ("말고", "아니고")
"""-고 words that correct ("안방 말고 거실 불 꺼 줘"), never join two commands."""

_AFTER = frozenset({"나서", "나서는", "난", "난뒤", "난후"})
"""Words after a -고 that only say "after that" (켜고 나서 ...); dropped with it."""

ENGLISH_JOINS = frozenset({"and", "then"})
"""English words that join two commands when a verb follows."""

ENGLISH_VERBS = frozenset(
    {"turn", "switch", "set", "open", "close", "shut", "lock", "unlock", "start", "stop",
     "pause", "resume", "dim", "raise", "lower", "make", "put", "play", "cancel"}
)  # fmt: skip
"""Verbs an English command starts with."""

_PUNCTUATION = re.compile(r"[,.!?;·…]+")


@dataclass(frozen=True, slots=True)
class Piece:
    """One command of a sentence of several."""

    text: str
    """The command as it can be matched alone ("거실 불 켜")."""
    said: str
    """The words as the user said them ("거실 불 켜고")."""
    shared: str = ""
    """When the piece may be a target joined to the next command by 하고/이랑/랑, its words
    without the particle ("거실 불하고" → "거실 불", "거실이랑" → "거실"): it takes the verb
    of the command after it. Empty for a command of its own."""


def _is_connective(word: str, following: str | None) -> bool:
    if len(word) < 2 or not word.endswith("고") or not is_hangul(word[-2]):
        return False
    if word.endswith(CORRECTING):
        return False  # 말고, 아니고: what follows replaces what came before
    return following is not None and not following.startswith(AUXILIARY_STARTS)


def _joined_stem(word: str, following: str | None) -> str | None:
    """The noun of "거실이랑" / "티비랑" (a target joined to what follows), else None."""
    if following is None or word in NOT_JOINS or not word.endswith("랑"):
        return None
    stem = word[:-2] if word.endswith("이랑") and len(word) > 2 else word[:-1]
    return stem if stem and is_hangul(stem[-1]) else None


def continues(text: str) -> bool:
    """True when `text` ends in a connective, a correction marker, or already joins
    commands or targets: the speaker has more to say ("거실 불 켜고", "거실 불 켜 그리고",
    "거실이랑", "거실 불 꺼 줘 아니", "turn on the light and"), so it is no single command
    to act on before the final transcript."""
    words = _PUNCTUATION.sub(" ", text).split()
    if not words:
        return False
    last = words[-1]
    if last in CONNECTIVE_WORDS or last.lower() in ENGLISH_JOINS or last in _BARE_ENDINGS:
        return True
    if len(words) > 1 and _is_connective(last, ""):  # 켜고, 불하고; a first word is a noun
        return True
    if last in CORRECTIONS or last.endswith(CORRECTING):  # "거실 불 꺼 줘 아니": a correction
        return True
    return _joined_stem(last, "") is not None or len(split_commands(text)) > 1


_BARE_ENDINGS = frozenset({"고", "하고", "랑", "이랑"})
"""A connective a recognizer wrote as a word of its own ("거실 불 켜 고")."""


def split_commands(text: str) -> list[Piece]:
    """The commands of `text` in the order said; one piece when it holds one command."""
    words = _PUNCTUATION.sub(" ", text).split()
    pieces: list[Piece] = []
    current: list[str] = []
    said: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        following = words[i + 1] if i + 1 < len(words) else None
        if word.lower() in ENGLISH_JOINS and following is not None:
            if following.lower() == "then" and i + 2 < len(words):
                following = words[i + 2]
                i += 1
            if current and following.lower() in ENGLISH_VERBS:
                pieces.append(Piece(" ".join(current), " ".join(said)))
                current, said = [], []
            else:
                current.append(word)
                said.append(word)
        elif word in CONNECTIVE_WORDS and current:
            pieces.append(Piece(" ".join(current), " ".join(said)))
            current, said = [], []
        elif (stem := _joined_stem(word, following)) is not None:
            nouns = " ".join([*current, stem])
            pieces.append(Piece(nouns, " ".join([*said, word]), shared=nouns))
            current, said = [], []
        elif current and _is_connective(word, following):
            shared = " ".join([*current, word[:-2]]).strip() if word.endswith("하고") else ""
            current.append(request_form(word[:-1]))
            said.append(word)
            pieces.append(Piece(" ".join(current), " ".join(said), shared))
            current, said = [], []
            while i + 1 < len(words) and words[i + 1] in _AFTER:
                i += 1
        else:
            current.append(word)
            said.append(word)
        i += 1
    if current:
        pieces.append(Piece(" ".join(current), " ".join(said)))
    return pieces
