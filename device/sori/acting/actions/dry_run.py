"""The log-only handler: says what it would do and changes nothing."""

from __future__ import annotations

import logging

from sori.acting.actions.base import Command, Result

log = logging.getLogger(__name__)


class DryRunHandler:
    """Logs each command at INFO; the default for devices without a handler."""

    name = "dry_run"

    def __init__(self) -> None:
        self.seen: list[Command] = []
        """Every command handled, oldest first (bounded to the last 100)."""

    async def handle(self, command: Command) -> Result:
        self.seen = [*self.seen[-99:], command]
        detail = f"dry run: {command.intent} {command.entity_id} {command.settings()}".rstrip()
        log.info("%s", detail)
        return Result(detail=detail)

    async def close(self) -> None:
        return None
