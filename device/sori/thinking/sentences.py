"""Token stream → sentences, so speech can start on the first one. Pure; standard library only.

Boundaries, Korean and English:
- `. ! ? …` followed by whitespace, `。！？` and line breaks always; closing quotes and
  brackets stay with their sentence ("그가 "네."라고" is one).
- A dot is not a boundary inside numbers (3.5), after common abbreviations (Dr., e.g.),
  after single-letter initials (J. Smith) or after a bare list number ("1. ").
- Korean sentence-final endings (습니다, 해요, …) end a sentence even without punctuation when
  followed by a space, once the sentence is long enough to be sure.
- A run-on longer than `max_chars` is cut at its last comma or space.

A boundary is only decided when the character after it has arrived (or at `flush`).
"""

from __future__ import annotations

import re

_TERMINATORS = ".!?…"
_ALWAYS = "。！？\n"
_CLOSERS = "\"')]}」』’”》〉"
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e a.m p.m no fig approx dept inc ltd co".split()
)
_KOREAN_ENDINGS = re.compile(
    r"(?:습니다|습니까|니다|어요|아요|에요|예요|해요|세요|네요|군요|지요|죠|래요|대요|까요|거든요)$"
)
_KOREAN_MIN_CHARS = 8
_HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
_LATIN = re.compile(r"[A-Za-z]")


def detect_language(text: str, default: str = "ko") -> str:
    """ "ko" when the text has Hangul, "en" when it has Latin letters only, else `default`."""
    if _HANGUL.search(text):
        return "ko"
    if _LATIN.search(text):
        return "en"
    return default


class SentenceSplitter:
    """Feed text as it streams in; get back each sentence once it is complete."""

    def __init__(self, max_chars: int = 160) -> None:
        self._buf = ""
        self._max_chars = max_chars

    def feed(self, text: str) -> list[str]:
        """Add streamed text; returns the sentences it completed, in order."""
        self._buf += text
        return self._drain(final=False)

    def flush(self) -> list[str]:
        """The stream ended: whatever remains is the last sentence."""
        out = self._drain(final=True)
        rest = self._buf.strip()
        self._buf = ""
        if rest:
            out.append(rest)
        return out

    def _drain(self, final: bool) -> list[str]:
        out = []
        while True:
            cut = _find_boundary(self._buf, final)
            if cut is None and len(self._buf) > self._max_chars:
                cut = _run_on_cut(self._buf, self._max_chars)
            if cut is None:
                return out
            sentence, self._buf = self._buf[:cut].strip(), self._buf[cut:].lstrip()
            if sentence:
                out.append(sentence)


def _find_boundary(buf: str, final: bool) -> int | None:
    """Index just past the first complete sentence in `buf`, or None if there is none yet."""
    i = 0
    n = len(buf)
    while i < n:
        c = buf[i]
        if c in _ALWAYS:
            return _extend(buf, i + 1)
        if c in _TERMINATORS:
            end = _extend(buf, i + 1)
            if end == n:
                if not final:
                    return None  # the next character decides
                return end
            if buf[end].isspace() and not _is_false_stop(buf, i):
                return end
            i = end
            continue
        if c == "~" and i > 0 and _HANGUL.match(buf[i - 1]):
            end = _extend(buf, i + 1)
            if end < n and buf[end].isspace():
                return end
        if c == " " and i >= _KOREAN_MIN_CHARS and _KOREAN_ENDINGS.search(buf[:i]):
            start = max(buf.rfind(x, 0, i) for x in (".", "!", "?", "\n", "。"))
            if i - (start + 1) >= _KOREAN_MIN_CHARS:
                return i
        i += 1
    return None


def _extend(buf: str, j: int) -> int:
    """Move past further terminators and closing quotes or brackets."""
    while j < len(buf) and (buf[j] in _TERMINATORS or buf[j] in _CLOSERS or buf[j] in _ALWAYS):
        if buf[j] == "\n":
            return j + 1
        j += 1
    return j


def _is_false_stop(buf: str, i: int) -> bool:
    """True when the dot at `i` ends an abbreviation, an initial or a list number."""
    if buf[i] != ".":
        return False
    start = i
    while start > 0 and not buf[start - 1].isspace():
        start -= 1
    word = buf[start:i]
    if word.lower().strip("(\"'") in _ABBREVIATIONS:
        return True
    if len(word) == 1 and word.isupper() and word.isascii():
        return True  # an initial: "J. Smith"
    before = buf[:start].strip()
    return word.isdigit() and (not before or before[-1] in ".!?\n:")


def _run_on_cut(buf: str, max_chars: int) -> int:
    """Where to cut a sentence that is too long: after its last comma, else its last space."""
    head = buf[:max_chars]
    for sep in (", ", "，", "、", "; ", " "):
        k = head.rfind(sep)
        if k > max_chars // 3:
            return k + len(sep)
    return max_chars
