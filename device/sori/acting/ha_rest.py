"""A client of Home Assistant's REST API, shared by the stages that talk to it (the
action handler, the state source): the base URL checked, and the long-lived access token
read from the environment (`$SORI_HA_TOKEN` by default), never from the config file, and
sent to that URL only (redirects are not followed)."""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

from sori.core.errors import ConfigError, DependencyError


def rest_client(url: str, token_env: str, timeout_s: float) -> tuple[ModuleType, Any]:
    """(the httpx module, for its errors; an `httpx.AsyncClient` on `url` that sends the
    token from `$token_env`), or a ConfigError / DependencyError naming the fix."""
    if not url:
        raise ConfigError("home_assistant.url is empty; set it to http://HOST:8123")
    token = os.environ.get(token_env, "")
    if not token:
        raise ConfigError(
            f"home_assistant.token_env: ${token_env} is not set; export a long-lived "
            "access token (HA profile → Security) in the service's environment"
        )
    try:
        import httpx
    except ImportError:
        raise DependencyError("Home Assistant needs httpx; run 'pip install httpx'") from None
    client = httpx.AsyncClient(
        base_url=url.rstrip("/"),
        headers={"Authorization": f"Bearer {token}"},
        timeout=timeout_s,
        follow_redirects=False,  # a redirect is answered as it is: the token goes nowhere else
    )
    return httpx, client
