"""What a recognizer's output says, without its own marks: vosk's Korean model writes a
number read digit by digit as `[3]`, a number word as `(천)`, and a pause as `/`.

Pure; standard library only. The hearing pipeline applies it to every final transcript,
so the microphone, `sori replay` and Wyoming's `transcribe` hand on the same plain text.
"""

from __future__ import annotations

import re

_BRACKETED = re.compile(r"\[([^\[\]\s]*)\]|\(([^()\s]*)\)")
_MARKS = re.compile(r"(?<!\S)[/|](?!\S)")


def spoken_text(text: str) -> str:
    """`text` with the recognizer's marks taken out: "[3] 월" → "3 월", "(천)" → "천",
    a lone "/" dropped; whitespace collapsed."""
    text = _BRACKETED.sub(lambda m: m.group(1) or m.group(2) or "", text)
    text = _MARKS.sub(" ", text)
    return " ".join(text.split())
