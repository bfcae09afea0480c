"""An HTTP webhook: POST each command as JSON to one URL."""

from __future__ import annotations

import logging

from sori.acting.actions.base import Command, Result
from sori.core.errors import BackendError, DependencyError
from sori.core.redact import redact

log = logging.getLogger(__name__)


def import_httpx():  # noqa: ANN202 - the httpx module
    try:
        import httpx
    except ImportError:
        raise DependencyError("webhooks need httpx; run 'pip install httpx'") from None
    return httpx


class WebhookHandler:
    """POSTs `{"intent", "entity_id", "domain", "slots", "text"}` to `url`."""

    name = "webhook"

    def __init__(self, url: str, headers: dict[str, str] | None = None, timeout_s: float = 3.0):
        self._httpx = import_httpx()
        self.url = url
        self.shown_url = redact(url)
        """The URL as errors and details show it: no user:pass@, no ?token=."""
        self._client = self._httpx.AsyncClient(headers=headers or {}, timeout=timeout_s)

    async def handle(self, command: Command) -> Result:
        body = {
            "intent": command.intent,
            "entity_id": command.entity_id,
            "domain": command.domain,
            "slots": command.slots,
            "text": command.text,
        }
        try:
            reply = await self._client.post(self.url, json=body)
        except self._httpx.HTTPError as exc:
            raise BackendError(f"webhook {self.shown_url} failed: {redact(repr(exc))}") from None
        if reply.status_code >= 300:
            raise BackendError(f"webhook {self.shown_url} answered {reply.status_code}")
        return Result(detail=f"POST {self.shown_url} {reply.status_code}")

    async def close(self) -> None:
        await self._client.aclose()
