"""Who may use the HTTP API: the token, the Host and Origin allow-lists, the rules.

The rules (see README "Security"):
- A token comes from `$SORI_API_TOKEN` (`http.token_env`) or `http.token_file` (chmod 600).
- Bound beyond loopback, every endpoint but /health needs `Authorization: Bearer TOKEN`,
  and such a bind without a token is refused at start.
- State-changing requests (POST) need it always, on loopback too: any local process or
  user could otherwise unlock the door. With none configured, `sori run` makes one in
  `DEFAULT_TOKEN_FILE` (`ensure_token`).
- Every request's Host must be one this API answers to (DNS rebinding sends the
  attacker's name); an Origin header, when present, must be allowed (a web page's fetch
  or form post carries its own origin).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import secrets
import stat
from dataclasses import dataclass, replace
from pathlib import Path

from sori.core.config.sections import HttpConfig
from sori.core.errors import ConfigError
from sori.core.files import replace_file

log = logging.getLogger(__name__)

MIN_TOKEN_CHARS = 16
DEFAULT_TOKEN_FILE = "~/.config/sori/api-token"
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
        # raw non-ASCII bytes arrive surrogate-escaped; they never match, never raise
        given_bytes = given.strip().encode("utf-8", "surrogateescape")
        return hmac.compare_digest(given_bytes, self.token.encode())

    def needs_token(self, path: str, changes_state: bool) -> bool:
        """Whether a request must carry the token."""
        return path != "/health" and (changes_state or not self.loopback)

    def host_ok(self, host: str | None) -> bool:
        return bool(host) and host.strip().lower() in self.hosts

    def origin_ok(self, origin: str | None) -> bool:
        return origin is None or origin.strip().lower().rstrip("/") in self.origins


def split_bind(bind: str, said: str | None = None) -> tuple[str, int]:
    """("HOST", PORT) of an http.bind value such as "127.0.0.1:8377" or "[::1]:8377".
    `said` is how the user gave it, for messages (default: the config key)."""
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        said = said or f"http.bind = {bind!r}"
        raise ConfigError(f"{said}: write HOST:PORT, e.g. 127.0.0.1:8377")
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


def write_token(path: Path, force: bool = False) -> str:
    """A new token in `path`, created with mode 0600 (its folder 0700 when made here)."""
    if path.exists() and not force:
        raise ConfigError(f"{path} exists; keep using it, or pass --force for a new token")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    replace_file(path, token + "\n", private=True)
    return token


def ensure_token(config: HttpConfig) -> str | None:
    """The configured token; with none configured, the one in DEFAULT_TOKEN_FILE, made there
    on first use. None (state-changing requests are then refused) when it cannot be made."""
    token = load_token(config)
    if token is not None:
        return token
    path = Path(DEFAULT_TOKEN_FILE).expanduser()
    try:
        if not path.exists():
            write_token(path)
            log.info("made an API token in %s (mode 0600)", path)
    except OSError as exc:
        log.warning(
            "no API token, and none could be made in %s (%s): POST /say is refused; %s",
            path, exc.strerror or exc, SETUP_HINT,
        )  # fmt: skip
        return None
    return load_token(replace(config, token_file=str(path)))


def build_access(
    config: HttpConfig, host: str, port: int, token: str | None, said: str | None = None
) -> Access:
    """The rules for an API bound to host:port; refuses a non-loopback bind without a token.
    `said` is how the user gave the address, for messages (default: the config key)."""
    loopback = is_loopback(host)
    if not loopback and token is None:
        said = said or f"http.bind = {config.bind!r}"
        raise ConfigError(
            f"{said} reaches beyond this machine but no API token is "
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
