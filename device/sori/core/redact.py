"""Secrets out of text: the one function every log line, event and API reply goes through.

    redact("POST https://bob:hunter2@hook.example/x?token=abc&room=1 failed")
    == "POST https://***@hook.example/x?token=***&room=1 failed"

It strips the userinfo of URLs (`user:pass@`), the values of query parameters and
`name: value` / `name=value` pairs whose names look secret (token, key, password, secret,
auth, signature, sig, access_token, api_key, ...), and Bearer/Basic/Digest credentials.
A name that only says where a secret lives (`token_env`, `api_key_file`) is kept, and so
are the words around a secret: a dotted name is judged by its last part (`api_key.txt: not
found` names a file), a path's last part is a file (`/etc/passwd: ...`), and a value that
only says what goes there (`Bearer TOKEN`, `key = value`, `api_key = API_KEY`) is shown.
It errs towards hiding: an innocent `key=3` in a query loses its value too.
Standard library only (floor 0), so every floor may call it.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "***"

_WORDS = frozenset(
    "token key secret password passwd pwd pass auth authorization signature sig credential "
    "credentials cookie session sessionid apikey accesstoken authtoken jwt otp".split()
)
"""Name segments that mark a secret (compared lowercased, after splitting on _ - . and case)."""
_PLACES = frozenset({"env", "file", "path", "name"})
"""A last segment that makes the name point at a secret rather than hold one."""
_PLACEHOLDERS = _WORDS | _PLACES | {"value", "text", "api", "your"}
"""Words a placeholder is made of (`TOKEN`, `API_KEY`, `value`): the format, not a secret."""

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#\"'<>]+@")
_SCHEME = re.compile(r"(?i)\b(Bearer|Basic|Digest)(\s+)(?!\*\*\*)([A-Za-z0-9._~+/=:-]+)")
_NAME = r"[A-Za-z][\w.-]*"
_QUERY = re.compile(rf"([?&;])({_NAME})=([^&#\s\"'<>\\]*)")
_PAIR_START = r"(?<![\w.?&;/\\-])"
"""A pair's name is whole: it follows no word character, dot, hyphen, query separator
or path separator (`/etc/passwd:` holds no pair named `passwd`)."""
_PAIR = re.compile(
    rf"{_PAIR_START}([\"']?)({_NAME})\1(\s*[:=]\s*)([\"']?)"
    r"(?!\*\*\*)(?!(?:Bearer|Basic|Digest)\b)([^\s\"',;&}\\]+)"
)
_INNER_PAIR = re.compile(rf"{_PAIR_START}({_NAME})[:=]")
"""A pair inside a pair's value (which holds no space or quote): its name and separator."""


def is_secret_name(name: str) -> bool:
    """Whether a parameter or header name looks like it holds a secret. A dotted name is
    judged by its last part: a config key's own name (`edge.api_key`), or a file's
    extension (`api_key.txt` is a file name, not a secret's)."""
    parts = _words(name.rpartition(".")[2])
    if not parts or parts[-1] in _PLACES:
        return False
    return any(p in _WORDS for p in parts) or "".join(parts) in _WORDS


def _words(name: str) -> list[str]:
    """The lowercased words of a name: split on _ - . spaces and camelCase."""
    return [p.lower() for p in re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", name) if p]


def _is_placeholder(value: str) -> bool:
    """Whether a value only says what goes there (`TOKEN`, `<api_key>`, `value`)."""
    words = _words(value.strip("`<>()[]{}"))
    return bool(words) and all(w in _PLACEHOLDERS for w in words)


def redact(text: str) -> str:
    """`text` with URL credentials, secret query parameters and auth headers masked."""
    if not text:
        return text
    text = _USERINFO.sub(rf"\1{MASK}@", text)
    text = _SCHEME.sub(_scheme, text)
    text = _QUERY.sub(_query, text)
    return _PAIR.sub(_pair, text)


def redact_data(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings) with `redact` applied to every string;
    values under secret-looking keys are masked whole."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            k: MASK if isinstance(k, str) and is_secret_name(k) and v else redact_data(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return value


def _scheme(found: re.Match) -> str:
    scheme, space, value = found.groups()
    if _is_placeholder(value):
        return found.group(0)
    return f"{scheme}{space}{MASK}"


def _query(found: re.Match) -> str:
    sep, name, value = found.groups()
    if not value or not is_secret_name(name) or _is_placeholder(value):
        return found.group(0)
    return f"{sep}{name}={MASK}"


def _pair(found: re.Match) -> str:
    quote, name, sep, vquote, value = found.groups()
    if not is_secret_name(name) or _is_placeholder(value):
        kept = found.group(0)[: found.start(5) - found.start()]
        return kept + _pair_within(value)
    return f"{quote}{name}{quote}{sep}{vquote}{MASK}"


def _pair_within(value: str) -> str:
    """A value kept, with the first secret pair inside it masked to its end: in
    "A: password=hunter2" the secret pair is the value of "A". One pass over the value,
    so a chain like "a=a=a=..." costs its length, not its square."""
    for found in _INNER_PAIR.finditer(value):
        if is_secret_name(found.group(1)):
            rest = value[found.end() :]
            if rest and not rest.startswith(MASK) and not _is_placeholder(rest):
                return f"{value[: found.end()]}{MASK}"
    return value
