"""Who may use the HTTP API: the token, the Host and Origin allow-lists, the rules.

The rules (see README "Security"):
- A token comes from `$SORI_API_TOKEN` (`http.token_env`) or `http.token_file` (chmod 600).
- Bound beyond loopback, every endpoint but /health needs `Authorization: Bearer TOKEN`,
  and such a bind without a token is refused at start.
- With a token configured, state-changing requests (POST) need it wherever bound.
- Every request's Host must be one this API answers to (DNS rebinding sends the
  attacker's name); an Origin header, when present, must be allowed (a web page's fetch
  or form post carries its own origin).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from sori.config.sections import HttpConfig
from sori.errors import ConfigError

MIN_TOKEN_CHARS = 16
SETUP_HINT = (
    "run 'sori setup' to make one (it prints the [http] token_file line to add), "
    "or export SORI_API_TOKEN"
)


@dataclass(frozen=True)
class Access:
    """The access rules of one running API."""

    token: str | None
    """The API token; None when none is configured."""
    loopback: bool
    """Bound to a loopback address only (same-machine clients)."""
    hosts: frozenset[str]
    """Host header values served, lowercased, each with and without the port."""
    origins: frozenset[str]
    """Origin header values accepted, lowercased, without a trailing slash."""

    def token_ok(self, authorization: str | None) -> bool:
        """Whether an Authorization header carries this API's token (constant time)."""
        if self.token is None or not authorization:
            return False
        scheme, _, given = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.strip().encode(), self.token.encode())

    def needs_token(self, path: str, changes_state: bool) -> bool:
        """Whether a request must carry the token."""
        if path == "/health":
            return False
        return not self.loopback or (changes_state and self.token is not None)

    def host_ok(self, host: str | None) -> bool:
        return bool(host) and host.strip().lower() in self.hosts

    def origin_ok(self, origin: str | None) -> bool:
        return origin is None or origin.strip().lower().rstrip("/") in self.origins


def split_bind(bind: str) -> tuple[str, int]:
    """("HOST", PORT) of an http.bind value such as "127.0.0.1:8377" or "[::1]:8377"."""
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"http.bind = {bind!r}: write HOST:PORT, e.g. 127.0.0.1:8377")
    return host.strip("[]") or "127.0.0.1", int(port)


def is_loopback(host: str) -> bool:
    """Whether a bind host reaches this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name that may resolve to anything


def load_token(config: HttpConfig, environ: dict[str, str] | None = None) -> str | None:
    """The API token from the environment variable or the token file; None when neither
    is configured. Refuses a token file others can read and tokens too short to guess."""
    environ = os.environ if environ is None else environ
    token = environ.get(config.token_env, "").strip() if config.token_env else ""
    where = f"${config.token_env}"
    if not token and config.token_file:
        path = Path(config.token_file).expanduser()
        where = f"http.token_file {path}"
        try:
            mode = path.stat().st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ConfigError(
                    f"{where}: mode {stat.S_IMODE(mode):o} lets other users read or change "
                    f"the token; run 'chmod 600 {path}'"
                )
            token = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise ConfigError(f"{where} does not exist; {SETUP_HINT}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{where}: cannot read it ({exc})") from None
        if not token:
            raise ConfigError(f"{where} is empty; {SETUP_HINT}")
    if not token:
        return None
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() or not c.isprintable() for c in token):
        raise ConfigError(
            f"{where}: the token must be at least {MIN_TOKEN_CHARS} printable characters "
            f"without spaces; {SETUP_HINT}"
        )
    return token


def build_access(config: HttpConfig, host: str, port: int, token: str | None) -> Access:
    """The rules for an API bound to host:port; refuses a non-loopback bind without a token."""
    loopback = is_loopback(host)
    if not loopback and token is None:
        raise ConfigError(
            f"http.bind = {config.bind!r} reaches beyond this machine but no API token is "
            f"set: anyone on the network could drive the speaker. {SETUP_HINT}; "
            "or bind to 127.0.0.1"
        )
    names = ["localhost", "127.0.0.1", "[::1]", *config.allowed_hosts]
    if host not in ("0.0.0.0", "::"):
        names.append(f"[{host}]" if ":" in host else host)
    hosts = set()
    for name in (n.strip().lower() for n in names if n.strip()):
        if name.rpartition(":")[2].isdigit() and not name.endswith("]"):
            hosts.add(name)  # HOST:PORT, that port only
        else:
            hosts.update({name, f"{name}:{port}"})
    origins = frozenset(o.strip().lower().rstrip("/") for o in config.allowed_origins)
    return Access(token, loopback, frozenset(hosts), origins)
