"""Home Assistant's conversation API as a tier (`POST /api/conversation/process`): a turn
no preset matched and the local model did not map is given to HA's agent, between the
local model and the edge. What HA understood, it has already carried out; its spoken
answer (response.speech.plain.speech) is what Sori says, and the entities it acted on
(response.data.success) are logged. A turn HA did not understand (response_type "error",
e.g. no_intent_match) or an HA that cannot be reached goes on to the next tier.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp

from sori.thinking.base import Ask, HomeAnswer

log = logging.getLogger(__name__)


class HaConversation:
    """Client of one Home Assistant's conversation agent."""

    def __init__(
        self,
        url: str,
        token: str,
        agent_id: str = "",
        language: str = "",
        timeout_s: float = 5.0,
    ) -> None:
        self.endpoint = url.rstrip("/") + "/api/conversation/process"
        self.token = token
        self.agent_id = agent_id
        self.language = language
        self.timeout_s = timeout_s
        self.conversation_id: str | None = None
        """HA's id of the running conversation, so its agent keeps the context."""
        self._session: aiohttp.ClientSession | None = None

    async def converse(self, ask: Ask) -> HomeAnswer | None:
        body: dict[str, Any] = {"text": ask.text, "language": self.language or ask.language}
        if self.agent_id:
            body["agent_id"] = self.agent_id
        if self.conversation_id:
            body["conversation_id"] = self.conversation_id
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout_s)
            )
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            async with self._session.post(self.endpoint, json=body, headers=headers) as reply:
                if reply.status in (401, 403):
                    log.warning(
                        "Home Assistant refused the token (%d): check the token variable",
                        reply.status,
                    )
                    return None
                reply.raise_for_status()
                data = await reply.json()
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            log.warning("Home Assistant conversation unavailable: %s", str(exc) or type(exc))
            return None
        return self._answer(data)

    def _answer(self, data: Any) -> HomeAnswer | None:
        if not isinstance(data, dict) or not isinstance(data.get("response"), dict):
            log.warning("Home Assistant answered in a shape not known: %.120r", data)
            return None
        self.conversation_id = data.get("conversation_id") or self.conversation_id
        response = data["response"]
        kind = response.get("response_type", "")
        speech = (((response.get("speech") or {}).get("plain") or {}).get("speech")) or ""
        if kind not in ("action_done", "query_answer") or not speech:
            code = (response.get("data") or {}).get("code", kind)
            log.info("Home Assistant did not understand (%s): %s", code, speech)
            return None
        found = response.get("data") or {}
        done = tuple(_ids(found.get("success")))
        failed = tuple(_ids(found.get("failed")))
        if done or failed:
            log.info("Home Assistant acted: done %s; failed %s", list(done), list(failed))
        return HomeAnswer(speech.strip(), done, failed, kind)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _ids(targets: Any) -> list[str]:
    """Entity ids (else names) of response.data.success / failed."""
    if not isinstance(targets, list):
        return []
    return [str(t.get("id") or t.get("name")) for t in targets if isinstance(t, dict)]
